/**
 * `npm run bench -- --instructions --http`: instructions per request of the SERVER over real HTTP,
 * each row beside the bare SDK transport of its era (issue 28).
 *
 * Per row, Node binary and run: the server (http-count-server.ts) runs under
 * `valgrind --tool=callgrind --dump-before=getegid` with the V8 flags of instructions.ts, and a real
 * SDK client in another process (http-count-client.ts; one keep-alive connection, one 2025-era
 * session or 2026-07-28 stateless requests) makes `warmup` calls, then 1 000 more after a scavenge;
 * the server then marks the window (`start`: scavenge, callgrind on, `process.getegid()`), the client
 * makes exactly `n` sequential `tools/call`, and the server closes it (`end`: `process.getegid()`).
 * Callgrind's `<out>.2` holds the window alone. A native run per row (no valgrind, `--expose-gc`
 * only) gives the server's CPU and the round trip per request beside it.
 *
 * The window is marked by SIGUSR2 signals (a signal handler's run: a constant, the same in every row).
 * The control channel uses no stream: reading commands from stdin deoptimized the stream code the
 * HTTP sockets share, and the window then held its recompilation.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ensureTools, fmt, mean, medianOf, node24, pool, V8_FLAGS, versionOf } from './instructions.js';

const here = dirname(fileURLToPath(import.meta.url));
const benchRoot = resolve(here, '..');

/** The rows, in the report's order; each era's `-sdk` row is the reference of its era. */
/**
 * Eras of a row's requests: `2025` a `tools/call` on one open 2025-era session, `2026` a stateless
 * 2026-07-28 `tools/call`, `init` a 2025-era session opened and ended (`initialize`, then `DELETE`).
 */
export type HttpEra = '2025' | '2026' | 'init';

export const HTTP_ROWS: Readonly<Record<string, { era: HttpEra; server: string; label: string }>> = {
  '2025-sdk': {
    era: '2025',
    server: 'sdk',
    label: '2025 · bare SDK 1.x `StreamableHTTPServerTransport` (node, SSE responses)',
  },
  '2025-sdk-json': { era: '2025', server: 'sdk-json', label: '2025 · the same, `enableJsonResponse: true`' },
  '2025-front': { era: '2025', server: 'front', label: '2025 · the front, no middleware' },
  '2025-front-core': { era: '2025', server: 'front-core', label: '2025 · the front + core (`tether(server, [])`)' },
  '2025-front-full-noctx': {
    era: '2025',
    server: 'front-full-noctx',
    label: '2025 · the front + all six, `{ asyncContext: false }`',
  },
  '2025-front-full': { era: '2025', server: 'front-full', label: '2025 · the front + all six, defaults' },
  '2026-sdk': {
    era: '2026',
    server: 'sdk2',
    label: '2026-07-28 · bare SDK 2.x `createMcpHandler` (`toNodeHandler` of `@modelcontextprotocol/node`)',
  },
  '2026-front': { era: '2026', server: 'front', label: '2026-07-28 · the front, no middleware' },
  '2026-front-core': { era: '2026', server: 'front-core', label: '2026-07-28 · the front + core' },
  '2026-front-core-table': {
    era: '2026',
    server: 'front-core-table',
    label: '2026-07-28 · the front + core, tools from a `toolTable`',
  },
  '2026-front-full-noctx': {
    era: '2026',
    server: 'front-full-noctx',
    label: '2026-07-28 · the front + all six, `{ asyncContext: false }`',
  },
  '2026-front-full': { era: '2026', server: 'front-full', label: '2026-07-28 · the front + all six, defaults' },
  '2026-preset': {
    era: '2026',
    server: 'preset',
    label: '2026-07-28 · the preset (`createApp` of @mcp-tether/server)',
  },
  'init-sdk': {
    era: 'init',
    server: 'sdk',
    label: '2025 session (`initialize` + `DELETE`) · bare SDK 1.x `StreamableHTTPServerTransport`',
  },
  'init-front': { era: 'init', server: 'front', label: '2025 session · the front, no middleware' },
  'init-front-core': { era: 'init', server: 'front-core', label: '2025 session · the front + core' },
  'init-front-core-table': {
    era: 'init',
    server: 'front-core-table',
    label: '2025 session · the front + core, tools from a `toolTable`',
  },
  'init-front-full': { era: 'init', server: 'front-full', label: '2025 session · the front + all six, defaults' },
  'init-preset': { era: 'init', server: 'preset', label: '2025 session · the preset (`createApp`)' },
};

