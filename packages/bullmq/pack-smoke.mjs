// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): a real
// redis-server (the redis package's test helper), a real BullMQ worker in this process, a real SDK
// client whose job handle is followed to the result the worker produced.
import { bullmqExecutor } from '@mcp-tether/bullmq';
import { tether } from '@mcp-tether/core';
import { jobs } from '@mcp-tether/jobs';
import { RedisJobStore } from '@mcp-tether/redis/jobs';
import { startRedis } from '@mcp-tether/redis/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

const redis = await startRedis();
let worker;
let executor;
let store;
try {
  store = await RedisJobStore.open({ url: redis.url });
  executor = bullmqExecutor({ connection: redis.url, lockMs: 2_000, onError: () => {} });
  const work = jobs({ tools: ['count'], inlineMs: 0, store, executor });
  const build = () => {
    const server = new McpServer({ name: 'smoke', version: '1.0.0' });
    tether(server, [work]);
    work.registerTools(server);
    server.registerTool('count', { inputSchema: { n: z.number() } }, async ({ n }, ctx) => {
      await ctx.job.checkpoint({ n });
      return { content: [{ type: 'text', text: `counted ${n} on attempt ${ctx.job.attempt} in ${process.pid}` }] };
    });
    return server;
  };
  worker = await executor.startWorker({ server: build, engine: work.engine });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await build().connect(serverSide);
  const client = new Client({ name: 'smoke', version: '1.0.0' });
  await client.connect(clientSide);
  const first = await client.callTool({ name: 'count', arguments: { n: 3 } });
  let r = first;
  for (let i = 0; i < 20 && r.structuredContent !== undefined && r.structuredContent.status !== 'completed'; i++)
    r = await client.callTool({
      name: 'jobs.status',
      arguments: { jobId: first.structuredContent.jobId, waitMs: 3_000 },
    });
  const text = r.content?.[0]?.text;
  await client.close();
  const ok = text === `counted 3 on attempt 1 in ${process.pid}`;
  console.log(ok ? 'ok' : `FAILED ${JSON.stringify(r)}`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await worker?.close(1_000);
  await executor?.close({ graceMs: 0 });
  await store?.close();
  await redis.stop();
}
