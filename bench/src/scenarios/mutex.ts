/**
 * (4) Mutex, in memory, destructive tool, one key.
 *
 * - `sequential`: `calls` sequential calls through `tether([mutex()])` vs `tether([])` (same
 *   process, both tethered, so the only difference is the mutex), tinybench, rounds alternated.
 *   The difference of the means is the end-to-end cost of one uncontended acquisition; the raw
 *   `MemoryLockStore` acquire + release pair is timed apart (no transport).
 * - `concurrent`: `calls` calls sent at once, with and without the mutex: time until all answered
 *   (with the mutex they queue FIFO on one key and run one by one).
 * - `waiters`: one holder, `waiters` calls queued behind it, half of them (seeded random) cancelled
 *   by the client; then the holder is released: time to drain the queue, and the heap after GC
 *   compared with the heap before (baseline taken after a warm-up of the same size). Run twice.
 */
import { tether, handler } from '@mcp-tether/core';
import { MemoryLockStore, mutex } from '@mcp-tether/mutex';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Bench } from 'tinybench';
import { z } from 'zod';
import { connectInMemory, newMcpServer, type Connection } from '../servers.js';
import { canGc, deferred, heapAfterGc, median, rng, round, tick } from '../util.js';

export interface MutexParams {
  calls: number;
  concurrent: number;
  waiters: number;
  rounds: number;
}

function writeServer(withMutex: boolean) {
  const lock = mutex();
  const server = newMcpServer();
  tether(server, withMutex ? [lock] : []);
  let gate: Promise<void> | undefined;
  server.registerTool(
    'write',
    { inputSchema: { hold: z.boolean().optional() }, annotations: { destructiveHint: true } },
    handler(async ({ hold }) => {
      if (hold && gate) await gate;
      return { content: [{ type: 'text' as const, text: 'ok' }] };
    }),
  );
  return { server, lock, setGate: (g: Promise<void> | undefined) => (gate = g) };
}

async function until(pred: () => boolean, what: string, timeoutMs = 30_000) {
  const t0 = performance.now();
  while (!pred()) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await tick();
  }
}

