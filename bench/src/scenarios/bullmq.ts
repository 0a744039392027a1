/**
 * (jobs on BullMQ) What running `@mcp-tether/jobs` jobs on BullMQ costs, beside raw BullMQ doing the
 * same trivial work, on one real redis-server (started here, loopback, no persistence):
 *
 * - **tether in process**: `jobs({ store: RedisJobStore })`, the handler runs in this process;
 * - **tether on BullMQ, 1 and 2 workers**: the same, with `bullmqExecutor()`; the workers are
 *   `startWorker()`s in this process (each with its own BullMQ connections and in-process session);
 * - **raw BullMQ, 1 and 2 workers**: `queue.add` → a `Worker` whose processor returns at once.
 *
 * Per variant: enqueue → complete latency, `sequential` jobs one after another (p50, p99, ms), and
 * throughput, `burst` jobs started at once (jobs/s, start of the first to the end of the last). A
 * tether job is a `tools/call` (SDK 1.x client, in-memory transport) answered inline when the job
 * completes (`inlineMs` 60 000): enqueue → complete as the client sees it. A raw job ends at the
 * worker's `completed` event (same process). Then Redis memory per held job: `held` jobs running
 * (handlers waiting on a gate), Redis `used_memory` before and while held, per job.
 *
 * Run alone: `node --expose-gc --import tsx src/child.ts bullmq '{"sequential":200,"burst":200,"held":200}' out.json`.
 */
import { bullmqExecutor } from '@mcp-tether/bullmq';
import { cancel } from '@mcp-tether/cancel';
import { handler, tether } from '@mcp-tether/core';
import { jobs, type JobExecutor } from '@mcp-tether/jobs';
import { RedisJobStore } from '@mcp-tether/redis/jobs';
import { startRedis } from '@mcp-tether/redis/testing';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { connectInMemory, echoResult, echoSchema, newMcpServer } from '../servers.js';
import { percentile, round } from '../util.js';

export interface BullmqParams {
  sequential: number;
  burst: number;
  held: number;
}

interface Row {
  variant: string;
  p50Ms: number;
  p99Ms: number;
  jobsPerSec: number;
  redisBytesPerHeldJob?: number;
}

