/**
 * Partial output and `list` with opaque cursors (rule 10) of the `JobStore` contract; registered by `jobStoreContract` (`@mcp-tether/jobs/testing`).
 */
import { describe, expect, it } from 'vitest';
import type { JobRecord } from './store.js';
import type { SuiteContext } from './contract-context.js';

export function listRules({ setup, job, cap, advance, realTime, collect }: SuiteContext): void {
  describe('partial output', () => {
    it('appends count up, reads from an offset return only what is new, each append is signalled', async () => {
      const { store, peer } = await setup();
      const spec = job();
      await store.create(spec, cap);
      const c = collect(peer, spec.id);
      expect(await store.appendPartial(spec.id, 'a.txt\n')).toBe(1);
      expect(await store.appendPartial(spec.id, 'b.txt\n')).toBe(2);
      expect(await store.readPartial(spec.id, 'alice', 0)).toEqual({ chunks: ['a.txt\n', 'b.txt\n'], next: 2 });
      expect(await store.appendPartial(spec.id, 'c.txt\n')).toBe(3);
      expect(await store.readPartial(spec.id, 'alice', 2)).toEqual({ chunks: ['c.txt\n'], next: 3 });
      expect(await store.readPartial(spec.id, 'alice', 3)).toEqual({ chunks: [], next: 3 });
      expect(await store.readPartial(spec.id, 'alice', 99)).toEqual({ chunks: [], next: 3 });
      expect((await store.get(spec.id, 'alice'))!.partialLength).toBe(3);
      expect(await c.until(3)).toEqual([
        { type: 'partial', length: 1 },
        { type: 'partial', length: 2 },
        { type: 'partial', length: 3 },
      ]);
      c.off();
    });

    it('a completed job keeps its partial output readable until TTL', async () => {
      const { store } = await setup();
      const spec = job();
      await store.create(spec, cap);
      await store.appendPartial(spec.id, 'x');
      await store.update(spec.id, { status: 'completed', result: { content: [] } });
      expect(await store.readPartial(spec.id, 'alice', 0)).toEqual({ chunks: ['x'], next: 1 });
    });
  });

  describe('list', () => {
    it("an owner's jobs, newest first, paged by cursor", async () => {
      const { store } = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const spec = job();
        ids.push(spec.id);
        await store.create(spec, cap);
        await advance(realTime ? 2 : 10);
      }
      await store.create(job({ owner: 'bob' }), cap);
      const seen: JobRecord[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.list('alice', { limit: 2, ...(cursor !== undefined ? { cursor } : {}) });
        expect(page.jobs.length).toBeLessThanOrEqual(2);
        seen.push(...page.jobs);
        cursor = page.nextCursor;
        pages++;
      } while (cursor !== undefined && pages < 10);
      expect(seen.map((j) => j.id)).toEqual([...ids].reverse());
      expect(pages).toBe(3);
    });

    it("a cursor is opaque: no id, count or time in it, and only its owner's list takes it", async () => {
      const { store } = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const spec = job();
        ids.push(spec.id);
        await store.create(spec, cap);
        await advance(realTime ? 2 : 10);
      }
      const first = await store.list('alice', { limit: 1 });
      const cursor = first.nextCursor!;
      expect(cursor).toBeDefined();
      for (const id of ids) expect(cursor).not.toContain(id);
      expect(cursor).not.toMatch(/^[0-9.]*$/);
      expect(cursor).not.toContain(String(first.jobs[0]!.createdAt));
      // the same place listed twice: two unrelated cursors that lead to the same page
      const again = (await store.list('alice', { limit: 1 })).nextCursor!;
      expect(again).not.toBe(cursor);
      const next = (await store.list('alice', { limit: 1, cursor })).jobs.map((j) => j.id);
      expect((await store.list('alice', { limit: 1, cursor: again })).jobs.map((j) => j.id)).toEqual(next);
      expect(next).toEqual([ids[1]]);
      await store.create(job({ owner: 'bob' }), cap);
      await expect(store.list('bob', { cursor })).rejects.toThrow(TypeError);
      const altered = `${cursor.slice(0, 20)}${cursor[20] === 'A' ? 'B' : 'A'}${cursor.slice(21)}`;
      await expect(store.list('alice', { cursor: altered })).rejects.toThrow(TypeError);
    });

    it("other owners' activity changes nothing a cursor leads to", async () => {
      const { store } = await setup();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const spec = job();
        ids.push(spec.id);
        await store.create(spec, cap);
        await advance(realTime ? 2 : 10);
      }
      const cursor = (await store.list('alice', { limit: 1 })).nextCursor!;
      for (let i = 0; i < 20; i++) await store.create(job({ owner: 'bob' }), cap);
      const rest = await store.list('alice', { limit: 5, cursor });
      expect(rest.jobs.map((j) => j.id)).toEqual([ids[1], ids[0]]);
      expect(rest.nextCursor).toBeUndefined();
    });

    it('rejects a cursor it did not issue', async () => {
      const { store } = await setup();
      await store.create(job(), cap);
      await expect(store.list('alice', { cursor: 'not-a-cursor' })).rejects.toThrow(TypeError);
      await expect(store.list('alice', { cursor: '12' })).rejects.toThrow(TypeError);
    });
  });
}
