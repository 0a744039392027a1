/**
 * `pnpm bench` — runs every scenario, each in its own Node process, one after the other, and writes
 * results/latest.json and results/latest.md (and, on a full run, the README's Performance section).
 *
 * Options:
 *   --quick           small sizes, under 30 s: proves the harness works (CI); numbers are not meaningful
 *   --only a,b        run only these sections: overhead, flood, cancel, mutex, heartbeat, memory, scaling, transport,
 *                     bullmq, attack
 *   --out DIR         write latest.json / latest.md there (default: bench/results, or bench/results/quick with --quick)
 *   --cpu-prof        CPU profiles of the measured sections of (1) and (5), summarized in the report
 *   --heavy           also (7) for the heartbeat at 100 000 watched calls (minutes; past the 5-minute budget)
 *   --instructions    instead of the sections: instructions per call under callgrind (valgrind), per stack,
 *                     on the running Node and Node 24 (npx), beside time, CPU and bytes (src/instructions.ts);
 *                     with --reps R (3), --n N (2000 counted calls), --warmup W (20000), --stacks a,b,
 *                     --nodes /path/node,... , --jobs J (2 when the machine is idle enough, else 1),
 *                     --spread a,b (only these stacks get R runs, the others one: a shorter run)
 *   --instructions --http   the same per request of the server over real HTTP, beside the bare SDK
 *                     transport of each era (src/instructions-http.ts); --rows a,b, --tools 1,11,100 (11: tools registered per server; one row per count),
 *                     --keep (window dumps in <out>/cg/), --native (no valgrind: server CPU only);
 *                     defaults --n 2000 --warmup 2000
 *
 * Targets are reported as met or missed; a missed target never fails the process. A scenario that
 * crashes does (exit code 1), after the other scenarios ran and the report was written.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FULL, QUICK, type Config } from './config.js';
import { runInstructions } from './instructions.js';
import { runHttpInstructions } from './instructions-http.js';
import { INSTRUCTION_STACKS } from './stacks.js';
import { renderMarkdown, type Report } from './report.js';
import { targets } from './targets.js';
import { versions, updateReadme } from './meta.js';
import { parseArgs, SECTIONS, type Section } from './args.js';
import { median, round } from './util.js';

const here = dirname(fileURLToPath(import.meta.url));
const benchRoot = resolve(here, '..');
const fromSource = import.meta.url.endsWith('.ts');

const args = parseArgs(process.argv.slice(2), benchRoot);
const config: Config = args.quick ? QUICK : FULL;
const work = mkdtempSync(join(tmpdir(), 'tether-bench-'));
const profDir = join(args.out, 'profiles');
const errors: string[] = [];
const started = performance.now();

function log(msg: string) {
  const t = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${t}s] ${msg}\n`);
}

let seq = 0;
/** Run one scenario in a fresh process; resolve with its JSON result (or `undefined` on failure). */
async function child<T = any>(
  scenario: string,
  params: object,
  extraNodeArgs: string[] = [],
  timeoutMs = config.childTimeoutMs,
): Promise<T | undefined> {
  const out = join(work, `${scenario}-${++seq}.json`);
  const script = join(here, fromSource ? 'child.ts' : 'child.js');
  const nodeArgs = [
    '--expose-gc',
    '--expose-internals',
    ...extraNodeArgs,
    ...(fromSource ? ['--import', 'tsx'] : []),
    script,
    scenario,
    JSON.stringify(params),
    out,
  ];
  const label = `${scenario} ${JSON.stringify(params)}`;
  const code = await new Promise<number | string>((res) => {
    const p = spawn(process.execPath, nodeArgs, { stdio: ['ignore', 'inherit', 'inherit'], cwd: benchRoot });
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('exit', (c, sig) => {
      clearTimeout(timer);
      res(c ?? sig ?? 'unknown');
    });
  });
  if (code !== 0 || !existsSync(out)) {
    const msg = `${label}: exited with ${code}${code === 'SIGKILL' ? ` (killed after ${timeoutMs} ms)` : ''}`;
    log(`FAILED ${msg}`);
    errors.push(msg);
    return undefined;
  }
  return JSON.parse(readFileSync(out, 'utf8')) as T;
}

// ---------------------------------------------------------------- sections