export interface HttpInstructionOptions {
  reps: number;
  n: number;
  warmup: number;
  rows: string[];
  /** Registered tools per server (echo and `tools - 1` others): one run of each row per count. */
  tools: number[];
  nodes: string[] | undefined;
  jobs: number | undefined;
  out: string;
  /** Only the native runs (server CPU and round trip per request; no valgrind). */
  nativeOnly?: boolean;
  /** Keep the window dumps and V8's perf maps (`<out>/cg/`, runs with `--perf-basic-prof`) for callgrind_annotate and instructions/diff.mjs. */
  keep: boolean;
}

interface HttpRun {
  node: string;
  row: string;
  tools: number;
  rep: number;
  irPerRequest: number;
  /** Of which V8's compiler (instructions/jit-share.mjs). */
  compilePerRequest: number;
  allocBytesPerRequest: number;
  survivingBytesPerRequest: number;
  gcsInWindow: unknown[];
  seconds: number;
}

/** Extra V8 flags of the counted runs, per Node major (`TETHER_HTTP_V8_<major>`, space-separated; analysis only). */
function extraFlags(version: string): string[] {
  const major = /^v(\d+)/.exec(version)?.[1];
  return (process.env[`TETHER_HTTP_V8_${major}`] ?? '').split(' ').filter(Boolean);
}

const log = (msg: string) => process.stderr.write(`[bench instructions --http] ${msg}\n`);

/** A child's stdout as lines: `next(prefix)` waits for the next line that starts with it. */
function lineReader(stream: NodeJS.ReadableStream, what: string, died: Promise<string>) {
  const waiting: string[] = [];
  let wake: (() => void) | undefined;
  createInterface({ input: stream }).on('line', (l) => {
    waiting.push(l);
    wake?.();
  });
  return async (prefix: string): Promise<string> => {
    for (;;) {
      const i = waiting.findIndex((l) => l.startsWith(prefix));
      if (i >= 0)
        return waiting
          .splice(0, i + 1)
          .pop()!
          .slice(prefix.length);
      const woke = new Promise<void>((r) => (wake = r));
      const gone = await Promise.race([woke.then(() => undefined), died]);
      if (gone !== undefined) throw new Error(`${what} exited before "${prefix}":\n${gone.slice(-3000)}`);
    }
  };
}

function child(cmd: string, args: string[], env: NodeJS.ProcessEnv, what: string) {
  // In the temporary directory: V8's log files (--perf-basic-prof with --keep) land there.
  const p = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'], cwd: tmpdir() });
  let err = '';
  p.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => p.on('close', (code) => r(code)));
  const died = exited.then((code) => `${what}: exit code ${code}\n${err}`);
  return { p, next: lineReader(p.stdout, what, died), exited, stderr: () => err };
}

