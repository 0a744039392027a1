/**
 * Creation, ownership (rule 1) and idempotency (rule 3) of the `JobStore` contract; registered by `jobStoreContract` (`@mcp-tether/jobs/testing`).
 */
import { describe, expect, it } from 'vitest';
import { newJobId } from './ids.js';
import type { SuiteContext } from './contract-context.js';

export function basicRules({ setup, job, cap, now, advance, TTL, collect }: SuiteContext): void {
  describe('create and get', () => {
    it('stores the job as given and fills createdAt, updatedAt, partialLength', async () => {
      const { store } = await setup();
      const spec = job({ pollIntervalMs: 1000, statusMessage: 'starting', progress: 0, total: 10 });
      const before = now();
      const { job: made, created } = await store.create(spec, cap);
      expect(created).toBe(true);
      expect(made).toMatchObject({ ...spec, partialLength: 0 });
      expect(made.createdAt).toBeGreaterThanOrEqual(before);
      expect(made.updatedAt).toBe(made.createdAt);
      expect(await store.get(spec.id, 'alice')).toEqual(made);
    });

    it('rejects a second create with an existing id', async () => {
      const { store } = await setup();
      const spec = job();
      await store.create(spec, cap);
      await expect(store.create({ ...spec, owner: 'bob' }, cap)).rejects.toThrow();
      expect((await store.get(spec.id, 'alice'))?.owner).toBe('alice');
      expect(await store.get(spec.id, 'bob')).toBeUndefined();
    });

    it('hands out copies: changing a returned record changes nothing stored', async () => {
      const { store } = await setup();
      const spec = job();
      const { job: made } = await store.create(spec, cap);
      made.status = 'completed';
      const got = (await store.get(spec.id, 'alice'))!;
      got.statusMessage = 'tampered';
      expect(await store.get(spec.id, 'alice')).toMatchObject({ status: 'working' });
      expect((await store.get(spec.id, 'alice'))!.statusMessage).toBeUndefined();
    });

    it('an unknown id is undefined everywhere, without errors', async () => {
      const { store } = await setup();
      const id = newJobId();
      expect(await store.get(id, 'alice')).toBeUndefined();
      expect(await store.update(id, { status: 'completed' })).toBeUndefined();
      expect(await store.readPartial(id, 'alice', 0)).toBeUndefined();
      expect(await store.signal(id, 'alice', { type: 'cancel' })).toBe(false);
      expect(await store.appendPartial(id, 'x')).toBe(-1);
    });
  });

  describe('rule 1: ownership (no existence leak)', () => {
    it('another owner sees exactly what an unknown id shows', async () => {
      const { store } = await setup();
      const spec = job();
      await store.create(spec, cap);
      await store.appendPartial(spec.id, 'secret chunk');
      const unknown = newJobId();
      expect(await store.get(spec.id, 'bob')).toEqual(await store.get(unknown, 'bob'));
      expect(await store.readPartial(spec.id, 'bob', 0)).toEqual(await store.readPartial(unknown, 'bob', 0));
      expect(await store.signal(spec.id, 'bob', { type: 'cancel' })).toBe(false);
      expect((await store.list('bob')).jobs).toEqual([]);
      expect((await store.get(spec.id, 'alice'))!.status).toBe('working');
    });

    it("a foreign cancel never reaches the job's listeners", async () => {
      const { store, peer } = await setup();
      const spec = job();
      await store.create(spec, cap);
      const c = collect(store, spec.id);
      expect(await peer.signal(spec.id, 'bob', { type: 'cancel', reason: 'x' })).toBe(false);
      expect(await peer.signal(spec.id, 'alice', { type: 'cancel', reason: 'mine' })).toBe(true);
      const got = await c.until(1);
      expect(got).toEqual([{ type: 'cancel', reason: 'mine' }]);
      c.off();
    });
  });

  describe('rule 3: idempotency', () => {
    it('a repeated key of the same owner returns the existing job and stores nothing', async () => {
      const { store } = await setup();
      const first = job({ idempotencyKey: 'reindex-1' });
      await store.create(first, cap);
      const again = await store.create(job({ idempotencyKey: 'reindex-1' }), cap);
      expect(again.created).toBe(false);
      expect(again.job.id).toBe(first.id);
      expect((await store.list('alice')).jobs).toHaveLength(1);
    });

    it('also once the job is terminal (results are kept until TTL)', async () => {
      const { store } = await setup();
      const first = job({ idempotencyKey: 'k' });
      await store.create(first, cap);
      await store.update(first.id, { status: 'completed', result: { content: [] } });
      const again = await store.create(job({ idempotencyKey: 'k' }), cap);
      expect(again).toMatchObject({
        created: false,
        job: { id: first.id, status: 'completed', result: { content: [] } },
      });
    });

    it('the same key of another owner is another job', async () => {
      const { store } = await setup();
      await store.create(job({ idempotencyKey: 'k' }), cap);
      const other = await store.create(job({ owner: 'bob', idempotencyKey: 'k' }), cap);
      expect(other.created).toBe(true);
      expect(other.job.owner).toBe('bob');
    });

    it('the key is free again once the job expired', async () => {
      const { store } = await setup();
      const first = job({ idempotencyKey: 'k', ttlMs: TTL });
      await store.create(first, cap);
      await advance(TTL + 200);
      const again = await store.create(job({ idempotencyKey: 'k' }), cap);
      expect(again.created).toBe(true);
      expect(again.job.id).not.toBe(first.id);
    });
  });
}
