/**
 * Terminal states (rule 5), TTL and lost runners (rule 6) and signals (rule 7) of the `JobStore` contract; registered by `jobStoreContract` (`@mcp-tether/jobs/testing`).
 */
import { describe, expect, it } from 'vitest';
import type { JobSignal } from './store.js';
import type { SuiteContext } from './contract-context.js';

export function lifecycleRules({ setup, job, cap, now, advance, TTL, realTime, collect }: SuiteContext): void {
  describe('rule 5: terminal is final', () => {
    for (const terminal of ['completed', 'failed', 'cancelled'] as const) {
      it(`a ${terminal} job refuses every update and signal`, async () => {
        const { store } = await setup();
        const spec = job();
        await store.create(spec, cap);
        const done = await store.update(spec.id, { status: terminal, statusMessage: 'end' });
        expect(done).toMatchObject({ status: terminal, statusMessage: 'end' });
        expect(await store.update(spec.id, { status: 'working' })).toBeUndefined();
        expect(await store.update(spec.id, { progress: 5 })).toBeUndefined();
        expect(await store.signal(spec.id, 'alice', { type: 'cancel' })).toBe(false);
        expect(await store.appendPartial(spec.id, 'late')).toBe(-1);
        expect(await store.get(spec.id, 'alice')).toMatchObject({
          status: terminal,
          statusMessage: 'end',
          partialLength: 0,
        });
      });
    }

    it('working → input_required → working → completed, each an update signal carrying the record', async () => {
      const { store, peer } = await setup();
      const spec = job();
      await store.create(spec, cap);
      const c = collect(peer, spec.id);
      const ask = { q: { method: 'elicitation/create' as const, params: { message: 'ok?' } } };
      await store.update(spec.id, { status: 'input_required', inputRequests: ask });
      expect(await store.get(spec.id, 'alice')).toMatchObject({ status: 'input_required', inputRequests: ask });
      await store.update(spec.id, { status: 'working' });
      expect((await store.get(spec.id, 'alice'))!.inputRequests).toBeUndefined();
      await store.update(spec.id, { progress: 3, total: 4, statusMessage: 'file c' });
      await store.update(spec.id, { status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } });
      const got = await c.until(4);
      expect(got.map((s) => (s.type === 'update' ? s.job.status : s.type))).toEqual([
        'input_required',
        'working',
        'working',
        'completed',
      ]);
      const last = got[3] as Extract<JobSignal, { type: 'update' }>;
      expect(last.job).toMatchObject({
        id: spec.id,
        progress: 3,
        total: 4,
        result: { content: [{ type: 'text', text: 'done' }] },
      });
      expect(last.job.updatedAt).toBeGreaterThanOrEqual(last.job.createdAt);
      c.off();
    });

    it('a patch field set to undefined removes it', async () => {
      const { store } = await setup();
      const spec = job({ statusMessage: 'a' });
      await store.create(spec, cap);
      await store.update(spec.id, { statusMessage: undefined });
      expect((await store.get(spec.id, 'alice'))!.statusMessage).toBeUndefined();
    });
  });

  describe('rule 6: TTL and lost runners', () => {
    it('a job is gone once createdAt + ttlMs passed, partial output with it', async () => {
      const { store } = await setup();
      const spec = job({ ttlMs: TTL });
      await store.create(spec, cap);
      await store.appendPartial(spec.id, 'a');
      await store.update(spec.id, { status: 'completed', result: { content: [] } });
      expect(await store.get(spec.id, 'alice')).toMatchObject({ status: 'completed', result: { content: [] } });
      await advance(TTL + 200);
      await store.sweep?.();
      expect(await store.get(spec.id, 'alice')).toBeUndefined();
      expect(await store.readPartial(spec.id, 'alice', 0)).toBeUndefined();
      expect(await store.update(spec.id, { progress: 1 })).toBeUndefined();
      expect((await store.list('alice')).jobs).toEqual([]);
    });

    it('ttlMs null lives on; a job still working also expires', async () => {
      const { store } = await setup();
      const forever = job({ ttlMs: null });
      const running = job({ ttlMs: TTL });
      await store.create(forever, cap);
      await store.create(running, cap);
      await advance(TTL + 200);
      expect(await store.get(forever.id, 'alice')).toMatchObject({ status: 'working' });
      expect(await store.get(running.id, 'alice')).toBeUndefined();
    });

    it('an expired job frees its place under the cap', async () => {
      const { store } = await setup();
      await store.create(job({ ttlMs: TTL }), { maxLivePerOwner: 1 });
      await advance(TTL + 200);
      expect((await store.create(job(), { maxLivePerOwner: 1 })).created).toBe(true);
    });

    it('a non-terminal job whose lease passed is reported failed (runner lost), never working forever', async () => {
      const { store } = await setup();
      const spec = job({ ttlMs: null, runner: 'replica-a', leaseUntil: now() + TTL / 2 });
      await store.create(spec, cap);
      expect((await store.get(spec.id, 'alice'))!.status).toBe('working');
      await advance(TTL);
      const lost = (await store.get(spec.id, 'alice'))!;
      expect(lost.status).toBe('failed');
      expect(lost.statusMessage).toMatch(/runner/i);
      expect(await store.update(spec.id, { status: 'completed' })).toBeUndefined();
    });

    it('a renewed lease keeps the job working', async () => {
      const { store } = await setup();
      const spec = job({ ttlMs: null, runner: 'replica-a', leaseUntil: now() + TTL });
      await store.create(spec, cap);
      await advance(TTL / 2);
      await store.update(spec.id, { leaseUntil: now() + TTL });
      await advance(TTL / 2 + 100);
      expect((await store.get(spec.id, 'alice'))!.status).toBe('working');
    });
  });

  describe('rule 7: signals', () => {
    it('cancel and input reach every subscriber of the id, in order, across instances', async () => {
      const { store, peer } = await setup();
      const spec = job();
      await store.create(spec, cap);
      await store.update(spec.id, {
        status: 'input_required',
        inputRequests: { q: { method: 'elicitation/create', params: {} } },
      });
      const a = collect(store, spec.id);
      const b = collect(peer, spec.id);
      const other = job();
      await store.create(other, cap);
      const o = collect(store, other.id);
      expect(
        await peer.signal(spec.id, 'alice', {
          type: 'input',
          inputResponses: { q: { action: 'accept', content: { ok: true } } },
        }),
      ).toBe(true);
      expect(await store.signal(spec.id, 'alice', { type: 'cancel', reason: 'user' })).toBe(true);
      const want = [
        { type: 'input', inputResponses: { q: { action: 'accept', content: { ok: true } } } },
        { type: 'cancel', reason: 'user' },
      ];
      expect(await a.until(2)).toEqual(want);
      expect(await b.until(2)).toEqual(want);
      expect(o.got).toEqual([]);
      a.off();
      b.off();
      o.off();
    });

    it('input is refused unless the job is input_required', async () => {
      const { store } = await setup();
      const spec = job();
      await store.create(spec, cap);
      expect(await store.signal(spec.id, 'alice', { type: 'input', inputResponses: {} })).toBe(false);
    });

    it('after unsubscribe nothing more arrives; the other subscription still does', async () => {
      const { store } = await setup();
      const spec = job();
      await store.create(spec, cap);
      const a = collect(store, spec.id);
      const b = collect(store, spec.id);
      a.off();
      a.off(); // twice is harmless
      await store.update(spec.id, { progress: 1 });
      await b.until(1);
      await new Promise((r) => setTimeout(r, 50));
      expect(a.got).toEqual([]);
      b.off();
    });
  });
}
