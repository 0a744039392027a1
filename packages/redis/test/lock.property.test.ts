import { lockStoreContract } from '@mcp-tether/mutex/testing';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { RedisLockStore } from '../src/index.js';
import { startRedis, type TestRedis } from '../src/testing.js';

let redis: TestRedis;
const stores: RedisLockStore[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const s of stores.splice(0)) await s.close();
  await redis?.stop();
});

describe('RedisLockStore: the LockStore contract (property, real redis-server)', () => {
  it('one store: exclusion (≤ max), FIFO, bounded queue, aborted waiters never granted, idempotent release, increasing fencing tokens; Redis keeps nothing after', async () => {
    const store = new RedisLockStore({ url: redis.url, prefix: 'one:' });
    stores.push(store);
    await lockStoreContract({
      stores: [store],
      inspect: (k) => store.inspect(k),
      idle: (k) => store.idle(k),
      numRuns: 300,
    });
  });

  it('two stores on two connections (two processes): the same contract holds across them', async () => {
    const a = new RedisLockStore({ url: redis.url, prefix: 'two:' });
    const b = new RedisLockStore({ url: redis.url, prefix: 'two:' });
    stores.push(a, b);
    await lockStoreContract({ stores: [a, b], inspect: (k) => a.inspect(k), idle: (k) => b.idle(k), numRuns: 300 });
  });
});