const call = (c: Connection, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
  c.client.callTool(
    { name: 'write', arguments: args },
    CallToolResultSchema,
    signal ? { signal, timeout: 600_000 } : { timeout: 600_000 },
  );

function shuffle<T>(a: T[], random: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

export async function run(p: MutexParams) {
  // ---- sequential, uncontended ----
  const none = writeServer(false);
  const locked = writeServer(true);
  const cNone = await connectInMemory(none.server);
  const cLocked = await connectInMemory(locked.server);
  for (let i = 0; i < 1000; i++) {
    await call(cNone);
    await call(cLocked);
  }
  type Cell = { mean: number; p50: number; cpu: number };
  const rounds: Array<{ none: Cell; mutex: Cell }> = [];
  for (let r = 0; r < p.rounds; r++) {
    const row = { none: { mean: NaN, p50: NaN, cpu: NaN }, mutex: { mean: NaN, p50: NaN, cpu: NaN } };
    const order: Array<['none' | 'mutex', Connection]> = [
      ['none', cNone],
      ['mutex', cLocked],
    ];
    if (r % 2) order.reverse();
    for (const [name, c] of order) {
      const bench = new Bench({ iterations: p.calls, time: 0, warmup: false, throws: true });
      bench.add(name, async () => {
        await call(c);
      });
      const cpu0 = process.cpuUsage();
      await bench.run();
      const cpu = process.cpuUsage(cpu0);
      const res = bench.tasks[0]!.result as { state: string; latency: { mean: number; p50: number } };
      if (res.state !== 'completed') throw new Error(`mutex bench ${name}: ${res.state}`);
      row[name] = {
        mean: res.latency.mean * 1000,
        p50: res.latency.p50 * 1000,
        cpu: (cpu.user + cpu.system) / p.calls,
      };
    }
    rounds.push(row);
  }
  const statsSeq = locked.lock.stats();
  if (statsSeq.acquired < p.calls) throw new Error(`mutex acquired only ${statsSeq.acquired} times`);

  // Raw store cost: acquire + release on one key, no transport.
  const store = new MemoryLockStore();
  const signal = new AbortController().signal;
  const storeBench = new Bench({
    iterations: p.calls * 10,
    time: 0,
    warmupIterations: p.calls,
    warmupTime: 0,
    throws: true,
  });
  storeBench.add('acquire+release', async () => {
    const release = await store.acquire('k', { max: 1, maxQueue: Infinity, signal });
    await release();
  });
  await storeBench.run();
  const storeRes = storeBench.tasks[0]!.result as { latency: { mean: number; p50: number } };

  // ---- concurrent, one key ----
  const concurrent: Record<string, number> = {};
  for (const [name, c] of [
    ['none', cNone],
    ['mutex', cLocked],
  ] as const) {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: p.concurrent }, () => call(c)));
    concurrent[name] = performance.now() - t0;
  }
  await cNone.close();

  // ---- queued waiters, half cancelled ----
  const cycles: Array<Record<string, number>> = [];
  const random = rng(7);
  const cycle = async () => {
    const gate = deferred();
    locked.setGate(gate.promise);
    const holder = call(cLocked, { hold: true });
    await until(() => locked.lock.stats().running === 1, 'the holder');
    const controllers = Array.from({ length: p.waiters }, () => new AbortController());
    const waiting = controllers.map((ac) =>
      call(cLocked, {}, ac.signal).then(
        () => 'ok' as const,
        () => 'aborted' as const,
      ),
    );
    await until(() => locked.lock.stats().queued === p.waiters, 'the waiters to queue');
    const heapQueued = canGc ? await heapAfterGc() : NaN;
    const victims = shuffle([...controllers], random).slice(0, Math.floor(p.waiters / 2));
    const tAbort = performance.now();
    for (const ac of victims) ac.abort('bench');
    await until(() => locked.lock.stats().queued === p.waiters - victims.length, 'the aborted waiters to leave');
    const leaveMs = performance.now() - tAbort;
    const t0 = performance.now();
    gate.resolve();
    await holder;
    const outcomes = await Promise.all(waiting);
    await until(() => locked.lock.stats().running === 0 && locked.lock.stats().queued === 0, 'the queue to empty');
    const drainMs = performance.now() - t0;
    locked.setGate(undefined);
    const ok = outcomes.filter((o) => o === 'ok').length;
    if (ok !== p.waiters - victims.length) throw new Error(`${ok} waiters ran, expected ${p.waiters - victims.length}`);
    return { aborted: victims.length, ran: ok, leaveMs, drainMs, heapQueued };
  };
  // Warm-up cycle of the same size, so that lazily grown structures exist in the baseline.
  await cycle();
  const baseline = canGc ? await heapAfterGc() : NaN;
  for (let i = 0; i < 2; i++) {
    const c = await cycle();
    const after = canGc ? await heapAfterGc() : NaN;
    cycles.push({
      aborted: c.aborted,
      ran: c.ran,
      leaveMs: round(c.leaveMs, 2),
      drainMs: round(c.drainMs, 1),
      heapWithQueueKiB: round((c.heapQueued - baseline) / 1024, 1),
      heapAfterDrainKiB: round((after - baseline) / 1024, 1),
    });
  }
  const finalStats = locked.lock.stats();
  await cLocked.close();

  return {
    sequential: {
      calls: p.calls,
      rounds: p.rounds,
      noneUs: round(median(rounds.map((r) => r.none.mean)), 2),
      mutexUs: round(median(rounds.map((r) => r.mutex.mean)), 2),
      overheadUs: round(median(rounds.map((r) => r.mutex.mean - r.none.mean)), 2),
      ratio: round(median(rounds.map((r) => r.mutex.mean / r.none.mean)), 3),
      noneP50Us: round(median(rounds.map((r) => r.none.p50)), 2),
      mutexP50Us: round(median(rounds.map((r) => r.mutex.p50)), 2),
      overheadP50Us: round(median(rounds.map((r) => r.mutex.p50 - r.none.p50)), 2),
      noneCpuUs: round(median(rounds.map((r) => r.none.cpu)), 2),
      mutexCpuUs: round(median(rounds.map((r) => r.mutex.cpu)), 2),
      overheadCpuUs: round(median(rounds.map((r) => r.mutex.cpu - r.none.cpu)), 2),
      storeAcquireReleaseUs: round(storeRes.latency.mean * 1000, 3),
    },
    concurrent: {
      calls: p.concurrent,
      noneMs: round(concurrent.none!, 0),
      mutexMs: round(concurrent.mutex!, 0),
      ratio: round(concurrent.mutex! / concurrent.none!, 3),
    },
    waiters: {
      waiters: p.waiters,
      cycles,
      finalStats: { queued: finalStats.queued, running: finalStats.running, abandoned: finalStats.abandoned },
    },
  };
}
