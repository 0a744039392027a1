/**
 * Rule 8 of the {@link JobStore} contract (fencing), for stores with `claim`; registered by
 * `jobStoreContract` (`@mcp-tether/jobs/testing`).
 */
import { describe, expect, it } from 'vitest';
import { newJobId } from './ids.js';
import type { CreateLimits, JobStore, NewJob } from './store.js';

/** What the contract suite hands the fencing rules. */
export interface FencingContext {
  setup(): Promise<{ store: JobStore; peer: JobStore }>;
  job(over?: Partial<NewJob>): NewJob;
  cap: CreateLimits;
  now(): number;
}

/** Register rule 8 (a store without `claim` skips it). */
export function fencingRules({ setup, job, cap, now }: FencingContext): void {
  describe('rule 8: fencing (stores with claim)', () => {
    it('each claim is a new attempt with a greater fence; writes with an old fence change nothing', async (t) => {
      const { store, peer } = await setup();
      if (store.claim === undefined || peer.claim === undefined) return t.skip();
      const { job: j } = await store.create(job(), cap);
      const first = await store.claim(j.id, 'worker-a', now() + 60_000);
      expect(first).toMatchObject({ attempt: 1, runner: 'worker-a', status: 'working' });
      const second = await peer.claim(j.id, 'worker-b', now() + 60_000);
      expect(second).toMatchObject({ attempt: 2, runner: 'worker-b' });
      expect(second!.fence!).toBeGreaterThan(first!.fence!);
      // the stale attempt (worker-a) can no longer write: no progress, no partial, no result
      expect(await store.update(j.id, { progress: 5 }, { fence: first!.fence! })).toBeUndefined();
      expect(await store.appendPartial(j.id, 'stale', { fence: first!.fence! })).toBe(-1);
      expect(
        await store.update(j.id, { status: 'completed', result: { content: [] } }, { fence: first!.fence! }),
      ).toBeUndefined();
      expect((await store.get(j.id, 'alice'))!).toMatchObject({ status: 'working', partialLength: 0 });
      // the current attempt writes, checkpoint included; the result once
      expect(await peer.appendPartial(j.id, 'fresh', { fence: second!.fence! })).toBe(1);
      expect(await peer.update(j.id, { checkpoint: { done: 3 } }, { fence: second!.fence! })).toMatchObject({
        checkpoint: { done: 3 },
      });
      const done = await peer.update(
        j.id,
        { status: 'completed', result: { content: [{ type: 'text', text: 'ok' }] } },
        { fence: second!.fence! },
      );
      expect(done).toMatchObject({ status: 'completed', attempt: 2, checkpoint: { done: 3 } });
      // a terminal job is not claimed again
      expect(await store.claim(j.id, 'worker-c', now() + 60_000)).toBeUndefined();
      expect(await store.claim(newJobId(), 'worker-c', now() + 60_000)).toBeUndefined();
    });

    it('a write without a fence (a front: cancel) is not fenced; an input_required job keeps its questions when claimed', async (t) => {
      const { store } = await setup();
      if (store.claim === undefined) return t.skip();
      const { job: j } = await store.create(job(), cap);
      const a = await store.claim(j.id, 'w', undefined);
      const asked = { q: { method: 'elicitation/create' as const, params: { message: 'ok?' } } };
      await store.update(j.id, { status: 'input_required', inputRequests: asked }, { fence: a!.fence! });
      const b = await store.claim(j.id, 'w2', undefined);
      expect(b).toMatchObject({ status: 'input_required', inputRequests: asked, attempt: 2 });
      expect(await store.update(j.id, { status: 'cancelled', statusMessage: 'by the client' })).toMatchObject({
        status: 'cancelled',
      });
    });
  });
}
