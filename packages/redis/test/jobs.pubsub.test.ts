/**
 * Review attack: the store's pub/sub connection drops (Redis `CLIENT KILL TYPE pubsub`) just as a
 * job subscribes. Its start marker is published while nobody listens, so it never comes back; the
 * subscription must still receive the signals sent once the connection is back.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { JobSignal } from '@mcp-tether/jobs';
import { RedisJobStore } from '../src/jobs.js';
import { startRedis, type TestRedis } from '../src/testing.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

it('a subscription made while the pub/sub connection is down receives signals once it is back', async () => {
  const store = await RedisJobStore.open({ url: redis.url, prefix: 'pubsub:' });
  const admin = new Redis(redis.url);
  try {
    const { job } = await store.create(
      { id: 'job-pubsub-0000000001', owner: 'p:a', mode: 'handle', tool: 't', status: 'working', ttlMs: 60_000 },
      { maxLivePerOwner: 5 },
    );
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const got: JobSignal[] = [];
    const off = store.subscribe(job.id, (s) => got.push(s));
    // the pub/sub connection comes back (ioredis reconnects and subscribes again)
    for (
      let i = 0;
      i < 100 && Number(((await admin.pubsub('NUMSUB', 'pubsub:jobs:signals')) as [string, number])[1]) === 0;
      i++
    )
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    expect(await store.signal(job.id, 'p:a', { type: 'cancel', reason: 'stop' })).toBe(true);
    for (let i = 0; i < 100 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual([{ type: 'cancel', reason: 'stop' }]);
    off();
  } finally {
    admin.disconnect();
    await store.close();
  }
});
