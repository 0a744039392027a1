import { handler } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import { mutex } from '@mcp-tether/mutex';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisLockStore, StoreUnavailableError } from '../src/index.js';
import { startRedis, type TestRedis } from '../src/testing.js';
import { spawnReplica } from './helpers.js';

let redis: TestRedis;
const stores: RedisLockStore[] = [];
const kits: MatrixClient[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close().catch(() => {});
});
afterAll(async () => {
  for (const s of stores.splice(0)) await s.close();
  await redis?.stop();
});
const store = (options: ConstructorParameters<typeof RedisLockStore>[0] = {}) => {
  const s = new RedisLockStore({ url: redis.url, ...options });
  stores.push(s);
  return s;
};
const never = () => new AbortController().signal;
/** Until Redis has `n` waiters queued on `key` (the acquire scripts ran): polled, not a fixed pause. */
async function queued(s: RedisLockStore, key: string, n: number): Promise<void> {
  for (let i = 0; i < 1_000 && (await s.inspect(key)).waiting < n; i++) await new Promise((r) => setTimeout(r, 20));
}

describeEachSdk(
  'RedisLockStore behind mutex(): two servers with their own stores (as two processes) share one lock',
  (sdk) => {
    it('40 read-await-write increments split over two servers: no update lost, no overlap, fencing tokens increase in run order', async () => {
      let counter = 0;
      let inside = 0;
      let overlap = false;
      const tokens: number[] = [];
      const prefix = `kit-${sdk.name}:`;
      for (const s of [store({ prefix }), store({ prefix })]) {
        const m = mutex({ store: s });
        const kit = await sdk.connect(() => {
          const { server } = tetheredServer(sdk, [m]);
          server.registerTool(
            'inc',
            { inputSchema: { i: z.number() }, annotations: { destructiveHint: true } },
            handler(async (_args: { i: number }, ctx) => {
              inside++;
              if (inside > 1) overlap = true;
              tokens.push(ctx.fencingToken!);
              const read = counter;
              await new Promise((r) => setTimeout(r, 2));
              counter = read + 1;
              inside--;
              return { content: [{ type: 'text' as const, text: String(counter) }] };
            }),
          );
          return server;
        });
        kits.push(kit);
      }
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => kits[i % 2]!.callTool('inc', { i })));
      expect(results.map(firstText).sort((a, b) => Number(a) - Number(b))).toEqual(
        Array.from({ length: 40 }, (_, i) => String(i + 1)),
      );
      expect(counter).toBe(40);
      expect(overlap).toBe(false);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    });
  },
);

describe('RedisLockStore leases', () => {
  it('a holder whose process stops renewing (gone) frees the key within about the lease; the next holder has a larger fencing token', async () => {
    const a = store({ prefix: 'lease:', leaseMs: 300 });
    const b = store({ prefix: 'lease:', leaseMs: 300 });
    const held = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    const t0 = Date.now();
    const next = b.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    await a.close(); // the process is gone: no release, no renewal
    const grant = await next;
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(5_000);
    expect(grant.fencingToken).toBeGreaterThan(held.fencingToken);
    await grant();
    expect(await b.idle('k')).toBe(true);
  });

  it('a holder that keeps running keeps its lease (renewed), well past leaseMs; a lease lost while held (Redis restarted) is reported, the holder is not interrupted', async () => {
    const lost: Array<[string, number]> = [];
    // a lease a loaded machine renews in time (a renewal every 200 ms; a stall past 600 ms would lose it)
    const a = store({ prefix: 'renew:', leaseMs: 600 });
    const b = store({ prefix: 'renew:', leaseMs: 600, onLeaseLost: (k, t) => void lost.push([k, t]) });
    const held = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    let got = false;
    const next = b.acquire('k', { max: 1, maxQueue: Infinity, signal: never() }).then((g) => {
      got = true;
      return g;
    });
    await new Promise((r) => setTimeout(r, 2_000)); // over 3 leases
    expect(got).toBe(false);
    await held();
    const g = await next;
    expect(g.fencingToken).toBeGreaterThan(held.fencingToken);
    await redis.restart(); // Redis forgets every lease
    for (let i = 0; i < 250 && lost.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(lost).toEqual([['k', g.fencingToken]]);
    await g(); // still callable, does nothing harmful
    const after = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    expect(after.fencingToken).toBeGreaterThan(g.fencingToken);
    await after();
  });
});

describe('RedisLockStore: dead and closed waiters', () => {
  it('a waiter whose process is killed (SIGKILL) in the queue does not hold the key up for long: the next waiter gets it within about a lease of the release', async () => {
    const a = store({ prefix: 'deadwaiter:', leaseMs: 400 });
    const c = store({ prefix: 'deadwaiter:', leaseMs: 400 });
    const held = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    const doomed = await spawnReplica('lock-waiter.ts', [redis.url, 'deadwaiter:', 'k', '400']); // queued first
    const next = c.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    await queued(a, 'k', 2);
    expect(await a.inspect('k')).toEqual({ holders: 1, waiting: 2 });
    await doomed.kill('SIGKILL');
    const t0 = Date.now();
    await held();
    const g = await next;
    expect(Date.now() - t0).toBeLessThan(400 * 4); // its place (or the grant it got) expires with its lease
    expect(g.fencingToken).toBeGreaterThan(held.fencingToken);
    await g();
  });

  it('close() takes its waiters out of the queue at once: the next process is not held up', async () => {
    const a = store({ prefix: 'closedwaiter:', leaseMs: 10_000 });
    const b = new RedisLockStore({ url: redis.url, prefix: 'closedwaiter:', leaseMs: 10_000 });
    const c = store({ prefix: 'closedwaiter:', leaseMs: 10_000 });
    const held = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    const gone = b.acquire('k', { max: 1, maxQueue: Infinity, signal: never() }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 30));
    const next = c.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    await new Promise((r) => setTimeout(r, 30));
    await b.close();
    expect(await gone).toBeInstanceOf(StoreUnavailableError);
    expect(await a.inspect('k')).toEqual({ holders: 1, waiting: 1 });
    await held();
    await (await next)(); // granted at the release, not 10 s later
  });
});

