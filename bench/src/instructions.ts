/**
 * `npm run bench -- --instructions`: instructions per call under callgrind, the noise-free measure of
 * per-call overhead (see instructions/README.md for the method), beside time, CPU and bytes.
 *
 * For every stack of {@link INSTRUCTION_STACKS} (bare, the ALS reference, core, each middleware alone,
 * all six) and every Node binary (the running one, and Node 24 fetched through npx), `reps` runs of
 * `instructions/run.mjs` under `valgrind --tool=callgrind`, each counting exactly `n` calls in a
 * GC-free window after `warmup` calls; then one native run per stack and Node (no valgrind, default
 * V8 flags, `timeN` calls) for wall time and CPU per call. Writes `results/instructions/latest.{json,md}`
 * and the README's instructions section.
 *
 * Not part of CI (valgrind runs take ~20 s each): the `--quick` smoke test never starts it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeReadmeSection } from './meta.js';
import { INSTRUCTION_STACKS } from './stacks.js';

const here = dirname(fileURLToPath(import.meta.url));
const benchRoot = resolve(here, '..');
const methodDir = join(benchRoot, 'instructions');

/**
 * V8 flags of the counted runs: determinism (no background threads, fixed seeds, no time-driven GC
 * tasks, fixed heap growth) and a 256 MB young generation, so that no GC falls in the window (each
 * run reports `gcsInWindow`; the count is GC-free on purpose, bytes are reported beside it).
 */
export const V8_FLAGS = [
  '--expose-gc',
  '--single-threaded',
  '--predictable',
  '--random-seed=1',
  '--hash-seed=1',
  '--no-minor-gc-task',
  '--no-incremental-marking-task',
  '--heap-growing-percent=30',
  '--initial-old-space-size=1024',
  '--min-semi-space-size=256',
  '--max-semi-space-size=256',
];

export interface InstructionOptions {
  reps: number;
  n: number;
  warmup: number;
  timeN: number;
  stacks: string[];
  /** Stacks that get `reps` runs (their spread is reported); the others get one. Default: all. */
  spreadStacks: string[] | undefined;
  /** Node binaries; default: the running one and Node 24 through npx. */
  nodes: string[] | undefined;
  jobs: number | undefined;
  out: string;
  /** Update the README section (a run of every stack with the default sizes). */
  readme: boolean;
}

interface Run {
  node: string;
  stack: string;
  rep: number;
  irPerCall: number;
  allocBytesPerCall: number;
  survivingBytesPerCall: number;
  gcsInWindow: unknown[];
  seconds: number;
}

const log = (msg: string) => process.stderr.write(`[bench instructions] ${msg}\n`);

/** valgrind (installed with apt-get when missing and we may), and gcc for the start switch (optional). */
export function ensureTools(): { cgStart: string | undefined } {
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
  if (!has('valgrind')) {
    const root = typeof process.getuid === 'function' && process.getuid() === 0;
    if (root && has('apt-get')) {
      log('valgrind is missing: apt-get install -y valgrind');
      const r = spawnSync(
        'sh',
        ['-c', 'apt-get install -y valgrind || (apt-get update && apt-get install -y valgrind)'],
        { stdio: 'inherit' },
      );
      if (r.status !== 0 || !has('valgrind'))
        throw new Error('could not install valgrind; install it (apt-get install -y valgrind) and run again');
    } else {
      throw new Error(
        '--instructions needs valgrind (callgrind): install it (e.g. apt-get install -y valgrind) and run again',
      );
    }
  }
  // cg_start.so switches counting on just before the window, so that start-up and warm-up run at
  // uninstrumented speed; without gcc (or the valgrind headers) everything is instrumented: slower, same counts.
  const so = join(mkdtempSync(join(tmpdir(), 'tether-cg-')), 'cg_start.so');
  if (has('gcc')) {
    const r = spawnSync('gcc', ['-shared', '-fPIC', '-O2', '-o', so, join(methodDir, 'cg_start.c')], {
      encoding: 'utf8',
    });
    if (r.status === 0) return { cgStart: so };
    log(`gcc could not build cg_start.so (${r.stderr.trim().split('\n')[0]}): instrumenting the whole run (slower)`);
  } else log('gcc not found: instrumenting the whole run (slower)');
  return { cgStart: undefined };
}

/** Node 24's binary, fetched once through npx (as the conformance script fetches Node 22). */
export function node24(): string {
  log('resolving node@24 through npx (the first time downloads it)');
  return execFileSync('npx', ['-y', '-p', 'node@24', '--', 'node', '-p', 'process.execPath'], {
    cwd: tmpdir(),
    encoding: 'utf8',
  }).trim();
}

