/**
 * The BullMQ executor behind every front, on every SDK line (v1, v2 on 2025 sessions, v2 on
 * 2026-07-28 requests), with a real redis-server and real BullMQ: this process is both the front
 * (a real SDK client connected to a tethered server) and a worker (its own in-process session to
 * another server of the same stack). The cross-process cases are in processes.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describeEachSdk } from '@mcp-tether/testing/matrix';
import { startRedis, type TestRedis } from '@mcp-tether/redis/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BullmqWorker } from '../src/index.js';
import { type App, makeApp } from './fixtures/tools.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const text = (r: any): string => r?.content?.[0]?.text ?? '';
/** Poll `get` every 25 ms until it gives a value (at most 30 s). */
async function until<T>(get: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 1_200; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('gave up waiting');
}

describeEachSdk('bullmqExecutor: the fronts on BullMQ', (sdk) => {
  let app: App;
  let worker: BullmqWorker;
  beforeAll(async () => {
    app = await makeApp({ url: redis.url, prefix: `t${randomBytes(4).toString('hex')}:`, lockMs: 30_000 });
    worker = await app.executor.startWorker({ server: () => app.server(), engine: app.work.engine });
  });
  afterAll(async () => {
    await worker?.close(1_000);
    await app?.close();
  });

  const client = () => sdk.connect(() => app.server(sdk));
  const poll = async (kit: any, jobId: string, until: (s: any) => boolean, waitMs = 5_000) => {
    for (let i = 0; i < 60 * (5_000 / waitMs); i++) {
      const r = await kit.callTool('jobs.status', { jobId, waitMs });
      if (until(r.structuredContent)) return r;
    }
    throw new Error('job did not settle');
  };

  it('a job handle runs on the worker: progress, partial output, checkpoints; the result through jobs.status', async () => {
    const kit = await client();
    const first = await kit.callTool('docs.index', { docs: 4, delayMs: 20 });
    const jobId = first.structuredContent.jobId as string;
    expect(jobId).toMatch(/^[\w-]{22}$/);
    const done = await poll(kit, jobId, (s) => s.status === 'completed');
    expect(text(done)).toBe('indexed 4 docs (attempt 1, from 0)');
    const effects = await app.redis.lrange(`${app.prefix}fx:${jobId}`, 0, -1);
    expect(effects).toEqual([1, 2, 3, 4].map((i) => `${i}:1:${process.pid}`));
    expect(await app.redis.get(`${app.prefix}finally:${jobId}`)).toBe('1');
    await kit.close();
  });

  it("a handler that throws is retried with the tool's backoff; the last error fails the job", async () => {
    const kit = await client();
    const ok = await kit.callTool('flaky', { fails: 2 });
    const okDone = await poll(kit, ok.structuredContent.jobId, (s) => s.status === 'completed');
    expect(text(okDone)).toBe('ok on attempt 3');
    const bad = await kit.callTool('flaky', { fails: 5 });
    // The SDK answers a throw with an isError result: the job ends with the last one (as in process).
    const failed = await poll(
      kit,
      bad.structuredContent.jobId,
      (s) => s.status === 'completed' || s.status === 'failed',
    );
    expect(failed.isError).toBe(true);
    expect(JSON.stringify(failed)).toContain('flaky failure on attempt 3');
    await kit.close();
  });

  it('jobs.cancel reaches the worker: the signal aborts, finally runs once, the job reads cancelled', async () => {
    const kit = await client();
    const h = await kit.callTool('docs.index', { docs: 1_000, delayMs: 50 });
    const jobId = h.structuredContent.jobId as string;
    await poll(kit, jobId, (s) => (s.progress ?? 0) >= 2, 50);
    const c = await kit.callTool('jobs.cancel', { jobId });
    expect(c.structuredContent.status).toBe('cancelled');
    for (let i = 0; i < 200 && (await app.redis.get(`${app.prefix}finally:${jobId}`)) === null; i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(await app.redis.get(`${app.prefix}finally:${jobId}`)).toBe('1');
    const after = await app.redis.llen(`${app.prefix}fx:${jobId}`);
    await new Promise((r) => setTimeout(r, 300));
    expect(await app.redis.llen(`${app.prefix}fx:${jobId}`)).toBe(after);
    expect(worker.running).toBe(0);
    await kit.close();
  });

  it('the inline window of a queued job: its progress reaches the open request; a job done in it answers as the plain call', async () => {
    // A front with a long inline window on the same queue (this file's worker runs its jobs).
    const front = await makeApp({ url: redis.url, prefix: app.prefix, lockMs: 30_000, inlineMs: 60_000 });
    const kit = await sdk.connect(() => front.server(sdk));
    try {
      const seen: Array<{ progress: number; total?: number; message?: string }> = [];
      const r = await kit.callTool('docs.index', { docs: 4, delayMs: 30 }, { onprogress: (p) => seen.push(p) });
      expect(text(r)).toBe('indexed 4 docs (attempt 1, from 0)');
      expect(r.structuredContent).toBeUndefined(); // no handle: exactly what the call returns in process
      expect(seen.length).toBeGreaterThan(0);
      for (const p of seen) expect(p).toMatchObject({ total: 4, message: `doc-${p.progress}` });
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    } finally {
      await kit.close();
      await front.close();
    }
  });

  it('a request cancelled in the inline window cancels its queued job: the worker aborts, finally once', async () => {
    const front = await makeApp({ url: redis.url, prefix: app.prefix, lockMs: 30_000, inlineMs: 60_000 });
    const kit = await sdk.connect(() => front.server(sdk));
    try {
      const fx = () => app.redis.keys(`${app.prefix}fx:*`);
      const before = new Set(await fx());
      const controller = new AbortController();
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const call = kit
        .callTool(
          'docs.index',
          { docs: 1_000, delayMs: 50 },
          { onprogress: (p) => p.progress >= 2 && started(), signal: controller.signal },
        )
        .catch((e: unknown) => e);
      await running; // two documents indexed on the worker, their progress relayed to the request
      const fresh = (await fx()).filter((k) => !before.has(k));
      expect(fresh).toHaveLength(1);
      const jobId = fresh[0]!.slice(`${app.prefix}fx:`.length);
      controller.abort('changed my mind');
      expect(await call).toBeInstanceOf(Error);
      const record = async () =>
        JSON.parse((await app.redis.get(`${app.prefix}jobs:job:${Buffer.from(jobId).toString('base64url')}`))!);
      // the worker's finally may run before the canceller's write lands (the cancel signal goes first)
      await until(async () =>
        (await app.redis.get(`${app.prefix}finally:${jobId}`)) === '1' && (await record()).status !== 'working'
          ? true
          : undefined,
      );
      const rec = await record();
      expect(rec).toMatchObject({ status: 'cancelled', mode: 'handle' });
      // whichever write lands first ends it: the canceller's ("cancelled: <reason>") or the worker's
      // abort ("cancelled by client: …", the request's own reason); a later one is refused (terminal)
      expect(rec.statusMessage).toMatch(/^cancelled(: | by client)/);
      const after = await app.redis.llen(`${app.prefix}fx:${jobId}`);
      await new Promise((r) => setTimeout(r, 300));
      expect(await app.redis.llen(`${app.prefix}fx:${jobId}`)).toBe(after);
      expect(await app.redis.get(`${app.prefix}finally:${jobId}`)).toBe('1');
    } finally {
      await kit.close();
      await front.close();
    }
  });

  it('input rounds on the worker: input_required, answered through jobs.status', async () => {
    const kit = await client();
    const h = await kit.callTool('ask.name', {});
    const jobId = h.structuredContent.jobId as string;
    const asked = await poll(kit, jobId, (s) => s.status === 'input_required');
    const [key] = Object.keys(asked.structuredContent.inputRequests);
    await kit.callTool('jobs.status', {
      jobId,
      inputResponses: { [key!]: { action: 'accept', content: { name: 'Ada' } } },
    });
    const done = await poll(kit, jobId, (s) => s.status === 'completed');
    expect(text(done)).toBe(`hello Ada from pid ${process.pid}`);
    await kit.close();
  });
});