/** One run of a row: counted under callgrind, or native (`cg === undefined`: time and CPU only). */
async function runOnce(
  node: string,
  version: string,
  id: string,
  rep: number,
  tools: number,
  o: HttpInstructionOptions,
  cg: { cgStart: string | undefined; work: string } | undefined,
): Promise<{ result: Record<string, any>; ir: number | undefined; compile: number; seconds: number }> {
  const row = HTTP_ROWS[id]!;
  const serverArgs = [join(here, 'http-count-server.js'), row.server, String(tools)];
  const out = cg && join(cg.work, `cg-${version}-${id}-${tools}-${rep}`);
  const t0 = performance.now();
  const server = cg
    ? child(
        'valgrind',
        [
          '--tool=callgrind',
          `--instr-atstart=${cg.cgStart ? 'no' : 'yes'}`,
          '--dump-before=getegid',
          `--callgrind-out-file=${out}`,
          node,
          ...V8_FLAGS,
          // The memory reducer starts GCs when the heap looks idle over time (a server under valgrind,
          // waiting for its client, looks idle): time-driven, like what V8_FLAGS already turns off.
          '--no-memory-reducer',
          ...extraFlags(version),
          // --keep: JIT code named in the dumps' analysis (instructions/diff.mjs reads V8's perf map).
          ...(o.keep ? ['--perf-basic-prof'] : []),
          ...serverArgs,
        ],
        { ...process.env, ...(cg.cgStart ? { CG_START_SO: cg.cgStart } : {}) },
        `server ${id} on ${version}`,
      )
    : child(node, ['--expose-gc', ...serverArgs], process.env, `server ${id} on ${version}`);
  let client: ReturnType<typeof child> | undefined;
  try {
    const url = await server.next('URL ');
    client = child(
      process.execPath,
      [join(here, 'http-count-client.js'), url, row.era, String(o.warmup)],
      process.env,
      `client ${id}`,
    );
    await client.next('READY');
    server.p.kill('SIGUSR2'); // gc
    await server.next('OK');
    client.p.stdin.write(`run ${Math.min(1000, o.warmup)}\n`); // settling: 1 000, or the warm-up when shorter
    await client.next('DONE');
    server.p.kill('SIGUSR2'); // start
    await server.next('STARTED');
    client.p.stdin.write(`run ${o.n}\n`);
    await client.next('DONE');
    server.p.kill('SIGUSR2'); // end
    const result = JSON.parse(await server.next('RESULT '));
    client.p.stdin.end();
    const [sc] = await Promise.all([server.exited, client.exited]);
    if (sc !== 0) throw new Error(`server ${id} exited with ${sc}:\n${server.stderr().slice(-2000)}`);
    let ir: number | undefined;
    let compile = 0;
    if (out) {
      if (!existsSync(`${out}.2`) || existsSync(`${out}.3`)) throw new Error(`unexpected callgrind dumps for ${id}`);
      const totals = /^totals:\s+(\d+)/m.exec(readFileSync(`${out}.2`, 'utf8'));
      if (!totals) throw new Error(`no totals in ${out}.2`);
      ir = Number(totals[1]);
      // What V8 spent compiling in the window (a window that still compiles is not at the steady state).
      const { jitShare } = (await import(join(benchRoot, 'instructions', 'jit-share.mjs'))) as {
        jitShare(dump: string): { total: number; compile: number };
      };
      compile = jitShare(`${out}.2`).compile;
      if (o.keep) {
        mkdirSync(join(o.out, 'cg'), { recursive: true });
        renameSync(`${out}.2`, join(o.out, 'cg', `${version}-${id}-${tools}-${rep}.window`));
        const map = `/tmp/perf-${server.p.pid}.map`;
        if (existsSync(map)) renameSync(map, join(o.out, 'cg', `${version}-${id}-${tools}-${rep}.map`));
      }
      for (const f of [out, `${out}.1`, `${out}.2`]) rmSync(f, { force: true });
    }
    return { result, ir, compile, seconds: Math.round((performance.now() - t0) / 100) / 10 };
  } finally {
    client?.p.kill();
    server.p.kill();
  }
}