export function versionOf(node: string): string {
  return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
}

export function parseResult(log: string): Record<string, any> {
  const line = log.split('\n').find((l) => l.startsWith('RESULT '));
  if (!line) throw new Error(`no RESULT line in:\n${log.slice(-2000)}`);
  return JSON.parse(line.slice('RESULT '.length));
}

/** One counted run: callgrind's `<out>.2` is the window (the N calls alone). */
function countOnce(
  node: string,
  version: string,
  stack: string,
  rep: number,
  o: InstructionOptions,
  cgStart: string | undefined,
  work: string,
): Promise<Run> {
  const out = join(work, `cg-${version}-${stack}-${rep}`);
  const args = [
    '--tool=callgrind',
    `--instr-atstart=${cgStart ? 'no' : 'yes'}`,
    '--dump-before=getegid',
    `--callgrind-out-file=${out}`,
    node,
    ...V8_FLAGS,
    join(methodDir, 'run.mjs'),
    stack,
    String(o.n),
    String(o.warmup),
  ];
  const t0 = performance.now();
  return new Promise((res, rej) => {
    const env = { ...process.env, TETHER_BENCH_DIR: benchRoot, ...(cgStart ? { CG_START_SO: cgStart } : {}) };
    const p = spawn('valgrind', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    p.stdout.on('data', (d) => (text += d));
    p.stderr.on('data', (d) => (text += d));
    p.on('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`valgrind ${stack} on ${version} exited with ${code}:\n${text.slice(-2000)}`);
        // <out>.1: start switch .. window start (or start-up .. window start); <out>.2: the window; <out>: after.
        if (!existsSync(`${out}.2`) || existsSync(`${out}.3`))
          throw new Error(`unexpected callgrind dumps for ${stack} on ${version}`);
        const totals = /^totals:\s+(\d+)/m.exec(readFileSync(`${out}.2`, 'utf8'));
        if (!totals) throw new Error(`no totals in ${out}.2`);
        const r = parseResult(text);
        for (const f of [out, `${out}.1`, `${out}.2`]) rmSync(f, { force: true });
        res({
          node: version,
          stack,
          rep,
          irPerCall: Number(totals[1]) / o.n,
          allocBytesPerCall: r.allocBytesPerCall,
          survivingBytesPerCall: r.survivingBytesPerCall,
          gcsInWindow: r.gcsInWindow,
          seconds: Math.round((performance.now() - t0) / 100) / 10,
        });
      } catch (err) {
        rej(err);
      }
    });
  });
}

