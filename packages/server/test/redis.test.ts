/**
 * REDIS_URL: two apps (as two replicas would: each its own Redis connection and stores) on one real
 * `redis-server` share the lock of the counter tools and the jobs.
 */
import { type TestRedis, startRedis } from '@mcp-tether/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { onePage } from './fixtures/app.js';
import { raw26, textOf, v1Client } from './helpers.js';

process.env.SECOND_MS = '200';

describe('REDIS_URL: every shared store on Redis', () => {
  let redis: TestRedis;
  const apps: App[] = [];
  const urls: URL[] = [];
  const counter = { value: 0 }; // the "database" both replicas write to

  beforeAll(async () => {
    redis = await startRedis();
    const before = process.env.REDIS_URL;
    process.env.REDIS_URL = redis.url; // the first app takes it from the environment
    try {
      for (const options of [{}, { redisUrl: redis.url }]) {
        const { app } = onePage({ ...options, handleSignals: false, log: false, inlineMs: 300 }, counter);
        urls.push((await app.listen(0)).url);
        apps.push(app);
      }
    } finally {
      if (before === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = before;
    }
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.shutdown(1_000)));
    await redis?.stop();
  });

  it('both apps report their stores on Redis', () => {
    for (const app of apps)
      expect(app.stores).toMatch(new RegExp(`^redis://127\\.0\\.0\\.1:${new URL(redis.url).port}`));
  });

  it('20 increments spread over the two apps return 1..20 (one lock across processes)', async () => {
    counter.value = 0;
    const clients = await Promise.all(urls.map((u) => v1Client(u)));
    try {
      const values = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          clients[i % 2]!.client.callTool({ name: 'counter.increment', arguments: {} }).then(textOf),
        ),
      );
      expect(values.map(Number).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      // each app's lock store granted some of them: the exclusion held across the two
      const granted = apps.map((a) => a.stack!.locks.stats().keys.counter?.acquired ?? 0);
      expect(granted.every((n) => n > 0)).toBe(true);
    } finally {
      await Promise.all(clients.map((c) => c.client.close()));
    }
  });

  it('a job started on one app is followed to its result on the other (2026-07-28, the id is the key)', async () => {
    const started = await raw26(urls[0]!, 'tools/call', { name: 'reindex', arguments: { seconds: 4 } });
    const handle = started.response?.result.structuredContent as { jobId: string; status: string };
    expect(handle.status).toBe('working');
    let status: any;
    for (let polls = 0; polls < 20; polls++) {
      status = (
        await raw26(urls[1]!, 'tools/call', { name: 'jobs.status', arguments: { jobId: handle.jobId, waitMs: 5_000 } })
      ).response?.result;
      if (status?.structuredContent?.status === 'completed') break;
    }
    expect(textOf(status)).toBe('Reindexed for 4 seconds.');
  });
});
