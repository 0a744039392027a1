/**
 * @mcp-tether/jobs/testing — the {@link JobStore} contract as a vitest suite any store runs.
 *
 * ```ts
 * import { jobStoreContract } from '@mcp-tether/jobs/testing';
 * import { MemoryJobStore } from '@mcp-tether/jobs';
 *
 * jobStoreContract('MemoryJobStore', ({ now }) => new MemoryJobStore({ now, sweepIntervalMs: 0 }));
 * ```
 *
 * A store that keeps time itself (Redis `PEXPIRE`) passes `{ realTime: true }`: the suite then uses
 * `Date.now` and really waits (TTLs of a few hundred ms, generous margins) instead of moving a fake clock.
 * @packageDocumentation
 */
import { fencingRules } from './contract-fencing.js';
import { newJobId } from './ids.js';
import { afterEach, describe, expect, it } from 'vitest';
import { isJobLimit, type JobRecord, type JobSignal, type JobStore, type NewJob } from './store.js';

/** What the suite hands your store factory. */
export interface ContractContext {
  /** The suite's clock (`Date.now()` ms): a fake one unless `realTime`. Pass it to the store. */
  now: () => number;
}

/** Options of {@link jobStoreContract}. */
export interface ContractOptions {
  /** The store keeps time itself: the suite uses the real clock and waits. Default false. */
  realTime?: boolean;
  /**
   * A second handle onto the same backend (another process's view: a second Redis client), used to
   * check that signals and records cross instances. Default: the same store object.
   */
  peer?: (store: JobStore, ctx: ContractContext) => JobStore | Promise<JobStore>;
  /** How long to wait for a signal to arrive, ms (real time). Default 2 000. */
  signalTimeoutMs?: number;
}

export { newJobId };

/**
 * Register the JobStore contract (rules 1–8 of {@link JobStore}; rule 8 only for stores with `claim`) as vitest `describe` blocks.
 * `makeStore` is called once per test; the suite closes the store (and its peer) after each test.
 */
export function jobStoreContract(
  name: string,
  makeStore: (ctx: ContractContext) => JobStore | Promise<JobStore>,
  options: ContractOptions = {},
): void {
  const realTime = options.realTime === true;
  const signalTimeoutMs = options.signalTimeoutMs ?? 2000;
  /** TTLs the suite uses: short in real time, so tests stay quick. */
  const TTL = realTime ? 400 : 60_000;

  describe(`JobStore contract: ${name}`, () => {
    let offset = 0;
    const base = Date.now();
    const now = realTime ? Date.now : () => base + offset;
    const advance = async (ms: number) => {
      if (realTime) await new Promise((r) => setTimeout(r, ms));
      else offset += ms;
    };
    const opened: JobStore[] = [];

    async function setup(): Promise<{ store: JobStore; peer: JobStore }> {
      offset = 0;
      const ctx = { now };
      const store = await makeStore(ctx);
      opened.push(store);
      const peer = options.peer ? await options.peer(store, ctx) : store;
      if (peer !== store) opened.push(peer);
      return { store, peer };
    }

    afterEach(async () => {
      const all = opened.splice(0);
      for (const s of all) await s.close?.();
    });

    const job = (over: Partial<NewJob> = {}): NewJob => ({
      id: newJobId(),
      owner: 'alice',
      mode: 'handle',
      tool: 'corpus.reindex',
      status: 'working',
      ttlMs: TTL,
      ...over,
    });
    const cap = { maxLivePerClient: 100 };

    /** Collect signals of one id; `until(n)` waits (real time) for at least n of them. */
    function collect(store: JobStore, id: string) {
      const got: JobSignal[] = [];
      const off = store.subscribe(id, (s) => got.push(s));
      const until = async (n: number, what = `${n} signals`) => {
        const deadline = Date.now() + signalTimeoutMs;
        while (got.length < n) {
          if (Date.now() > deadline)
            throw new Error(
              `timed out waiting for ${what} (got ${got.length}: ${JSON.stringify(got.map((s) => s.type))})`,
            );
          await new Promise((r) => setTimeout(r, 5));
        }
        return got;
      };
      return { got, off, until };
    }

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

    fencingRules({ setup, job, cap, now });

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

      it("a cursor reveals nothing beyond the owner's own jobs: other owners' activity does not change it", async () => {
        const { store } = await setup();
        for (let i = 0; i < 3; i++) {
          await store.create(job(), cap);
          await advance(realTime ? 2 : 10);
        }
        const before = (await store.list('alice', { limit: 1 })).nextCursor;
        expect(before).toBeDefined();
        for (let i = 0; i < 20; i++) await store.create(job({ owner: 'bob' }), cap);
        expect((await store.list('alice', { limit: 1 })).nextCursor).toBe(before);
        // bob's first page ends with the same kind of cursor, whatever alice did
        const bobFirst = (await store.list('bob', { limit: 1 })).nextCursor!;
        for (let i = 0; i < 20; i++) await store.create(job(), cap);
        expect((await store.list('bob', { limit: 1 })).nextCursor).toBe(bobFirst);
      });

      it('rejects a cursor it did not issue', async () => {
        const { store } = await setup();
        await store.create(job(), cap);
        await expect(store.list('alice', { cursor: 'not-a-cursor' })).rejects.toThrow();
      });
    });
  });
}