export interface HttpRow {
  row: string;
  tools: number;
  label: string;
  irPerRequest: number;
  runs: number[];
  spreadPct: number;
  overRef: number;
  /** Instructions per request less V8's compiler, and its ratio to the reference's. */
  restPerRequest: number;
  restOverRef: number;
  allocBytesPerRequest: number;
  allocOverRef: number;
  survivingBytesPerRequest: number;
  gcsInWindow: string;
  cpuUsPerRequest: number;
  cpuOverRef: number;
  usPerRequest: number;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

function summarize(
  runs: HttpRun[],
  times: Map<string, { cpu: number; wall: number }>,
  rows: string[],
  toolCounts: number[],
  versions: string[],
) {
  const byNode: Record<string, HttpRow[]> = {};
  for (const node of versions) {
    const pairs = rows.flatMap((id) => toolCounts.map((tools) => ({ id, tools })));
    byNode[node] = pairs
      .filter(
        ({ id, tools }) =>
          runs.some((r) => r.node === node && r.row === id && r.tools === tools) || times.has(`${node} ${id}@${tools}`),
      )
      .map(({ id, tools }) => {
        const of = (row: string) => runs.filter((r) => r.node === node && r.row === row && r.tools === tools);
        const ref = of(`${HTTP_ROWS[id]!.era}-sdk`);
        const refIr = ref.length ? mean(ref.map((r) => r.irPerRequest)) : NaN;
        const refRest = ref.length ? mean(ref.map((r) => r.irPerRequest - r.compilePerRequest)) : NaN;
        const refAlloc = ref.length ? medianOf(ref.map((r) => r.allocBytesPerRequest)) : NaN;
        const refT = times.get(`${node} ${HTTP_ROWS[id]!.era}-sdk@${tools}`);
        const g = of(id);
        const v = g.map((r) => r.irPerRequest);
        const m = v.length ? mean(v) : NaN;
        const alloc = medianOf(g.map((r) => r.allocBytesPerRequest));
        const t = times.get(`${node} ${id}@${tools}`);
        return {
          row: id,
          tools,
          label: HTTP_ROWS[id]!.label,
          irPerRequest: Math.round(m),
          runs: v.map(Math.round),
          spreadPct: v.length ? Math.round(((Math.max(...v) - Math.min(...v)) / m) * 1e5) / 1e3 : NaN,
          overRef: r3(m / refIr),
          restPerRequest: Math.round(g.length ? mean(g.map((r) => r.irPerRequest - r.compilePerRequest)) : NaN),
          restOverRef: r3((g.length ? mean(g.map((r) => r.irPerRequest - r.compilePerRequest)) : NaN) / refRest),
          allocBytesPerRequest: alloc,
          allocOverRef: r3(alloc / refAlloc),
          survivingBytesPerRequest: medianOf(g.map((r) => r.survivingBytesPerRequest)),
          gcsInWindow: [...new Set(g.map((r) => JSON.stringify(r.gcsInWindow)))].join(' '),
          cpuUsPerRequest: t ? Math.round(t.cpu * 10) / 10 : NaN,
          cpuOverRef: t && refT ? Math.round((t.cpu / refT.cpu) * 100) / 100 : NaN,
          usPerRequest: t ? Math.round(t.wall * 10) / 10 : NaN,
        };
      });
  }
  return byNode;
}

/** The issue's targets, on Node 24, per era: the front with core ≤ 1.05× its era's bare SDK, all six (`asyncContext: false`) ≤ 1.10×. */
export function httpTargets(byNode: Record<string, HttpRow[]>) {
  const t: Array<{ node: string; what: string; target: string; value: string; met: boolean }> = [];
  for (const [node, rows] of Object.entries(byNode)) {
    if (Number(/^v(\d+)/.exec(node)?.[1]) < 24) continue;
    for (const [suffix, what, target] of [
      ['front-core', 'the front + core', 1.05],
      ['front-full-noctx', 'the front + all six, asyncContext: false', 1.1],
    ] as const) {
      for (const era of ['2025', '2026']) {
        const r =
          rows.find((x) => x.row === `${era}-${suffix}` && x.tools === 11) ??
          rows.find((x) => x.row === `${era}-${suffix}`);
        if (!r || !Number.isFinite(r.restOverRef)) continue;
        const value = `${r.restOverRef.toFixed(3)}× (total ${r.overRef.toFixed(3)}×)`;
        t.push({
          node,
          what: `${era}: ${what}, instructions less V8 compiling`,
          target: `<= ${target.toFixed(2)}×`,
          value,
          met: r.restOverRef <= target,
        });
      }
    }
  }
  return t;
}

export function renderHttp(
  meta: Record<string, any>,
  byNode: Record<string, HttpRow[]>,
  targets: ReturnType<typeof httpTargets>,
) {
  const out: string[] = ['### Instructions per request over HTTP (callgrind, server process)', ''];
  out.push(`- Command: \`${meta.command}\``);
  out.push(
    `- Date: ${meta.date}; took ${meta.durationSec} s (${meta.jobs} at a time); load average before ${meta.loadAverageBefore.join(', ')}; ${meta.cpus}`,
  );
  out.push(
    `- Per row and Node: ${meta.reps} run(s) of the server under \`valgrind --tool=callgrind\`, each counting exactly ${fmt(meta.n)} sequential requests (${meta.tools.join(', ')} tools registered): \`tools/call\` of \`echo\` from a real SDK client in another process (one keep-alive connection; one 2025-era session, or 2026-07-28 stateless requests), or for the 2025 session rows an \`initialize\` and the session's \`DELETE\` (fetch, one keep-alive connection), after ${fmt(meta.warmup)} + ${fmt(Math.min(1000, meta.warmup))} warm-up calls, in a GC-free window. Server CPU and round trip per request from one native run of the same shape (default V8 flags; on a shared machine they move by ±10 %). × ref: to the bare SDK row of the same era.`,
  );
  if (targets.length) {
    out.push('', '| target | Node | target | measured |  |', '| --- | --- | --- | --- | --- |');
    for (const x of targets)
      out.push(`| ${x.what} | ${x.node} | ${x.target} | ${x.value} | ${x.met ? 'met' : '**missed**'} |`);
  }
  for (const [node, rows] of Object.entries(byNode)) {
    out.push('', `#### ${node}`, '');
    out.push(
      '| row | tools | instr/request | × ref | less V8 compiling | × ref | spread | runs | bytes/request | × ref | surviving B/req | server CPU µs/req | × ref | round trip µs | GCs in window |',
    );
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const r of rows)
      out.push(
        `| ${r.label} | ${r.tools} | ${fmt(r.irPerRequest)} | ${r.overRef.toFixed(3)} | ${fmt(r.restPerRequest)} | ${r.restOverRef.toFixed(3)} | ${r.spreadPct.toFixed(3)} % | ${r.runs.map((x) => fmt(x)).join(', ')} | ${fmt(r.allocBytesPerRequest)} | ${r.allocOverRef.toFixed(3)} | ${fmt(r.survivingBytesPerRequest)} | ${r.cpuUsPerRequest} | ${r.cpuOverRef} | ${r.usPerRequest} | ${r.gcsInWindow} |`,
      );
  }
  return out.join('\n') + '\n';
}

