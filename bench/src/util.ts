/** Small measuring helpers: percentiles, heap after GC, CPU deltas, timers alive. */
import { createRequire } from 'node:module';
import { getHeapStatistics } from 'node:v8';

/** Percentile (0..100) of unsorted samples, linear interpolation. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const s = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (s.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return s[lo]! + (s[hi]! - s[lo]!) * (rank - lo);
}

export const median = (samples: readonly number[]) => percentile(samples, 50);
export const mean = (samples: readonly number[]) => samples.reduce((a, b) => a + b, 0) / samples.length;

const gcFn = (globalThis as { gc?: () => void }).gc;

/** True when the process runs with `--expose-gc`. */
export const canGc = typeof gcFn === 'function';

/**
 * Used heap in bytes after full garbage collections (repeated until the number settles, so
 * weak references and finalizers that free more on a second pass are counted).
 */
export async function heapAfterGc(): Promise<number> {
  if (!gcFn) throw new Error('run with node --expose-gc');
  let last = Infinity;
  for (let i = 0; i < 6; i++) {
    // Let pending microtasks, timers and immediates finish so nothing is held by a stack frame.
    await new Promise((r) => setImmediate(r));
    gcFn();
    const used = getHeapStatistics().used_heap_size;
    if (Math.abs(last - used) < 16 * 1024) return used;
    last = used;
  }
  return last;
}

/** CPU time (user + system) of this process in ms since `since` (a `process.cpuUsage()` value). */
export function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

/**
 * Timers alive in this process (setTimeout/setInterval not yet fired or cleared).
 *
 * `all` walks Node's internal timer lists (needs `--expose-internals`; `undefined` without it):
 * it counts unref'd timers too. `refed` is what `process.getActiveResourcesInfo()` reports as
 * 'Timeout' entries: only timers that keep the process alive, so an unref'd timer is not in it.
 */
export function timersAlive(): { all: number | undefined; refed: number } {
  const refed = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  return { all: internalTimerCount(), refed };
}

type TimerList = { _idleNext?: TimerList };
let timerListMap: Record<string, TimerList> | null | undefined;
function internalTimerCount(): number | undefined {
  if (timerListMap === undefined) {
    try {
      timerListMap = (createRequire(import.meta.url)('internal/timers') as { timerListMap: Record<string, TimerList> })
        .timerListMap;
    } catch {
      timerListMap = null;
    }
  }
  if (!timerListMap) return undefined;
  let n = 0;
  for (const key of Object.keys(timerListMap)) {
    const list = timerListMap[key]!;
    for (let t = list._idleNext; t && t !== list; t = t._idleNext) n++;
  }
  return n;
}

/** Resolve after `ms` ms. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolve on the next turn of the event loop (after I/O callbacks). */
export const tick = () => new Promise<void>((r) => setImmediate(r));

/** Round to `d` decimals. */
export const round = (x: number, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x);

/** A promise with its resolve function outside. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A seeded pseudo-random generator (mulberry32), so runs cancel at the same points. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
