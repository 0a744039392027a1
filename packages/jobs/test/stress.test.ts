/**
 * 1 000 jobs at once with random cancels, on the wire: each job ends exactly once (one terminal
 * write, its finally once), the store is empty after the TTL, and the heap returns to its baseline.
 */
import { cancel } from '@mcp-tether/cancel';
import { pause, until } from '@mcp-tether/testing';
import { describeEachSdk, type SdkTarget } from '@mcp-tether/testing/matrix';
import { expect, it } from 'vitest';
import { MemoryJobStore, isTerminal, jobs, type JobPatch, type JobRecord } from '../src/index.js';
import { as, build, handleOf, newProbe } from './fixtures.js';

/** A memory store that counts terminal transitions per job. */
class CountingStore extends MemoryJobStore {
  readonly terminal = new Map<string, number>();
  override async update(id: string, patch: JobPatch): Promise<JobRecord | undefined> {
    const r = await super.update(id, patch);
    if (r !== undefined && isTerminal(r.status)) this.terminal.set(id, (this.terminal.get(id) ?? 0) + 1);
    return r;
  }
}

const N = 1_000;
/** Long enough that no job expires while the round runs on a loaded machine; then the store's clock jumps past it. */
const TTL = 30 * 60_000; // 60 s was not: a round took 143 s at load 40, and jobs expired mid-round (JOB_NOT_FOUND)

/** Seeded PRNG (mulberry32): the same cancels every run. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Made outside `round` so that the clock's closure does not keep `round`'s scope (the client) alive. */
function countingStore() {
  const clock = { offset: 0 };
  return { clock, store: new CountingStore({ sweepIntervalMs: 100, now: () => Date.now() + clock.offset }) };
}

async function round(sdk: SdkTarget, n: number, seed: number) {
  const random = rng(seed);
  const probe = newProbe();
  const errors: unknown[] = [];
  const { clock, store } = countingStore();
  const j = jobs({
    tools: ['corpus.reindex'],
    inlineMs: 0,
    ttlMs: TTL,
    maxLivePerClient: 10 * n,
    maxLive: 10 * n,
    store,
    leaseMs: 0,
  });
  const kit = await sdk.connect(() => build(sdk, [cancel(), j], j, probe, errors), as(sdk, 'alice'));
  // Three in ten are long (cancelled while they run, whatever the machine's load); the rest are short,
  // and one in ten of those is cancelled too (a race with its end: either outcome, exactly once).
  const long = Array.from({ length: n }, () => random() < 0.3);
  const calls = long.map((isLong) =>
    kit.callTool(
      'corpus.reindex',
      isLong
        ? { files: 400, delayMs: 25 }
        : { files: 1 + Math.floor(random() * 4), delayMs: Math.floor(random() * 40) },
      { timeout: 30_000 },
    ),
  );
  const results = await Promise.all(calls);
  const handles = results.filter((r: any) => r.structuredContent !== undefined).map(handleOf);
  const longIds = new Set(
    results.flatMap((r: any, i) => (long[i] && r.structuredContent ? [r.structuredContent.jobId as string] : [])),
  );
  const toCancel = handles.filter((h) => longIds.has(h.jobId) || random() < 0.1);
  const cancels = await Promise.all(toCancel.map((h) => kit.callTool('jobs.cancel', { jobId: h.jobId })));
  const finals = await Promise.all(
    handles.map(async (h) => {
      for (let i = 0; i < 20; i++) {
        const r = handleOf(await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 }));
        if ((r as { code?: string }).code !== undefined) throw new Error(`job ${h.jobId}: ${JSON.stringify(r)}`);
        if (r.status !== 'working') return r;
      }
      throw new Error(`job ${h.jobId} never ended`);
    }),
  );
  return { clock, probe, errors, store, j, kit, results, handles, toCancel, cancels, finals, longIds };
}

describeEachSdk('jobs: 1 000 jobs at once', (sdk) => {
  it('each ends exactly once, random cancels, store empty after TTL, heap back to baseline', {
    timeout: 600_000,
  }, async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    // warm-up (modules, JIT), then the baseline
    {
      const w = await round(sdk, 50, 1);
      await w.kit.close();
      await w.store.close();
    }
    gc?.();
    gc?.();
    const baseline = process.memoryUsage().heapUsed;

    let r: Awaited<ReturnType<typeof round>> | undefined = await round(sdk, N, 42);
    const { probe, store, j } = r;
    expect(probe.started.length).toBe(N);
    // every job ended exactly once
    const ids = probe.started;
    expect(new Set(ids).size).toBe(N);
    // A cancelled job reads `cancelled` once its abort is decided; its handler's `finally` may run a little later.
    await until(() => ids.every((id) => probe.finallies.has(id)), 60_000, 'every handler finally');
    // ... and its terminal record is written through the store's queue after that.
    await until(() => r!.handles.every((h) => store.terminal.has(h.jobId)), 60_000, 'every terminal write');
    for (const id of ids) expect(probe.finallies.get(id), id).toBe(1);
    for (const h of r.handles) expect(store.terminal.get(h.jobId), h.jobId).toBe(1);
    const cancelled = new Set(
      r.cancels.filter((c: any) => handleOf(c).status === 'cancelled').map((c: any) => handleOf(c).jobId),
    );
    expect(r.longIds.size).toBeGreaterThan(200);
    for (const id of r.longIds) expect(cancelled.has(id), id).toBe(true);
    for (const f of r.finals) {
      expect(['completed', 'cancelled']).toContain(f.status);
      if (cancelled.has(f.jobId)) expect(f.status).toBe('cancelled');
      if (f.status === 'completed') expect(probe.results).toContain(f.jobId);
      else expect(f.result).toBeUndefined();
    }
    expect(r.errors).toEqual([]);
    expect(j.engine.running).toBe(0);

    // store empty after the TTL (the store's clock moves past it; its own sweep timer forgets them)
    expect(store.size).toBe(N);
    r.clock.offset += TTL + 1;
    await pause(300);
    expect(store.size).toBe(0);
    await r.kit.close();
    await store.close();
    // what the test itself kept for its checks: the handlers' signals (each holds its call's abort reason)
    probe.signals.clear();
    r = undefined;

    if (gc !== undefined) {
      await pause(50);
      gc();
      gc();
      const grown = process.memoryUsage().heapUsed - baseline;
      // 1 000 jobs held ~ several MB; back to baseline within a small margin
      expect(grown, `heap grew by ${(grown / 1024 / 1024).toFixed(1)} MiB`).toBeLessThan(8 * 1024 * 1024);
    }
  });
});