export async function runHttpInstructions(o: HttpInstructionOptions): Promise<void> {
  const started = performance.now();
  const load0 = loadavg();
  const { cgStart } = o.nativeOnly ? { cgStart: undefined } : ensureTools();
  const nodes = o.nodes ?? [process.execPath, node24()];
  const versions = nodes.map(versionOf);
  // Each run is two processes (the counted server and the client): one at a time unless asked.
  const jobs = o.jobs ?? 1;
  const work = mkdtempSync(join(tmpdir(), 'tether-instructions-http-'));
  const tasks: Array<() => Promise<HttpRun>> = [];
  for (let rep = 1; rep <= (o.nativeOnly ? 0 : o.reps); rep++)
    nodes.forEach((node, i) => {
      for (const id of o.rows)
        for (const tools of o.tools)
          tasks.push(async () => {
            const {
              result: r,
              ir,
              compile,
              seconds,
            } = await runOnce(node, versions[i]!, id, rep, tools, o, { cgStart, work });
            const run: HttpRun = {
              node: versions[i]!,
              row: id,
              tools,
              rep,
              irPerRequest: ir! / o.n,
              compilePerRequest: compile / o.n,
              allocBytesPerRequest: Math.round(r.allocBytes / o.n),
              survivingBytesPerRequest: Math.round(r.survivingBytes / o.n),
              gcsInWindow: r.gcsInWindow,
              seconds,
            };
            log(
              `${run.node} ${id} (${tools} tools) run ${rep}: ${fmt(run.irPerRequest)} instr/request (compiling ${fmt(run.compilePerRequest)}), ${run.allocBytesPerRequest} B/request, GCs ${JSON.stringify(run.gcsInWindow)} (${seconds} s)`,
            );
            return run;
          });
    });
  log(
    `${tasks.length} counted runs (${o.rows.length} rows × ${o.tools.length} tool counts × ${nodes.length} Node × ${o.reps}), ${jobs} at a time`,
  );
  const runs = await pool(tasks, jobs);
  const times = new Map<string, { cpu: number; wall: number }>();
  for (const [i, node] of nodes.entries())
    for (const id of o.rows)
      for (const tools of o.tools) {
        const { result: r } = await runOnce(node, versions[i]!, id, 0, tools, o, undefined);
        times.set(`${versions[i]} ${id}@${tools}`, { cpu: r.cpuUs / o.n, wall: r.wallUs / o.n });
        log(`${versions[i]} ${id} (${tools} tools) native: ${(r.cpuUs / o.n).toFixed(1)} µs server CPU/request`);
      }
  rmSync(work, { recursive: true, force: true });
  if (cgStart) rmSync(dirname(cgStart), { recursive: true, force: true });
  const byNode = summarize(runs, times, o.rows, o.tools, versions);
  const targets = httpTargets(byNode);
  const meta = {
    command: `pnpm bench --instructions --http --reps ${o.reps} --n ${o.n} --warmup ${o.warmup} --tools ${o.tools.join(',')}${o.rows.length < Object.keys(HTTP_ROWS).length ? ` --rows ${o.rows.join(',')}` : ''}`,
    date: new Date().toISOString(),
    durationSec: Math.round((performance.now() - started) / 1000),
    jobs,
    reps: o.reps,
    n: o.n,
    warmup: o.warmup,
    tools: o.tools,
    nodes: versions,
    cpus: `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown'}`,
    loadAverageBefore: load0.map((x) => Math.round(x * 100) / 100),
    v8Flags: V8_FLAGS,
  };
  mkdirSync(o.out, { recursive: true });
  writeFileSync(join(o.out, 'latest.json'), JSON.stringify({ meta, targets, rows: byNode, runs }, null, 2) + '\n');
  const md = renderHttp(meta, byNode, targets);
  writeFileSync(join(o.out, 'latest.md'), md);
  process.stdout.write(md);
  log(`done in ${meta.durationSec} s; wrote ${join(o.out, 'latest.json')} and latest.md (bench root ${benchRoot})`);
}
