/**
 * The live-job cap per principal (a clean BUSY refusal past it, other principals unaffected) and the
 * idempotency key (a repeated start returns the existing job and runs nothing), on the wire.
 */
import { cancel } from '@mcp-tether/cancel';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { expect, it } from 'vitest';
import { jobs } from '../src/index.js';
import { as, build, finish, handleOf, newProbe } from './fixtures.js';

describeEachSdk('jobs: limits', (sdk) => {
  it('past maxLivePerOwner: BUSY for that principal only; a finished job frees its place', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50, maxLivePerOwner: 2 });
    const factory = () => build(sdk, [cancel(), j], j, probe);
    const alice = await sdk.connect(factory, as(sdk, 'alice'));
    const bob = await sdk.connect(factory, as(sdk, 'bob'));
    try {
      const h1 = handleOf(await alice.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      const h2 = handleOf(await alice.callTool('corpus.reindex', { files: 1_000, delayMs: 20 }));
      expect([h1.status, h2.status]).toEqual(['working', 'working']);
      const busy = await alice.callTool('corpus.reindex', { files: 1, delayMs: 0 });
      expect(busy.isError).toBe(true);
      expect(busy.structuredContent).toMatchObject({ code: 'BUSY', live: 2 });
      expect(firstText(busy)).toMatch(/jobs\.cancel/);
      expect(probe.started).toHaveLength(2); // the refused call never ran
      // another principal is not affected
      expect(firstText(await finish(bob, await bob.callTool('corpus.reindex', { files: 1, delayMs: 0 })))).toBe(
        'indexed 1 files',
      );
      // a cancelled job frees its place
      await alice.callTool('jobs.cancel', { jobId: h1.jobId });
      expect(firstText(await finish(alice, await alice.callTool('corpus.reindex', { files: 1, delayMs: 0 })))).toBe(
        'indexed 1 files',
      );
      await alice.callTool('jobs.cancel', { jobId: h2.jobId });
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it('a repeated idempotency key returns the existing job and runs nothing', async () => {
    const probe = newProbe();
    const j = jobs({ tools: ['corpus.reindex'], inlineMs: 50 });
    const factory = () => build(sdk, [cancel(), j], j, probe);
    const alice = await sdk.connect(factory, as(sdk, 'alice'));
    const bob = await sdk.connect(factory, as(sdk, 'bob'));
    const meta = { 'io.github.mcp-tether/idempotencyKey': 'reindex-2026-12-01' };
    try {
      const first = handleOf(await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      const again = handleOf(await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      expect(again.jobId).toBe(first.jobId);
      expect(probe.started).toEqual([first.jobId]);
      // the same key of another principal is another job
      const other = handleOf(await bob.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta }));
      expect(other.jobId).not.toBe(first.jobId);
      // once done, a repeat returns the finished job's result (still nothing runs)
      let done: any;
      for (let i = 0; i < 20; i++) {
        done = await alice.callTool('jobs.status', { jobId: first.jobId, waitMs: 2_000 });
        if (handleOf(done).status !== 'working') break;
      }
      const repeat = await alice.callTool('corpus.reindex', { files: 20, delayMs: 20 }, { meta });
      expect(handleOf(repeat)).toMatchObject({ jobId: first.jobId, status: 'completed' });
      expect(firstText(repeat)).toBe('indexed 20 files');
      expect(probe.started.filter((id) => id === first.jobId)).toHaveLength(1);
      expect(probe.started).toHaveLength(2);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});
