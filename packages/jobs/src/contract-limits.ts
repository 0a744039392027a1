/**
 * Caps on live jobs (rule 4) and retention of finished jobs (rule 9) of the `JobStore` contract; registered by `jobStoreContract` (`@mcp-tether/jobs/testing`).
 */
import { describe, expect, it } from 'vitest';
import { isJobLimit, type JobStore } from './store.js';
import type { SuiteContext } from './contract-context.js';

export function limitRules({ setup, job, cap }: SuiteContext): void {
  describe('rule 4: cap on live jobs per owner', () => {
    it('refuses past maxLivePerOwner with a JobLimitError; terminal jobs and other owners do not count', async () => {
      const { store } = await setup();
      const limit = { maxLivePerClient: 2 };
      const a = job();
      await store.create(a, limit);
      await store.create(job(), limit);
      const refused = await store.create(job(), limit).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isJobLimit(refused)).toBe(true);
      await store.create(job({ owner: 'bob' }), limit);
      await store.update(a.id, { status: 'cancelled' });
      const c = job();
      expect((await store.create(c, limit)).created).toBe(true);
      expect(await store.get(c.id, 'alice')).toBeDefined();
    });

    it('counts per client key, not per owner: one client at its cap leaves another client of the same owner served; the global ceiling holds for all', async () => {
      const { store } = await setup();
      const anon = (client: string) => job({ owner: 'anonymous', client });
      const limit = { maxLivePerClient: 2, maxLive: 5 };
      await store.create(anon('ip:attacker'), limit);
      await store.create(anon('ip:attacker'), limit);
      const refused = await store.create(anon('ip:attacker'), limit).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isJobLimit(refused)).toBe(true);
      expect((refused as { scope?: string }).scope).toBe('client');
      const victim = anon('ip:victim');
      expect((await store.create(victim, limit)).created).toBe(true);
      expect(await store.get(victim.id, 'anonymous')).toBeDefined();
      await store.create(anon('ip:c'), limit);
      await store.create(anon('ip:d'), limit); // 5 live in all
      const ceiling = await store.create(anon('ip:e'), limit).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isJobLimit(ceiling)).toBe(true);
      expect((ceiling as { scope?: string }).scope).toBe('global');
      await store.update(victim.id, { status: 'completed', result: { content: [] } });
      expect((await store.create(anon('ip:e'), limit)).created).toBe(true);
    });

    it('an idempotent repeat is not refused by the cap', async () => {
      const { store } = await setup();
      const limit = { maxLivePerClient: 1 };
      const a = job({ idempotencyKey: 'k' });
      await store.create(a, limit);
      expect((await store.create(job({ idempotencyKey: 'k' }), limit)).job.id).toBe(a.id);
    });
  });

  describe('rule 9: retention of finished jobs', () => {
    const finish = (store: JobStore, id: string) => store.update(id, { status: 'completed', result: { content: [] } });
    const alive = async (store: JobStore, ids: string[], owner = 'alice') =>
      Promise.all(ids.map(async (id) => (await store.get(id, owner)) !== undefined));

    it('a client keeps its newest maxFinishedPerClient finished jobs: the first to finish goes first; live jobs and other clients stay', async () => {
      const { store } = await setup({ maxFinishedPerClient: 3 });
      const mine = [];
      for (let i = 0; i < 5; i++) mine.push((await store.create(job({ client: 'ip:a' }), cap)).job.id);
      const live = (await store.create(job({ client: 'ip:a' }), cap)).job.id;
      const theirs = [];
      for (let i = 0; i < 3; i++) theirs.push((await store.create(job({ client: 'ip:b' }), cap)).job.id);
      for (const id of theirs) await finish(store, id);
      // finish order is not creation order: 1, 0, 2, 3, 4
      for (const i of [1, 0, 2, 3, 4]) await finish(store, mine[i]!);
      expect(await alive(store, mine)).toEqual([false, false, true, true, true]);
      expect(await store.readPartial(mine[1]!, 'alice', 0)).toBeUndefined();
      expect((await store.list('alice', { limit: 50 })).jobs.map((j) => j.id)).not.toContain(mine[0]);
      expect(await alive(store, [live])).toEqual([true]);
      expect(await alive(store, theirs)).toEqual([true, true, true]);
    });

    it('a client keeps maxRetainedBytesPerClient bytes of finished jobs (record and partial output), oldest evicted first; the job that just ended stays', async () => {
      const { store } = await setup({ maxRetainedBytesPerClient: 10_000 });
      const ids = [];
      for (let i = 0; i < 3; i++) {
        const { job: j } = await store.create(job({ client: 'ip:a' }), cap);
        ids.push(j.id);
        expect(await store.appendPartial(j.id, 'x'.repeat(2000))).toBe(1);
        expect(await store.appendPartial(j.id, 'é'.repeat(1000))).toBe(2); // 2 000 UTF-8 bytes
      }
      for (const id of ids) await finish(store, id);
      expect(await alive(store, ids)).toEqual([false, true, true]);
      const big = (await store.create(job({ client: 'ip:a' }), cap)).job.id;
      await store.appendPartial(big, 'y'.repeat(12_000));
      await finish(store, big);
      expect(await alive(store, [...ids, big])).toEqual([false, false, false, true]);
      expect((await store.readPartial(big, 'alice', 0))!.chunks).toEqual(['y'.repeat(12_000)]);
    });

    it('the global ceiling: past maxFinished the oldest finished job of any client goes', async () => {
      const { store } = await setup({ maxFinished: 4 });
      const ids = [];
      for (const client of ['ip:a', 'ip:b', 'ip:c']) {
        for (let i = 0; i < 2; i++) {
          const { job: j } = await store.create(job({ client }), cap);
          ids.push(j.id);
          await finish(store, j.id);
        }
      }
      expect(await alive(store, ids)).toEqual([false, false, true, true, true, true]);
    });

    it("an evicted job's idempotency key is free again", async () => {
      const { store } = await setup({ maxFinishedPerClient: 1 });
      const first = job({ idempotencyKey: 'k' });
      await store.create(first, cap);
      await finish(store, first.id);
      const other = (await store.create(job(), cap)).job.id;
      await finish(store, other);
      expect(await alive(store, [first.id, other])).toEqual([false, true]);
      const again = await store.create(job({ idempotencyKey: 'k' }), cap);
      expect(again.created).toBe(true);
    });
  });
}
