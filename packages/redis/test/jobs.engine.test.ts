/**
 * RedisJobStore under the jobs middleware itself (`jobs()` of @mcp-tether/jobs, handle mode), three
 * replicas = three servers with their own jobs() and their own RedisJobStore on one redis-server,
 * real SDK clients of one principal (2026-07-28, stateless: any request may land on any replica).
 */
import { handler, progressEvent } from '@mcp-tether/core';
import { firstText } from '@mcp-tether/testing';
import { describeEachSdk, tetheredServer, type MatrixClient } from '@mcp-tether/testing/matrix';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { RedisJobStore } from '../src/jobs.js';
import { startRedis } from '../src/testing.js';

import { jobs } from '@mcp-tether/jobs';

describeEachSdk(
  'RedisJobStore behind jobs(): three replicas',
  (sdk) => {
    it('a job started through replica 1 is polled to completion through replica 2 (partial output too); another is cancelled through replica 3 and its runner on replica 1 stops', async () => {
      const redis = await startRedis();
      const stores = await Promise.all([1, 2, 3].map(() => RedisJobStore.open({ url: redis.url, prefix: 'engine:' })));
      const finallies = new Map<string, number>();
      const replicas = stores.map((store) => jobs!({ tools: ['corpus.reindex'], inlineMs: 150, store }));
      const kits: MatrixClient[] = [];
      try {
        for (const j of replicas) {
          kits.push(
            await sdk.connect(
              () => {
                const { server } = tetheredServer(sdk, [j]);
                j.registerTools(server);
                server.registerTool(
                  'corpus.reindex',
                  {
                    inputSchema: { files: z.number().int(), delayMs: z.number().int() },
                    annotations: { destructiveHint: true },
                  },
                  handler(async function* (args: { files: number; delayMs: number }, ctx) {
                    const job = (ctx as unknown as { job?: { id: string; append(chunk: string): Promise<unknown> } })
                      .job;
                    try {
                      for (let done = 1; done <= args.files; done++) {
                        await new Promise((r) => setTimeout(r, args.delayMs));
                        if (ctx.signal.aborted) throw ctx.signal.reason;
                        await job?.append(`doc-${done}\n`);
                        yield progressEvent(done, args.files, `doc-${done}`);
                      }
                      return { content: [{ type: 'text' as const, text: `indexed ${args.files} files` }] };
                    } finally {
                      if (job) finallies.set(job.id, (finallies.get(job.id) ?? 0) + 1);
                    }
                  }),
                );
                return server;
              },
              { authInfo: { token: 'token-alice', clientId: 'alice', scopes: [] } } as never,
            ),
          );
        }
        const handleOf = (r: { structuredContent?: unknown }) =>
          r.structuredContent as { jobId: string; status: string; partialUri?: string };
        const h = handleOf(await kits[0]!.callTool('corpus.reindex', { files: 10, delayMs: 30 }));
        expect(h.status).toBe('working');
        let r: Awaited<ReturnType<MatrixClient['callTool']>> | undefined;
        for (let i = 0; i < 40; i++) {
          r = await kits[1]!.callTool('jobs.status', { jobId: h.jobId, waitMs: 2000 });
          if (handleOf(r).status !== 'working') break;
        }
        expect(handleOf(r!).status).toBe('completed');
        expect(firstText(r!)).toBe('indexed 10 files');
        const partial = await (
          kits[1]! as unknown as {
            client: { readResource(p: { uri: string }): Promise<{ contents: Array<{ text: string }> }> };
          }
        ).client.readResource({ uri: h.partialUri! });
        expect(partial.contents[0]!.text.split('\n').filter(Boolean)).toEqual(
          Array.from({ length: 10 }, (_, i) => `doc-${i + 1}`),
        );

        const h2 = handleOf(await kits[0]!.callTool('corpus.reindex', { files: 1_000, delayMs: 30 }));
        const c = await kits[2]!.callTool('jobs.cancel', { jobId: h2.jobId });
        expect(handleOf(c).status).toBe('cancelled');
        for (let i = 0; i < 150 && !finallies.has(h2.jobId); i++) await new Promise((res) => setTimeout(res, 20));
        expect(finallies.get(h2.jobId)).toBe(1); // the runner on replica 1 saw the cancel and stopped
        expect(handleOf(await kits[1]!.callTool('jobs.status', { jobId: h2.jobId })).status).toBe('cancelled');
      } finally {
        for (const k of kits) await k.close();
        for (const s of stores) await s.close();
        await redis.stop();
      }
    }, 30_000);
  },
  { only: ['v2-modern'] as const },
);