async function overhead() {
  const c = config.overhead;
  const stacks = [...c.stacks, 'fastmcp'];
  const rounds: Array<Record<string, any>> = [];
  for (let r = 0; r < c.rounds; r++) {
    const row: Record<string, any> = {};
    const inRound = [...c.stacks, ...(r < c.fastmcpRounds ? ['fastmcp'] : [])];
    // Rotate the order each round, so that no stack always runs first (or last).
    const order = inRound.map((_, i) => inRound[(i + r) % inRound.length]!);
    for (const stack of order) {
      const calls = stack === 'fastmcp' ? c.fastmcpCalls : c.calls;
      const prof = args.cpuProf && r === 0 && (stack === 'bare' || stack === 'full') ? { cpuProfDir: profDir } : {};
      log(`overhead round ${r + 1}/${c.rounds}: ${stack} (${calls} calls)`);
      const res = await child('overhead', { stack, calls, warmup: c.warmup, ...prof });
      if (res) row[stack] = res;
    }
    rounds.push(row);
  }
  const summary: Record<string, any> = {};
  for (const stack of stacks) {
    const rows = rounds.map((r) => r[stack]).filter(Boolean);
    if (!rows.length) continue;
    const within = rounds.filter((r) => r[stack] && r.bare);
    const ratio = (f: (x: any) => number) => round(median(within.map((r) => f(r[stack]) / f(r.bare))), 3);
    summary[stack] = {
      calls: rows[0].calls,
      rounds: rows.length,
      meanUs: round(median(rows.map((x: any) => x.meanUs))),
      p50Us: round(median(rows.map((x: any) => x.p50Us))),
      p99Us: round(median(rows.map((x: any) => x.p99Us))),
      cpuUsPerCall: round(median(rows.map((x: any) => (x.cpuMs * 1000) / x.calls))),
      callsPerSec: round(1e6 / median(rows.map((x: any) => x.meanUs)), 0),
      overBareMean: ratio((x) => x.meanUs),
      overBareP50: ratio((x) => x.p50Us),
      // CPU time per call (client + server): the figure least disturbed by other load on the machine.
      overBareCpu: ratio((x) => x.cpuMs / x.calls),
      allocBytesPerCall: round(median(rows.map((x: any) => x.allocBytesPerCall)), 0),
      overBareAlloc: ratio((x) => x.allocBytesPerCall),
      promisesPerCall: median(rows.map((x: any) => x.promisesPerCall ?? NaN)),
      allocByPackage: rows[0].allocByPackage,
    };
  }
  const profiles = Object.fromEntries(
    rounds.flatMap((r) =>
      Object.entries(r)
        .filter(([, v]) => v.profile)
        .map(([k, v]) => [k, v.profile]),
    ),
  );
  let breakdown: unknown;
  if (config.breakdown) {
    log(
      `overhead breakdown: ${config.breakdown.stacks.join(', ')} (${config.breakdown.calls} calls × ${config.breakdown.rounds} rounds, one process)`,
    );
    breakdown = await child('breakdown', config.breakdown);
  }
  return {
    rounds: c.rounds,
    stacks: summary,
    ...(breakdown ? { breakdown } : {}),
    perRound: rounds.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [
          k,
          {
            meanUs: v.meanUs,
            p50Us: v.p50Us,
            p99Us: v.p99Us,
            cpuMs: v.cpuMs,
            wallMs: v.wallMs,
            allocBytesPerCall: v.allocBytesPerCall,
            promisesPerCall: v.promisesPerCall,
          },
        ]),
      ),
    ),
    ...(Object.keys(profiles).length ? { profiles } : {}),
  };
}

async function flood() {
  const rows: Record<string, any> = {};
  for (const kind of config.flood.kinds) {
    log(`flood: ${kind} (${config.flood.n} iterations, server in a child process, stdio)`);
    const r = await child('flood', { kind, n: config.flood.n });
    if (r) rows[kind] = r;
  }
  return { iterations: config.flood.n, transport: 'stdio', runs: rows };
}

async function cancelSection(calls = config.cancel.calls, styles = config.cancel.styles) {
  const rows: Record<string, any> = {};
  for (const style of styles) {
    log(`cancel: ${style} (${calls} calls)`);
    const r = await child('cancel', { calls, style });
    if (r) rows[style] = r;
  }
  return rows;
}

async function mutexSection() {
  log(
    `mutex (${config.mutex.calls} sequential, ${config.mutex.concurrent} concurrent, ${config.mutex.waiters} waiters)`,
  );
  return child('mutex', config.mutex);
}