describe('RedisLockStore when Redis goes away', () => {
  it("a waiter Redis forgets while reachable (a restart) is queued again and gets the key; the old holder's lease is reported lost", async () => {
    const lost: string[] = [];
    // a lease long enough that a Redis restart on a loaded machine stays well within it (a waiter
    // whose place cannot be renewed for a whole lease is rejected, which is another test)
    const a = store({ prefix: 'forget:', leaseMs: 3_000, onLeaseLost: (k) => void lost.push(k) });
    const b = store({ prefix: 'forget:', leaseMs: 3_000 });
    const held = await a.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    const waiting = b.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    await queued(b, 'k', 1);
    expect((await b.inspect('k')).waiting).toBe(1);
    await redis.restart();
    const g = await waiting;
    expect(g.fencingToken).toBeGreaterThan(held.fencingToken);
    for (let i = 0; i < 1_500 && lost.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(lost).toEqual(['k']);
    await held(); // a no-op in Redis: it does not free b's grant
    expect(await b.inspect('k')).toEqual({ holders: 1, waiting: 0 });
    await g();
    expect(await b.idle('k')).toBe(true);
  });

  it('acquire rejects at once with STORE_UNAVAILABLE while Redis is down, a waiter is rejected, nothing is held after; service recovers when Redis is back', async () => {
    const lost: string[] = [];
    const s = store({ prefix: 'down:', leaseMs: 200, onLeaseLost: (k) => void lost.push(k) });
    const held = await s.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    const waiting = s.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    await queued(s, 'k', 1);
    await redis.stop();
    const t0 = Date.now();
    await expect(s.acquire('other', { max: 1, maxQueue: Infinity, signal: never() })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(Date.now() - t0).toBeLessThan(6_000);
    const err = await waiting.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).data).toEqual({ code: 'STORE_UNAVAILABLE' });
    await expect(held()).rejects.toBeInstanceOf(StoreUnavailableError); // reported to the middleware's onError
    await redis.restart(); // back, empty
    const again = await s.acquire('k', { max: 1, maxQueue: Infinity, signal: never() });
    expect(again.fencingToken).toBeGreaterThan(held.fencingToken); // the counter restarts from the Redis clock
    await again();
    expect(s.local).toEqual({ holders: 0, waiting: 0 });
  });
});

describeEachSdk('RedisLockStore behind limit(): at most max in flight over two servers', (sdk) => {
  it('12 calls split over two servers with limit({ max: 3 }) on two stores: never more than 3 at once, all answered', async () => {
    const { limit } = await import('@mcp-tether/mutex');
    let inFlight = 0;
    let peak = 0;
    const prefix = `limit-${sdk.name}:`;
    const local: MatrixClient[] = [];
    for (const s of [store({ prefix }), store({ prefix })]) {
      const l = limit({ max: 3, scope: 'global', store: s });
      const kit = await sdk.connect(() => {
        const { server } = tetheredServer(sdk, [l]);
        server.registerTool(
          'crawl',
          { inputSchema: { i: z.number() }, annotations: { readOnlyHint: true } },
          handler(async () => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            await new Promise((r) => setTimeout(r, 20));
            inFlight--;
            return { content: [{ type: 'text' as const, text: 'ok' }] };
          }),
        );
        return server;
      });
      kits.push(kit);
      local.push(kit);
    }
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => local[i % 2]!.callTool('crawl', { i })));
    expect(results.map(firstText)).toEqual(Array(12).fill('ok'));
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1); // it did run in parallel
  });
});