export async function run(p: BullmqParams) {
  const redis = await startRedis();
  const probe = new Redis(redis.url);
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await probe.info('memory'))![1]);
  const rows: Row[] = [];
  let n = 0;
  try {
    for (const variant of ['tether in process', 'tether on BullMQ, 1 worker', 'tether on BullMQ, 2 workers'] as const) {
      const workers = variant.endsWith('1 worker') ? 1 : variant.endsWith('2 workers') ? 2 : 0;
      rows.push(await tetherVariant(variant, workers, `v${++n}:`));
    }
    for (const workers of [1, 2]) rows.push(await rawVariant(workers, `v${++n}:`));
  } finally {
    probe.disconnect();
    await redis.stop();
  }
  const raw = (w: number) => rows.find((r) => r.variant === `raw BullMQ, ${w} worker${w > 1 ? 's' : ''}`)!;
  return {
    params: p,
    rows: rows.map((r) => {
      const w = r.variant.endsWith('2 workers') ? 2 : 1;
      const base = r.variant.startsWith('tether on BullMQ') ? raw(w) : undefined;
      return {
        ...r,
        ...(base && {
          overRawP50: round(r.p50Ms / base.p50Ms, 2),
          rawOverJobsPerSec: round(base.jobsPerSec / r.jobsPerSec, 2),
        }),
      };
    }),
  };

  async function measure(variant: string, one: (i: number) => Promise<unknown>): Promise<Row> {
    for (let i = 0; i < 20; i++) await one(i); // warm-up
    const lat: number[] = [];
    for (let i = 0; i < p.sequential; i++) {
      const s = performance.now();
      await one(i);
      lat.push(performance.now() - s);
    }
    const t0 = performance.now();
    await Promise.all(Array.from({ length: p.burst }, (_, i) => one(i)));
    const jobsPerSec = (p.burst / (performance.now() - t0)) * 1000;
    return {
      variant,
      p50Ms: round(percentile(lat, 50), 2),
      p99Ms: round(percentile(lat, 99), 2),
      jobsPerSec: round(jobsPerSec, 0),
    };
  }

  async function tetherVariant(variant: string, workerCount: number, prefix: string): Promise<Row> {
    const store = await RedisJobStore.open({ url: redis.url, prefix });
    const executor: (JobExecutor & ReturnType<typeof bullmqExecutor>) | undefined =
      workerCount > 0
        ? bullmqExecutor({
            connection: redis.url,
            prefix: `${prefix}bull`,
            concurrency: Math.max(50, p.held),
            onError: () => {},
          })
        : undefined;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const limit = p.burst + p.held + p.sequential + 100;
    const inline = jobs({
      tools: ['echo-job', 'held'],
      inlineMs: 60_000,
      maxLivePerOwner: limit,
      store,
      ...(executor && { executor }),
    });
    const build = () => {
      const server = newMcpServer();
      tether(server, [cancel(), inline]);
      inline.registerTools(server);
      server.registerTool('echo-job', { inputSchema: echoSchema }, async ({ n }) => echoResult(n));
      server.registerTool(
        'held',
        { inputSchema: echoSchema },
        handler(async ({ n }) => {
          await gate;
          return echoResult(n);
        }),
      );
      return server;
    };
    const workers = [];
    for (let i = 0; i < workerCount; i++)
      workers.push(await executor!.startWorker({ server: build, engine: inline.engine }));
    const conn = await connectInMemory(build());
    const call = (name: string, n: number) =>
      conn.client.callTool({ name, arguments: { n } }, CallToolResultSchema, { timeout: 120_000 });
    const row = await measure(variant, (i) => call('echo-job', i));
    // Redis memory per held job (handle mode would also do; inline calls simply stay open)
    const before = await usedMemory();
    const held = Array.from({ length: p.held }, (_, i) => call('held', i));
    await waitForRunning(store, inline.engine, workerCount > 0 ? workers : undefined, p.held);
    row.redisBytesPerHeldJob = round(((await usedMemory()) - before) / p.held, 0);
    release();
    await Promise.all(held);
    await conn.close();
    for (const w of workers) await w.close(1_000);
    await executor?.close({ graceMs: 0 });
    await store.close();
    return row;
  }

  async function rawVariant(workerCount: number, prefix: string): Promise<Row> {
    const connection = { url: redis.url, maxRetriesPerRequest: null };
    const queue = new Queue('raw', { connection, prefix });
    const waiting = new Map<string, () => void>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const workers = Array.from(
      { length: workerCount },
      () =>
        new Worker(
          'raw',
          async (job) => {
            if (job.name === 'held') await gate;
            return job.data.n;
          },
          { connection, prefix, concurrency: Math.max(50, p.held) },
        ),
    );
    for (const w of workers) {
      w.on('completed', (job) => {
        waiting.get(job.id!)?.();
        waiting.delete(job.id!);
      });
      await w.waitUntilReady();
    }
    let seq = 0;
    const one = (name: string, n: number) =>
      new Promise<void>((resolve, reject) => {
        const jobId = `j${++seq}`;
        waiting.set(jobId, resolve);
        queue.add(name, { n }, { jobId, removeOnComplete: true, removeOnFail: true }).catch(reject);
      });
    const row = await measure(`raw BullMQ, ${workerCount} worker${workerCount > 1 ? 's' : ''}`, (i) => one('echo', i));
    const before = await usedMemory();
    const held = Array.from({ length: p.held }, (_, i) => one('held', i));
    for (let i = 0; i < 2_000 && (await queue.getActiveCount()) < p.held; i++)
      await new Promise((r) => setTimeout(r, 10));
    row.redisBytesPerHeldJob = round(((await usedMemory()) - before) / p.held, 0);
    release();
    await Promise.all(held);
    await Promise.all(workers.map((w) => w.close()));
    await queue.close();
    return row;
  }
}

/** Until `count` held jobs run (on the workers, or in process). */
async function waitForRunning(
  _store: RedisJobStore,
  engine: { running: number },
  workers: Array<{ running: number }> | undefined,
  count: number,
): Promise<void> {
  const running = () => (workers ? workers.reduce((a, w) => a + w.running, 0) : engine.running);
  for (let i = 0; i < 3_000 && running() < count; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 200)); // their first writes
}