async function heartbeatSection(
  calls = config.heartbeat.calls,
  variants = config.heartbeat.variants,
  silenceMs = config.heartbeat.silenceMs,
  timeoutMs?: number,
) {
  const rows: Record<string, any> = {};
  const big = calls > 20_000 ? ['--max-old-space-size=8192'] : [];
  for (const variant of variants) {
    log(`heartbeat: ${variant} (${calls} silent calls, silenceMs ${silenceMs})`);
    const prof =
      args.cpuProf && variant === 'full' && calls === config.heartbeat.calls && silenceMs === config.heartbeat.silenceMs
        ? { cpuProfDir: profDir }
        : {};
    const r = await child(
      'heartbeat',
      { calls, silenceMs, windowMs: config.heartbeat.windowMs, variant, ...prof },
      big,
      timeoutMs,
    );
    if (r) rows[variant] = r;
  }
  return rows;
}

async function memory() {
  const rows: any[] = [];
  for (const run of config.memory.runs) {
    log(`memory: ${run.workload} through ${run.stack} (${run.large} calls)`);
    const r = await child('memory', { ...run, small: config.memory.small });
    if (r) rows.push(r);
  }
  const open: Record<string, any> = {};
  for (const stack of config.memory.openCallStacks) {
    log(
      `memory: ${config.memory.openCalls} open calls through ${stack}${config.memory.snapshot ? ', heap snapshot counts' : ''}`,
    );
    const r = await child('opencalls', { stack, calls: config.memory.openCalls, snapshot: config.memory.snapshot });
    if (r) open[stack] = r;
  }
  return { runs: rows, openCalls: open };
}

async function transportSection() {
  const c = config.transport!;
  const rows: Record<string, any> = {};
  for (const transport of c.transports) {
    log(
      `transport: ${transport} (${c.stacks.join(', ')}; ${c.calls} calls × ${c.rounds} rounds, server in a child process)`,
    );
    const r = await child('transport', {
      transport,
      stacks: c.stacks,
      calls: c.calls,
      warmup: c.warmup,
      rounds: c.rounds,
      maxMs: c.maxMs,
    });
    if (r) rows[transport] = r;
  }
  return rows;
}

/** (9) jobs on BullMQ: needs redis-server on the PATH (or $REDIS_SERVER); skipped without it. */
async function bullmqSection() {
  const bin = process.env.REDIS_SERVER ?? 'redis-server';
  const found = await new Promise<boolean>((res) => {
    const p = spawn(bin, ['--version'], { stdio: 'ignore' });
    p.on('error', () => res(false));
    p.on('exit', (code) => res(code === 0));
  });
  if (!found) {
    log('bullmq: skipped (no redis-server on the PATH)');
    return { skipped: `no ${bin} on the PATH` };
  }
  log(`bullmq: jobs in process and on BullMQ (1, 2 workers) beside raw BullMQ (${JSON.stringify(config.bullmq)})`);
  return child('bullmq', config.bullmq!);
}

/** ms left in the run's budget. */
const budgetLeft = () => config.budgetMs - (performance.now() - started);

async function scaling(base: Report['sections']) {
  const s = config.scaling;
  if (!s) return undefined;
  const out: Record<string, any> = { skipped: [] as string[] };
  // Each step runs only if what is left of the budget allows (the last one gets what is left).
  const over: Record<string, any> = {};
  for (const stack of ['bare', 'full']) {
    if (budgetLeft() < 30_000) {
      out.skipped.push(`(1) ${stack} at ${s.overheadCalls} calls`);
      continue;
    }
    log(`scaling (1): ${stack} (${s.overheadCalls} calls)`);
    over[stack] = await child('overhead', { stack, calls: s.overheadCalls, warmup: config.overhead.warmup });
  }
  out.overhead = { calls: s.overheadCalls, baseCalls: config.overhead.calls, runs: over, base: base.overhead?.stacks };
  if (budgetLeft() > 60_000)
    out.cancel = {
      calls: s.cancelCalls,
      baseCalls: config.cancel.calls,
      runs: await cancelSection(s.cancelCalls, ['signal']),
      base: base.cancel,
    };
  else out.skipped.push(`(3) at ${s.cancelCalls} cancels`);
  // (5) at 10x the heartbeat demand: the same calls, silenceMs / 10.
  const hb: Record<string, any> = {
    calls: config.heartbeat.calls,
    silenceMs: s.heartbeatSilenceMs,
    baseSilenceMs: config.heartbeat.silenceMs,
    base: base.heartbeat,
  };
  if (budgetLeft() > 20_000) {
    hb.runs = await heartbeatSection(
      config.heartbeat.calls,
      ['full'],
      s.heartbeatSilenceMs,
      Math.min(config.childTimeoutMs, budgetLeft()),
    );
    if (!hb.runs.full && errors[errors.length - 1]?.includes('SIGKILL')) {
      // Stopped at the end of the budget: a result, not a failure of the harness.
      errors.pop();
      hb.unfinished = `did not finish within the ${Math.round(config.budgetMs / 1000)} s budget`;
    }
  } else out.skipped.push(`(5) at silenceMs ${s.heartbeatSilenceMs}`);
  if (args.heavy) {
    // 10x the watched calls at the same demand; long (minutes), so outside the budget.
    out.heavy = {
      calls: s.heavyCalls,
      baseCalls: config.heartbeat.calls,
      silenceMs: s.heavySilenceMs,
      base: await heartbeatSection(config.heartbeat.calls, ['full'], s.heavySilenceMs),
      runs: await heartbeatSection(s.heavyCalls, ['full'], s.heavySilenceMs, 15 * 60_000),
    };
  }
  out.heartbeat = hb;
  return out;
}