describeEachSdk(
  'RedisJobStore behind jobs(): resources/updated across replicas',
  (sdk) => {
    it('a session on replica 2 subscribed to the partial output of a job running on replica 1 gets notifications/resources/updated; a session that did not subscribe gets none', async () => {
      const redis = await startRedis();
      const stores = await Promise.all([1, 2].map(() => RedisJobStore.open({ url: redis.url, prefix: 'updates:' })));
      // One owner for every session (as an app that maps its authenticated user would configure).
      const replicas = stores.map((store) =>
        jobs!({ tools: ['corpus.reindex'], inlineMs: 100, notifyIntervalMs: 50, store, owner: () => 'p:alice' }),
      );
      const kits: MatrixClient[] = [];
      try {
        const connect = async (j: any) => {
          const kit = await sdk.connect(() => {
            const { server } = tetheredServer(sdk, [j]);
            j.registerTools(server);
            server.registerTool(
              'corpus.reindex',
              {
                inputSchema: { files: z.number().int(), delayMs: z.number().int() },
                annotations: { destructiveHint: true },
              },
              handler(async (args: { files: number; delayMs: number }, ctx) => {
                const job = (ctx as unknown as { job?: { append(chunk: string): Promise<unknown> } }).job;
                for (let done = 1; done <= args.files; done++) {
                  await new Promise((r) => setTimeout(r, args.delayMs));
                  await job?.append(`doc-${done}\n`);
                }
                return { content: [{ type: 'text' as const, text: `indexed ${args.files} files` }] };
              }),
            );
            return server;
          });
          kits.push(kit);
          return kit;
        };
        const [a, b, bystander] = [await connect(replicas[0]), await connect(replicas[1]), await connect(replicas[1])];
        const h = (await a.callTool('corpus.reindex', { files: 20, delayMs: 40 })).structuredContent as {
          jobId: string;
          partialUri: string;
        };
        const client = (k: MatrixClient) =>
          (k as unknown as { client: { subscribeResource(p: { uri: string }): Promise<unknown> } }).client;
        await client(b).subscribeResource({ uri: h.partialUri });
        await b.wire.waitFor(
          (m) => m.message.method === 'notifications/resources/updated' && m.message.params?.uri === h.partialUri,
          10_000,
        );
        for (let i = 0; i < 40; i++) {
          const r = await b.callTool('jobs.status', { jobId: h.jobId, waitMs: 2000 });
          if ((r.structuredContent as { status: string }).status !== 'working') break;
        }
        await new Promise((r) => setTimeout(r, 150)); // the final, throttled notice
        const updates = b.wire.notifications('notifications/resources/updated');
        expect(updates.length).toBeGreaterThan(1);
        expect(updates.length).toBeLessThan(21); // throttled
        expect(bystander.wire.notifications('notifications/resources/updated')).toEqual([]);
        expect(a.wire.notifications('notifications/resources/updated')).toEqual([]); // the runner's session did not subscribe
      } finally {
        for (const k of kits) await k.close();
        for (const s of stores) await s.close();
        await redis.stop();
      }
    }, 30_000);
  },
  { only: ['v1', 'v2-legacy'] as const },
);
