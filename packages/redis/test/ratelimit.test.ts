import { handler, JsonRpcErrorCode } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import { rateLimit } from '@mcp-tether/ratelimit';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisRateLimitStore } from '../src/ratelimit.js';
import { startRedis, type TestRedis } from '../src/testing.js';

let redis: TestRedis;
const stores: RedisRateLimitStore[] = [];
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

let seq = 0;
describeEachSdk(
  'RedisRateLimitStore behind rateLimit(): two servers with their own stores (as two replicas) share the buckets',
  (sdk) => {
    /** A "replica": its own middleware and its own store (its own connection); a real client on it. */
    async function replica(prefix: string, ran: string[]) {
      const store = new RedisRateLimitStore({ url: redis.url, prefix });
      stores.push(store);
      // one client key for both replicas (as one client's address seen by both behind a balancer)
      const limiter = rateLimit({ perClient: { burst: 4, perSecond: 0.01 }, clientKey: () => 'alice', store });
      const kit = await sdk.connect(() => {
        const { server } = tetheredServer(sdk, [limiter]);
        server.registerTool(
          'echo',
          { inputSchema: { s: z.string() } },
          handler(async (args: { s: string }) => {
            ran.push(args.s);
            return { content: [{ type: 'text' as const, text: args.s }] };
          }),
        );
        return server;
      });
      kits.push(kit);
      return kit;
    }
    const call = (kit: MatrixClient, s: string) => kit.start('echo', { s }, { id: `r${++seq}` }).response(30_000);

    it('a burst of 4 split over two replicas is the whole burst; the 5th call, on either, is refused with -32029 and a retry hint; every key has a TTL', async () => {
      const prefix = `rl-${sdk.name}:`;
      const ran: string[] = [];
      const a = await replica(prefix, ran);
      const b = await replica(prefix, ran);
      for (const [kit, s] of [
        [a, '1'],
        [b, '2'],
        [a, '3'],
        [b, '4'],
      ] as const)
        expect(firstText((await call(kit, s)).result)).toBe(s);
      for (const kit of [a, b]) {
        const refused = await call(kit, 'no');
        expect(refused.error).toMatchObject({
          code: JsonRpcErrorCode.RateLimited,
          data: { code: 'RATE_LIMITED', scope: 'client', burst: 4 },
        });
        // one token per 100 s: the wait is about 100 s (the bucket refilled a little meanwhile)
        expect(refused.error.data.retryAfterMs).toBeGreaterThan(90_000);
        expect(refused.error.data.retryAfterMs).toBeLessThanOrEqual(100_000);
        expect(refused.error.data.retryAfterSeconds).toBe(Math.ceil(refused.error.data.retryAfterMs / 1000));
      }
      expect(ran).toEqual(['1', '2', '3', '4']);
      const probe = new Redis(redis.url);
      try {
        const keys = await probe.keys(`${prefix}*`);
        expect(keys).toEqual([`${prefix}rl:{alice}:c`]);
        const ttl = await probe.pttl(keys[0]!);
        // expires when full again: 4 tokens at 0.01/s = 400 s
        expect(ttl).toBeGreaterThan(390_000);
        expect(ttl).toBeLessThanOrEqual(400_000);
      } finally {
        probe.disconnect();
      }
    });

    it.skipIf(sdk.name !== 'v1')(
      'Redis stopped: a clear STORE_UNAVAILABLE error per call, the server stays up; Redis restarted: served again (buckets start full)',
      async () => {
        const ran: string[] = [];
        const kit = await replica(`rl-down-${sdk.name}:`, ran);
        expect((await call(kit, 'before')).result).toBeDefined();
        await redis.stop();
        const failed = await call(kit, 'during');
        expect(failed.error).toMatchObject({ code: -32603, data: { code: 'STORE_UNAVAILABLE' } });
        expect(failed.error.message).toMatch(/rate limit check: Redis is unavailable/);
        await redis.restart();
        let after: Record<string, any> | undefined;
        // reconnection happens in the background (every 100 ms to 1 s): wait for it, by outcome
        for (let i = 0; i < 300 && !after?.result; i++) {
          after = await call(kit, 'after');
          if (!after.result) await new Promise((r) => setTimeout(r, 100));
        }
        expect(firstText(after!.result)).toBe('after');
        expect(ran).toEqual(['before', 'after']);
      },
    );
  },
  { only: ['v1', 'v2-modern'] },
);
