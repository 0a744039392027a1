/**
 * Review attack: Redis stopped while a job runs (jobs() in handle mode on a RedisJobStore, real
 * redis-server, real SDK clients): the job tools fail with a clear error, other tools keep serving,
 * and when Redis comes back empty the job's runner stops (finally once) and its id reads as unknown.
 */
import { handler } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer } from '@mcp-tether/testing/matrix';
import { jobs } from '@mcp-tether/jobs';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { RedisJobStore } from '../src/jobs.js';
import { startRedis } from '../src/testing.js';

describeEachSdk(
  'RedisJobStore behind jobs(): Redis stopped mid-job',
  (sdk) => {
    it('job tools fail clearly while Redis is down, other tools serve, and the job stops once Redis is back without it', async () => {
      const redis = await startRedis();
      const store = await RedisJobStore.open({ url: redis.url, prefix: 'outage:' });
      const errors: unknown[] = [];
      const j = jobs({
        tools: ['work'],
        inlineMs: 100,
        leaseMs: 5_000, // renewed in time on a loaded machine (600 ms lapsed at load 40: 'job runner lost')
        progressWriteMs: 0,
        store,
        onError: (e) => errors.push(e),
      });
      const finallies: string[] = [];
      const kit = await sdk.connect(
        () => {
          const { server } = tetheredServer(sdk, [j]);
          j.registerTools(server);
          server.registerTool(
            'work',
            { inputSchema: { ms: z.number().int() } },
            handler(async (args: { ms: number }, ctx) => {
              try {
                await new Promise((resolve, reject) => {
                  const t = setTimeout(resolve, args.ms);
                  ctx.signal.addEventListener(
                    'abort',
                    () => {
                      clearTimeout(t);
                      reject(ctx.signal.reason);
                    },
                    {
                      once: true,
                    },
                  );
                });
                return { content: [{ type: 'text' as const, text: 'worked' }] };
              } finally {
                finallies.push(ctx.job?.id ?? 'inline');
              }
            }),
          );
          server.registerTool('plain', {}, async () => ({ content: [{ type: 'text' as const, text: 'plain' }] }));
          return server;
        },
        { authInfo: { token: 't', clientId: 'alice', scopes: [] } } as never,
      );
      try {
        const h = (await kit.callTool('work', { ms: 20_000 })).structuredContent as { jobId: string; status: string };
        expect(h.status).toBe('working');
        await redis.stop();
        const down = await kit.callTool('jobs.status', { jobId: h.jobId }).then(
          (r) => ({ isError: r.isError === true, text: firstText(r) ?? '' }),
          (e: Error) => ({ isError: true, text: e.message }),
        );
        expect(down.isError).toBe(true);
        expect(down.text).toMatch(/redis|store|unavailable|connection/i);
        expect(firstText(await kit.callTool('plain', {}))).toBe('plain');
        await redis.restart(); // back, empty: the job is gone
        for (let i = 0; i < 2_400 && finallies.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
        expect(finallies).toEqual([h.jobId]); // the runner noticed (its lease renewal found no job) and stopped
        const gone = await kit.callTool('jobs.status', { jobId: h.jobId });
        expect(gone.structuredContent).toMatchObject({ code: 'JOB_NOT_FOUND' });
      } finally {
        await kit.close();
        await store.close();
        await redis.stop();
      }
    }, 120_000);
  },
  { only: ['v1', 'v2-modern'] as const },
);