/** One native run (no valgrind, default V8 flags): wall time and CPU per call over `timeN` calls. */
function timeOnce(node: string, stack: string, o: InstructionOptions): { usPerCall: number; cpuUsPerCall: number } {
  const r = spawnSync(node, ['--expose-gc', join(methodDir, 'run.mjs'), stack, String(o.timeN), String(o.warmup)], {
    env: { ...process.env, TETHER_BENCH_DIR: benchRoot },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${stack} on ${node}: exited with ${r.status}\n${r.stderr.slice(-2000)}`);
  const res = parseResult(r.stderr);
  return { usPerCall: res.usPerCall, cpuUsPerCall: res.cpuUsPerCall };
}

export async function pool<T>(tasks: Array<() => Promise<T>>, jobs: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, tasks.length) }, worker));
  return results;
}

export const fmt = (x: number, d = 0) => x.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
export const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
export const medianOf = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export interface StackRow {
  stack: string;
  label: string;
  irPerCall: number;
  runs: number[];
  spreadPct: number;
  overBare: number;
  allocBytesPerCall: number;
  allocOverBare: number;
  survivingBytesPerCall: number;
  gcsInWindow: string;
  usPerCall: number;
  cpuUsPerCall: number;
  usOverBare: number;
  cpuOverBare: number;
}

export interface InstructionTarget {
  node: string;
  what: string;
  target: string;
  value: string;
  met: boolean;
}

function summarize(
  runs: Run[],
  times: Map<string, { usPerCall: number; cpuUsPerCall: number }>,
  stacks: string[],
): Record<string, StackRow[]> {
  const byNode: Record<string, StackRow[]> = {};
  for (const node of [...new Set(runs.map((r) => r.node))]) {
    const rowsOf = (s: string) => runs.filter((r) => r.node === node && r.stack === s);
    const bare = rowsOf('bare');
    const bareIr = bare.length ? mean(bare.map((r) => r.irPerCall)) : NaN;
    const bareAlloc = bare.length ? medianOf(bare.map((r) => r.allocBytesPerCall)) : NaN;
    const bareT = times.get(`${node} bare`);
    byNode[node] = stacks
      .filter((s) => rowsOf(s).length)
      .map((s) => {
        const g = rowsOf(s);
        const v = g.map((r) => r.irPerCall);
        const m = mean(v);
        const alloc = medianOf(g.map((r) => r.allocBytesPerCall));
        const t = times.get(`${node} ${s}`);
        return {
          stack: s,
          label: INSTRUCTION_STACKS[s]?.label ?? s,
          irPerCall: Math.round(m),
          runs: v.map((x) => Math.round(x)),
          spreadPct: Math.round(((Math.max(...v) - Math.min(...v)) / m) * 1e5) / 1e3,
          overBare: Math.round((m / bareIr) * 1000) / 1000,
          allocBytesPerCall: alloc,
          allocOverBare: Math.round((alloc / bareAlloc) * 1000) / 1000,
          survivingBytesPerCall: medianOf(g.map((r) => r.survivingBytesPerCall)),
          gcsInWindow: [...new Set(g.map((r) => JSON.stringify(r.gcsInWindow)))].join(' '),
          usPerCall: t?.usPerCall ?? NaN,
          cpuUsPerCall: t?.cpuUsPerCall ?? NaN,
          usOverBare: t && bareT ? Math.round((t.usPerCall / bareT.usPerCall) * 100) / 100 : NaN,
          cpuOverBare: t && bareT ? Math.round((t.cpuUsPerCall / bareT.cpuUsPerCall) * 100) / 100 : NaN,
        };
      });
  }
  return byNode;
}

/** The issue's targets: Node 24 all six ≤ 1.05×, core ≤ 1.02×, bytes ≤ 1.05×; Node 20 without async context ≤ 1.10×. */
export function instructionTargets(byNode: Record<string, StackRow[]>): InstructionTarget[] {
  const t: InstructionTarget[] = [];
  for (const [node, rows] of Object.entries(byNode)) {
    const get = (s: string) => rows.find((r) => r.stack === s);
    const major = Number(/^v(\d+)/.exec(node)?.[1]);
    const add = (what: string, target: number, row: StackRow | undefined, field: 'overBare' | 'allocOverBare') => {
      if (!row) return;
      t.push({
        node,
        what,
        target: `<= ${target.toFixed(2)}×`,
        value: `${row[field].toFixed(3)}×`,
        met: row[field] <= target,
      });
    };
    if (major >= 24) {
      add('core alone, instructions', 1.02, get('core'), 'overBare');
      add('all six, asyncContext: false, instructions', 1.05, get('full-noctx'), 'overBare');
      add('all six, defaults (mrtr asks for async context), instructions', 1.05, get('full'), 'overBare');
      add('all six, asyncContext: false, bytes allocated', 1.05, get('full-noctx'), 'allocOverBare');
      add('all six, defaults, bytes allocated', 1.05, get('full'), 'allocOverBare');
    } else {
      add('core alone (no async context), instructions', 1.1, get('core'), 'overBare');
      add('all six, asyncContext: false, instructions', 1.1, get('full-noctx'), 'overBare');
    }
  }
  return t;
}

export function renderInstructions(
  meta: Record<string, any>,
  byNode: Record<string, StackRow[]>,
  targets: InstructionTarget[],
): string {
  const out: string[] = [];
  out.push(`### Instructions per call (callgrind)`, '');
  out.push(`- Command: \`${meta.command}\``);
  out.push(
    `- Date: ${meta.date}; took ${meta.durationSec} s (${meta.jobs} at a time); load average before ${meta.loadAverageBefore.join(', ')}`,
  );
  out.push(
    `- Per stack and Node: ${meta.reps} runs${meta.spreadStacks ? ` (of ${meta.spreadStacks.join(', ')}; one of the others)` : ''} under \`valgrind --tool=callgrind\`, each counting exactly ${fmt(meta.n)} sequential \`tools/call\` (in memory, real SDK client) after ${fmt(meta.warmup)} warm-up calls, in a GC-free window; time and CPU from one native run of ${fmt(meta.timeN)} calls (default V8 flags, GCs included; on a shared machine they move by ±10 %).`,
  );
  out.push('');
  out.push('| target | Node | target | measured |  |', '| --- | --- | --- | --- | --- |');
  for (const x of targets)
    out.push(`| ${x.what} | ${x.node} | ${x.target} | ${x.value} | ${x.met ? 'met' : '**missed**'} |`);
  for (const [node, rows] of Object.entries(byNode)) {
    out.push('', `#### ${node}`, '');
    out.push(
      '| stack | instr/call | × bare | spread of runs | runs | bytes/call | × bare | surviving B/call | µs/call | × bare | CPU µs/call | × bare | GCs in window |',
    );
    out.push('| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const r of rows) {
      out.push(
        `| ${r.label} | ${fmt(r.irPerCall)} | ${r.overBare.toFixed(3)} | ${r.spreadPct.toFixed(3)} % | ${r.runs.map((x) => fmt(x)).join(', ')} | ${fmt(r.allocBytesPerCall)} | ${r.allocOverBare.toFixed(3)} | ${fmt(r.survivingBytesPerCall)} | ${r.usPerCall} | ${r.usOverBare} | ${r.cpuUsPerCall} | ${r.cpuOverBare} | ${r.gcsInWindow} |`,
      );
    }
  }
  return out.join('\n') + '\n';
}

export async function runInstructions(o: InstructionOptions): Promise<void> {
  const started = performance.now();
  const load0 = loadavg();
  const { cgStart } = ensureTools();
  const nodes = o.nodes ?? [process.execPath, node24()];
  const versions = nodes.map(versionOf);
  // Two valgrind runs at a time only when the machine has room for them.
  const jobs = o.jobs ?? (cpus().length >= 2 && load0[0]! < cpus().length - 1 ? 2 : 1);
  const work = mkdtempSync(join(tmpdir(), 'tether-instructions-'));
  const tasks: Array<() => Promise<Run>> = [];
  for (let rep = 1; rep <= o.reps; rep++) {
    nodes.forEach((node, i) => {
      for (const stack of o.stacks) {
        if (rep > 1 && o.spreadStacks !== undefined && !o.spreadStacks.includes(stack)) continue;
        tasks.push(async () => {
          const r = await countOnce(node, versions[i]!, stack, rep, o, cgStart, work);
          log(
            `${versions[i]} ${stack} run ${rep}: ${fmt(r.irPerCall)} instr/call, ${r.allocBytesPerCall} B/call (${r.seconds} s)`,
          );
          return r;
        });
      }
    });
  }
  log(
    `${tasks.length} counted runs (${o.stacks.length} stacks × ${nodes.length} Node, ${o.reps} runs of ${o.spreadStacks?.join(', ') ?? 'each'}), ${jobs} at a time`,
  );
  const runs = await pool(tasks, jobs);
  const times = new Map<string, { usPerCall: number; cpuUsPerCall: number }>();
  nodes.forEach((node, i) => {
    for (const stack of o.stacks) {
      log(`${versions[i]} ${stack}: native run (${fmt(o.timeN)} calls) for time and CPU`);
      times.set(`${versions[i]} ${stack}`, timeOnce(node, stack, o));
    }
  });
  rmSync(work, { recursive: true, force: true });
  if (cgStart) rmSync(dirname(cgStart), { recursive: true, force: true });

  const byNode = summarize(runs, times, o.stacks);
  const targets = instructionTargets(byNode);
  const meta = {
    command: `pnpm bench --instructions${o.reps !== 3 ? ` --reps ${o.reps}` : ''}${o.n !== 2000 ? ` --n ${o.n}` : ''}${o.spreadStacks ? ` --spread ${o.spreadStacks.join(',')}` : ''}${o.jobs ? ` --jobs ${o.jobs}` : ''}`,
    date: new Date().toISOString(),
    durationSec: Math.round((performance.now() - started) / 1000),
    jobs,
    reps: o.reps,
    spreadStacks: o.spreadStacks,
    n: o.n,
    warmup: o.warmup,
    timeN: o.timeN,
    nodes: versions,
    cpus: `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown'}`,
    loadAverageBefore: load0.map((x) => Math.round(x * 100) / 100),
    v8Flags: V8_FLAGS,
  };
  mkdirSync(o.out, { recursive: true });
  writeFileSync(join(o.out, 'latest.json'), JSON.stringify({ meta, targets, stacks: byNode, runs }, null, 2) + '\n');
  const md = renderInstructions(meta, byNode, targets);
  writeFileSync(join(o.out, 'latest.md'), md);
  if (o.readme) updateReadmeSection(md);
  process.stdout.write(md);
  log(`done in ${meta.durationSec} s; wrote ${join(o.out, 'latest.json')} and latest.md`);
}

/** Put the table into README.md between the instructions markers. */
function updateReadmeSection(md: string) {
  if (writeReadmeSection(benchRoot, 'instructions', md)) log('updated the instructions section of bench/README.md');
}
