// Deterministic per-call workload for instruction counting: no timers, no time-based loops.
//
//   node --expose-gc [V8 flags, see measure.sh] run.mjs <stack> <N> [warmup=20000]
//     stack: a name of bench/src/stacks.ts INSTRUCTION_STACKS (bare, bare-als, core, full, ...)
//
// Builds the server exactly like the bench (imports the built bench/dist/servers.js: the same
// echoServer()/echoServerWithAls()/fullStack() and connectInMemory(): real SDK Client over the SDK's
// InMemoryTransport), checks one call, runs <warmup> calls, then two short settling phases (a scavenge,
// then 1000 more calls, so anything a scavenge deoptimizes is re-optimized before the window), a last
// scavenge (empty young generation), then exactly <N> sequential tools/call of `echo` between two
// window markers, and exits.
//
// Window markers: process.getegid() is a bare libc getegid() call, so
// `valgrind --tool=callgrind --dump-before=getegid` dumps (and zeroes) the counters exactly at the two
// edges of the window.  CG_START_SO=<path of cg_start.so>: dlopen it just before the window; its
// constructor switches callgrind's instrumentation on (callgrind --instr-atstart=no: start-up and warm-up
// then run uninstrumented, several times faster); callgrind then writes <out>.1 (dlopen .. window
// start), <out>.2 (THE WINDOW: the N calls alone) and <out> (window end .. exit).
// Outside valgrind both are no-ops.
//
// Printed on stderr after the window: one JSON line "RESULT {...}": gcsInWindow (must be [] for the count
// to be GC-free), allocBytesPerCall (used heap growth over the window: exact when no GC ran in it),
// survivingBytesPerCall (what a scavenge right after the window keeps), usPerCall and cpuUsPerCall
// (wall and CPU time of the window per call: only meaningful outside valgrind).
// TRACE_MARK=1 (analysis only): prints "=== WINDOW START/END" (process._rawDebug, synchronous) around the
// window, to read --trace-opt/--trace-deopt/--trace-gc output of the window alone.
import { GCProfiler, getHeapStatistics } from 'node:v8';

const BENCH = process.env.TETHER_BENCH_DIR ?? new URL('..', import.meta.url).pathname;
const { connectInMemory } = await import(`${BENCH}/dist/servers.js`);
const { INSTRUCTION_STACKS } = await import(`${BENCH}/dist/stacks.js`);
const STACKS = Object.fromEntries(Object.entries(INSTRUCTION_STACKS).map(([k, v]) => [k, v.make]));

const [stack, nArg, wArg] = process.argv.slice(2);
const make = STACKS[stack];
const N = Number(nArg);
const W = wArg === undefined ? 20000 : Number(wArg);
if (!make || !Number.isInteger(N) || N < 0 || !Number.isInteger(W) || W < 0) {
  console.error(`usage: node --expose-gc run.mjs <${Object.keys(STACKS).join('|')}> <N> [warmup=20000]`);
  process.exit(2);
}
if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const scavenge = () => globalThis.gc({ type: 'minor', execution: 'sync' });

const conn = await connectInMemory(await make());
const call = (n) => conn.client.callTool({ name: 'echo', arguments: { n } });
// One loop function for warm-up, settling and the window, so that the window's loop (and its exit)
// runs code that is already optimized with full feedback.
async function calls(n) {
  let last;
  for (let i = 0; i < n; i++) last = await call(i);
  return last;
}
const r0 = await call(7);
if (r0.content?.[0]?.text !== '7') throw new Error(`${stack}: unexpected result ${JSON.stringify(r0)}`);
await calls(W);
scavenge();
await calls(1000);
scavenge();
const gcs = new GCProfiler(); // counts GCs inside the window (it only acts when a GC runs)
gcs.start();
const h0 = getHeapStatistics();
if (process.env.CG_START_SO) {
  // Its constructor starts callgrind's instrumentation; node then throws "did not self-register": expected.
  try {
    process.dlopen({ exports: {} }, process.env.CG_START_SO);
  } catch {}
}
if (process.env.TRACE_MARK) process._rawDebug('=== WINDOW START'); // analysis only (synchronous write, no async resource)
const cpu0 = process.cpuUsage();
const t0 = performance.now();
process.getegid(); // window start
const last = await calls(N);
process.getegid(); // window end
const t1 = performance.now();
const cpu1 = process.cpuUsage(cpu0);
if (process.env.TRACE_MARK) process._rawDebug('=== WINDOW END');
const h1 = getHeapStatistics();
const gcList = gcs.stop().statistics.map((g) => g.gcType);
if (N > 0 && last.content[0].text !== String(N - 1)) throw new Error(`${stack}: bad last result`);
scavenge();
const h2 = getHeapStatistics();
const perCall = (b) => (N > 0 ? Math.round(b / N) : 0);
console.error(
  'RESULT ' +
    JSON.stringify({
      stack,
      node: process.version,
      N,
      W,
      gcsInWindow: gcList,
      allocBytesPerCall: perCall(h1.used_heap_size - h0.used_heap_size),
      survivingBytesPerCall: perCall(h2.used_heap_size - h0.used_heap_size),
      // Time and CPU of the window (client + server): meaningful only for a run outside valgrind.
      usPerCall: N > 0 ? Math.round(((t1 - t0) * 1000 * 100) / N) / 100 : 0,
      cpuUsPerCall: N > 0 ? Math.round(((cpu1.user + cpu1.system) * 100) / N) / 100 : 0,
    }),
);
process.exit(0);
