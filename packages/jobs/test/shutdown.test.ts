/**
 * The in-process executor's shutdown, on the wire: `engine.close({ graceMs })` refuses new jobs,
 * lets a job that finishes within the grace keep its result, ends the one still running as
 * `cancelled` ("shutdown: …", its `finally` once) before it resolves — no job left `working` — and
 * closes the store the engine made. Checkpoints: `ctx.job.attempt`, `checkpoint(value)` on the record.
 */
import { handler, type CallContext } from '@mcp-tether/core';
import { sleep, until } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { expect, it } from 'vitest';
import { JobEngine, MemoryJobStore, jobs, MAX_CHECKPOINT_BYTES } from '../src/index.js';
import { as, build, handleOf, newProbe } from './fixtures.js';

class ClosingStore extends MemoryJobStore {
  closed = 0;
  override async close(): Promise<void> {
    this.closed++;
    await super.close();
  }
}

describeEachSdk('jobs: engine.close({ graceMs })', (sdk) => {
  it('a job done within the grace keeps its result; one still running ends cancelled (shutdown) before close resolves', async () => {
    const store = new ClosingStore({ sweepIntervalMs: 0 });
    const engine = new JobEngine({ store, progressWriteMs: 0 });
    const probe = newProbe();
    const j = jobs({ engine, tools: ['corpus.reindex'], inlineMs: 0 });
    const kit = await sdk.connect(() => build(sdk, [j], j, probe), as(sdk, 'alice'));
    try {
      // short: 3 × 50 ms; long: 400 × 50 ms (far past the grace)
      const short = handleOf(await kit.callTool('corpus.reindex', { files: 3, delayMs: 50 }));
      const long = handleOf(await kit.callTool('corpus.reindex', { files: 400, delayMs: 50 }));
      await until(() => probe.started.length === 2, 10_000, 'both jobs to start');
      const owner = probe.owners.get(short.jobId)!;
      // generous grace for the short job on a loaded machine; the long one cannot finish in it
      await engine.close({ graceMs: 5_000, closeStore: true });
      // close resolved: no job is working any more, the outcomes are written
      const a = await store.get(short.jobId, owner);
      const b = await store.get(long.jobId, owner);
      expect(a).toMatchObject({ status: 'completed' });
      expect(b?.status).toBe('cancelled');
      expect(b?.statusMessage).toMatch(/^shutdown: the server stopped before this job finished/);
      expect(probe.finallies.get(long.jobId)).toBe(1);
      expect(probe.results).toEqual([short.jobId]);
      expect(store.closed).toBe(1);
      // no new job after close: a clear error, nothing stored
      const late = await kit.callTool('corpus.reindex', { files: 1, delayMs: 0 }).catch((e: unknown) => e);
      const text = late instanceof Error ? late.message : JSON.stringify(late);
      expect(text).toMatch(/shutting down/i);
      expect(probe.started.length).toBe(2);
      await engine.close({ graceMs: 0 }); // idempotent
    } finally {
      await kit.close();
    }
  });
});

describeEachSdk('jobs: ctx.job.attempt and checkpoints', (sdk) => {
  it('attempt 1, no resumeFrom; each checkpoint lands on the record in order; oversized or non-JSON values throw', async () => {
    const store = new MemoryJobStore({ sweepIntervalMs: 0 });
    const engine = new JobEngine({ store, progressWriteMs: 0 });
    const seen: unknown[] = [];
    const owners: string[] = [];
    const j = jobs({ engine, tools: ['index'], inlineMs: 0 });
    const probe = newProbe();
    const kit = await sdk.connect(
      () => {
        const server = build(sdk, [j], j, probe);
        server.registerTool(
          'index',
          {},
          handler(async (ctx: CallContext) => {
            seen.push(ctx.job?.attempt, ctx.job?.resumeFrom);
            owners.push(engine.ownerOf(ctx));
            for (let done = 1; done <= 3; done++) {
              await sleep(5, ctx.signal);
              expect(await ctx.job!.checkpoint({ done })).toBe(true);
            }
            expect(() => ctx.job!.checkpoint('x'.repeat(MAX_CHECKPOINT_BYTES + 1))).toThrow(RangeError);
            expect(() => ctx.job!.checkpoint(10n)).toThrow(TypeError);
            return { content: [{ type: 'text' as const, text: 'indexed' }] };
          }) as never,
        );
        return server;
      },
      as(sdk, 'alice'),
    );
    try {
      const h = handleOf(await kit.callTool('index', {}));
      let done: any;
      for (let i = 0; i < 20; i++) {
        done = handleOf(await kit.callTool('jobs.status', { jobId: h.jobId, waitMs: 2_000 }));
        if (done.status !== 'working') break;
      }
      expect(done.status).toBe('completed');
      expect(seen).toEqual([1, undefined]);
      const rec = await store.get(h.jobId, owners[0]!);
      expect(rec?.checkpoint).toEqual({ done: 3 });
    } finally {
      await kit.close();
      await engine.close({ graceMs: 0 });
    }
  });
});