// ---------------------------------------------------------------- main

async function main() {
  mkdirSync(args.out, { recursive: true });
  if (args.cpuProf) mkdirSync(profDir, { recursive: true });
  const load0 = loadavg();
  log(
    `${config.mode} run; sections: ${args.only.join(', ')}; load average ${load0.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const sections: Report['sections'] = {};
  const want = (s: Section) => args.only.includes(s);
  if (want('overhead')) sections.overhead = await overhead();
  if (want('flood')) sections.flood = await flood();
  if (want('cancel')) sections.cancel = await cancelSection();
  if (want('mutex')) sections.mutex = await mutexSection();
  if (want('heartbeat')) sections.heartbeat = await heartbeatSection();
  if (want('memory')) sections.memory = await memory();
  if (want('scaling') && config.scaling) sections.scaling = await scaling(sections);
  if (want('transport') && config.transport) sections.transport = await transportSection();
  if (want('bullmq') && config.bullmq) sections.bullmq = await bullmqSection();
  if (want('attack')) {
    const a = config.attack;
    log(`attack: baseline, then ${a.attacks.join(', ')} (${a.durationMs / 1000} s each; server, attacker, victim)`);
    sections.attack = await child('attack', a, [], 20 * a.durationMs + 120_000);
  }

  const cpuList = cpus();
  const report: Report = {
    meta: {
      mode: config.mode,
      date: new Date().toISOString(),
      command: `pnpm bench${args.quick ? ' --quick' : ''}${args.only.length < SECTIONS.length ? ` --only ${args.only.join(',')}` : ''}${args.cpuProf ? ' --cpu-prof' : ''}${args.heavy ? ' --heavy' : ''}`,
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpus: `${cpuList.length} × ${cpuList[0]?.model.trim() ?? 'unknown'}`,
      memoryGiB: round(totalmem() / 2 ** 30, 1),
      loadAverageBefore: load0.map((x) => round(x, 2)),
      loadAverageAfter: loadavg().map((x) => round(x, 2)),
      durationSec: round((performance.now() - started) / 1000, 1),
      versions: versions(benchRoot),
      errors,
    },
    targets: [],
    sections,
  };
  report.targets = targets(sections);
  writeFileSync(join(args.out, 'latest.json'), JSON.stringify(report, null, 2) + '\n');
  const md = renderMarkdown(report);
  writeFileSync(join(args.out, 'latest.md'), md);
  if (config.mode === 'full' && args.only.length === SECTIONS.length && args.out === join(benchRoot, 'results'))
    updateReadme(md, benchRoot, log);
  rmSync(work, { recursive: true, force: true });
  process.stdout.write(md);
  log(`done in ${report.meta.durationSec} s; wrote ${join(args.out, 'latest.json')} and latest.md`);
  if (errors.length) {
    log(`${errors.length} scenario(s) failed`);
    process.exitCode = 1;
  }
}

if (args.instructions && args.http) {
  await runHttpInstructions({
    reps: args.reps,
    n: args.n,
    warmup: args.warmup ?? 2000,
    rows: args.rows,
    tools: args.tools,
    nodes: args.nodes,
    jobs: args.jobs,
    out: args.out,
    keep: args.keep,
    nativeOnly: args.nativeOnly,
  });
} else if (args.instructions) {
  const warmup = args.warmup ?? 20_000;
  const all = args.stacks.length >= Object.keys(INSTRUCTION_STACKS).length - 1;
  await runInstructions({
    reps: args.reps,
    n: args.n,
    warmup,
    timeN: 20_000,
    stacks: args.stacks,
    spreadStacks: args.spread,
    nodes: args.nodes,
    jobs: args.jobs,
    out: args.out,
    // The README shows a run of every stack at the default sizes, written to results/instructions.
    readme:
      all &&
      args.n === 2000 &&
      warmup === 20_000 &&
      args.reps >= 3 &&
      args.out === join(benchRoot, 'results', 'instructions'),
  });
} else await main();
