/**
 * Issue 26, "storage that ends": after a mixed workload through every Redis store tether has (locks
 * and limits under mutex(), rate limits, jobs under jobs(), SSE events, one-time requestState),
 * every key Redis holds has a TTL, none is orphaned, and calls whose arguments fail validation
 * wrote nothing.
 */
import { handler } from '@mcp-tether/core';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import { jobs } from '@mcp-tether/jobs';
import { mutex } from '@mcp-tether/mutex';
import { rateLimit } from '@mcp-tether/ratelimit';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { RedisEventStore, RedisLockStore, RedisReplayStore } from '../src/index.js';
import { RedisJobStore } from '../src/jobs.js';
import { RedisRateLimitStore } from '../src/ratelimit.js';
import { startRedis } from '../src/testing.js';

/** Every key under `prefix` with its PTTL (SCAN, never KEYS). */
async function scanAll(probe: Redis, prefix: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await probe.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    for (const k of keys) out.set(k, await probe.pttl(k));
  } while (cursor !== '0');
  return out;
}

describeEachSdk(
  'every Redis key tether writes ends (issue 26)',
  (sdk) => {
    it('a mixed run over every store leaves no key without a TTL and none orphaned; invalid arguments wrote no key', async () => {
      const redis = await startRedis();
      const p = 'audit:';
      const lockStore = new RedisLockStore({ url: redis.url, prefix: p });
      const rateStore = new RedisRateLimitStore({ url: redis.url, prefix: p });
      const jobStore = await RedisJobStore.open({ url: redis.url, prefix: p });
      const events = new RedisEventStore({ url: redis.url, prefix: p });
      const replays = new RedisReplayStore({ url: redis.url, prefix: p });
      const probe = new Redis(redis.url);
      const kits: MatrixClient[] = [];
      try {
        const lock = mutex({ store: lockStore, key: (ctx) => `file:${String(ctx.args.path)}` });
        const limiter = rateLimit({ perTool: { burst: 1_000, perSecond: 100 }, store: rateStore });
        const j = jobs({ tools: ['reindex'], inlineMs: 1, store: jobStore });
        for (const who of ['alice', 'bob']) {
          kits.push(
            await sdk.connect(
              () => {
                const { server } = tetheredServer(sdk, [limiter, lock, j]);
                j.registerTools(server);
                server.registerTool(
                  'write',
                  {
                    inputSchema: { path: z.string(), bytes: z.number().int() },
                    annotations: { destructiveHint: true },
                  },
                  handler(async () => ({ content: [{ type: 'text' as const, text: 'written' }] })),
                );
                server.registerTool(
                  'reindex',
                  { inputSchema: { n: z.number().int() } },
                  handler(async (args: { n: number }, ctx) => {
                    const job = (ctx as unknown as { job?: { append(chunk: string): Promise<unknown> } }).job;
                    for (let i = 0; i < args.n; i++) {
                      await new Promise((r) => setTimeout(r, 5));
                      await job?.append(`line ${i}\n`);
                    }
                    return { content: [{ type: 'text' as const, text: `done ${args.n}` }] };
                  }),
                );
                return server;
              },
              { authInfo: { token: `t-${who}`, clientId: who, scopes: [] } } as never,
            ),
          );
        }
        const calls: Array<Promise<unknown>> = [];
        for (let i = 0; i < 300; i++) {
          const kit = kits[i % 2]!;
          const kind = i % 5;
          if (kind === 0 || kind === 1) calls.push(kit.callTool('write', { path: `valid-${i}`, bytes: i }));
          else if (kind === 2) calls.push(kit.callTool('write', { path: `invalid-${i}`, bytes: 'many' }));
          else if (kind === 3) calls.push(kit.callTool('reindex', { n: i % 7 }));
          else calls.push(kit.callTool('reindex', { n: 'bad' }));
        }
        await Promise.all(calls.map((c) => c.catch(() => undefined)));
        // the other stores, directly
        const scoped = events.scoped('session-1');
        for (let i = 0; i < 50; i++) await scoped.storeEvent(`stream-${i % 5}`, { jsonrpc: '2.0', method: `m${i}` });
        for (let i = 0; i < 20; i++) await replays.consume(`state-${i}`, Date.now() + 60_000);
        // let every job finish (they run in the background): no owner has a live job left
        const running = async () => {
          let n = 0;
          for (const k of (await scanAll(probe, `${p}jobs:lv:`)).keys()) n += await probe.zcard(k);
          return n;
        };
        for (let t = 0; t < 600 && (await running()) > 0; t++) await new Promise((r) => setTimeout(r, 50));
        expect(await running()).toBe(0);

        const keys = await scanAll(probe, p);
        expect(keys.size).toBeGreaterThan(0);
        const persistent = [...keys].filter(([, ttl]) => ttl === -1).map(([k]) => k);
        expect(persistent).toEqual([]);
        // no lock state is left for idle keys (only fencing counters, which expire), and invalid
        // arguments never reached the lock store
        const names = [...keys.keys()];
        expect(names.filter((k) => /^audit:lock:\{.*\}:[htqws]$/.test(k))).toEqual([]);
        expect(names.filter((k) => k.includes('invalid-'))).toEqual([]);
        expect(names.filter((k) => /^audit:lock:\{mutex:file:valid-\d+\}:f$/.test(k))).toHaveLength(120);
        // nothing orphaned: each job's partial output has its job; each owner index names live jobs only
        expect(names.filter((n) => n.startsWith(`${p}jobs:owner:`))).toHaveLength(2);
        expect(names.filter((n) => n.endsWith(':partial')).length).toBeGreaterThan(0);
        for (const k of names.filter((n) => n.endsWith(':partial')))
          expect(keys.has(k.replace(/:partial$/, ''))).toBe(true);
        for (const k of names.filter((n) => n.startsWith(`${p}jobs:owner:`))) {
          const members = await probe.zrange(k, '0', '-1');
          expect(members.length).toBeGreaterThan(0);
          for (const m of members) expect(keys.has(`${p}jobs:job:${m}`)).toBe(true);
          // the owner's index lives as long as its longest-lived job, no longer
          const jobTtls = members.map((m) => keys.get(`${p}jobs:job:${m}`)!);
          expect(keys.get(k)!).toBeLessThanOrEqual(Math.max(...jobTtls) + 1_000);
        }
        for (const k of names.filter((n) => n.startsWith(`${p}jobs:lv:`))) expect(await probe.zcard(k)).toBe(0);
        // partial bytes go with their job; each finished-jobs index names existing jobs, and its size counter adds up
        for (const k of names.filter((n) => n.endsWith(':pbytes')))
          expect(keys.has(k.replace(/:pbytes$/, ''))).toBe(true);
        const finished = names.filter((n) => n.startsWith(`${p}jobs:fin:`));
        expect(finished.length).toBeGreaterThan(0);
        for (const k of finished) {
          const members = await probe.zrange(k, '0', '-1');
          for (const m of members) expect(keys.has(`${p}jobs:job:${m.split(' ')[1]}`)).toBe(true);
          const bytes = members.reduce((sum, m) => sum + Number(m.split(' ')[0]), 0);
          expect(Number(await probe.get(k.replace(':fin:', ':finsz:')))).toBe(bytes);
        }
      } finally {
        for (const k of kits) await k.close().catch(() => {});
        await Promise.all([lockStore.close(), rateStore.close(), jobStore.close(), events.close(), replays.close()]);
        probe.disconnect();
        await redis.stop();
      }
    });
  },
  { only: ['v1'] },
);
