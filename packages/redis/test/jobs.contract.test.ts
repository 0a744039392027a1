import { jobStoreContract } from '@mcp-tether/jobs/testing';
import { afterAll, beforeAll } from 'vitest';
import { RedisJobStore } from '../src/jobs.js';
import { startRedis, type TestRedis } from '../src/testing.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

let n = 0;
// A fresh prefix per test (one Redis for the file); the peer is a second store on its own
// connections, as another replica would have.
jobStoreContract(
  'RedisJobStore (real redis-server, two replicas)',
  ({ retention }) => RedisJobStore.open({ url: redis.url, prefix: `contract-${++n}:`, ...retention }),
  {
    realTime: true,
    peer: (_store, { retention }) => RedisJobStore.open({ url: redis.url, prefix: `contract-${n}:`, ...retention }),
  },
);
