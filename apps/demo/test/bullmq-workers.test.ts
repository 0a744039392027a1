/**
 * Issue 24's "done when", scaled down: three real demo processes on one real redis-server — a
 * front (`--no-worker`, serves HTTP, runs no jobs) and two workers (`--worker`, serve no HTTP),
 * `JOB_LEASE_MS=5000` (a worker held up by a loaded machine keeps its lock; recovery within ~7.5 s).
 * A `corpus.reindex` started through the front is killed with its worker
 * (SIGKILL) mid-run; the other worker resumes it from its checkpoint, and the client, polling the
 * front (which never ran it), reads `completed` with each document indexed once (the one in flight
 * at most twice). Both SDK lines: a 2025 session (SDK 1.x) and 2026-07-28 requests (SDK 2.x).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis, type TestRedis } from '@mcp-tether/redis/testing';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textOf } from './helpers.js';

const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
interface Proc {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<unknown>;
}
let redis: TestRedis;
let front: Proc;
let url: URL;
const workers: Proc[] = [];

function start(args: string[], ready: RegExp): Promise<Proc> {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), bin, '--redis', redis.url, ...args], {
    env: { ...process.env, JOB_LEASE_MS: '5000', MRTR_KEYS: 'bullmq-demo-key-bullmq-demo-key-123' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((r) => child.once('exit', r));
  return new Promise<Proc>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start within 180 s:\n${out}`)), 180_000);
    child.stdout!.on('data', () => {
      if (!ready.test(out)) return;
      clearTimeout(timer);
      resolve({ child, output: () => out, exited });
    });
    void exited.then(() => reject(new Error(`the demo exited before it was ready:\n${out}`)));
  });
}
const startWorker = async () => {
  const w = await start(['--worker'], /taking jobs/);
  workers.push(w);
  return w;
};

beforeAll(async () => {
  redis = await startRedis();
  [front] = await Promise.all([
    start(['--no-worker', '--port', '0', '--quiet', '--inline-ms', '0'], /listening on \S+/),
    startWorker(),
    startWorker(),
  ]);
  url = new URL(/listening on (\S+)/.exec(front.output())![1]!);
}, 400_000);
afterAll(async () => {
  for (const p of [front, ...workers]) if (p && p.child.exitCode === null) p.child.kill('SIGKILL');
  await redis?.stop();
});

/** The worker that logged that it runs `jobId`. */
const runnerOf = (jobId: string) => workers.find((w) => w.output().includes(`runs job ${jobId}`));

async function killAndFollow(
  call: (name: string, args: Record<string, unknown>) => Promise<any>,
  read: (uri: string) => Promise<any>,
): Promise<void> {
  const first = await call('corpus.reindex', { files: 24, delayMs: 150 });
  const jobId = first.structuredContent.jobId as string;
  let s: any = first.structuredContent;
  for (let i = 0; i < 200 && (s.progress ?? 0) < 4; i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = (await call('jobs.status', { jobId })).structuredContent;
  }
  const victim = runnerOf(jobId)!;
  expect(victim, 'a worker logged the job').toBeDefined();
  victim.child.kill('SIGKILL');
  await victim.exited;
  workers.splice(workers.indexOf(victim), 1);
  let r: any;
  for (let i = 0; i < 30; i++) {
    r = await call('jobs.status', { jobId, waitMs: 3_000 });
    if (r.structuredContent.status !== 'working') break;
  }
  expect(r.structuredContent.status).toBe('completed');
  expect(textOf(r)).toMatch(/^Reindexed 24 documents\. \(attempt 2, resumed after document \d+\)$/);
  expect(runnerOf(jobId)).toBeDefined(); // the survivor logged it too
  const partial = await read(`job://${jobId}/partial`);
  const docs = (partial.contents[0].text as string).split('\n').filter(Boolean);
  expect(new Set(docs).size).toBe(24);
  expect(docs.length - 24).toBeLessThanOrEqual(1);
  expect(front.output()).not.toContain('runs job');
  await startWorker(); // two workers again for the next case
}

describe('demo on BullMQ: one front, two workers', () => {
  it('2025 session (SDK 1.x): SIGKILL of the running worker; the other resumes from the checkpoint; the front reads completed', async () => {
    const client = new Client({ name: 'bullmq-v1', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      await killAndFollow(
        (name, args) => client.callTool({ name, arguments: args }),
        (uri) => client.readResource({ uri }),
      );
    } finally {
      await client.close();
    }
  }, 90_000);

  it('2026-07-28 requests (SDK 2.x): the same, followed with jobs.status', async () => {
    const client = new ClientV2({ name: 'bullmq-v2', version: '0' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    await client.connect(new HttpV2(url));
    try {
      await killAndFollow(
        (name, args) => client.callTool({ name, arguments: args }),
        (uri) => client.readResource({ uri }),
      );
    } finally {
      await client.close();
    }
  }, 90_000);

  it('a 2025-11-25 task run by a worker: the session gets notifications/tasks/status from the front, and the result', async () => {
    const client = new Client({ name: 'bullmq-task', version: '0' }, { capabilities: { tasks: {} } as never });
    const statuses: Array<{ taskId: string; status: string }> = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tasks/status') statuses.push(n.params as never);
    };
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      let taskId: string | undefined;
      let result: any;
      for await (const m of client.experimental.tasks.callToolStream(
        { name: 'corpus.reindex', arguments: { files: 10, delayMs: 50 } },
        CallToolResultSchema,
        { task: { ttl: 60_000 } },
      )) {
        if (m.type === 'taskCreated') taskId = m.task.taskId;
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') throw m.error;
      }
      expect(textOf(result)).toBe('Reindexed 10 documents.');
      expect(runnerOf(taskId!)).toBeDefined(); // a worker ran it, not the front
      for (let i = 0; i < 100 && !statuses.some((s) => s.status === 'completed'); i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(statuses.filter((s) => s.taskId === taskId).map((s) => s.status)).toContain('completed');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('jobs.cancel on the front reaches the worker running the job', async () => {
    const client = new Client({ name: 'bullmq-cancel', version: '0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      const first: any = await client.callTool({ name: 'corpus.reindex', arguments: { files: 1_000, delayMs: 50 } });
      const jobId = first.structuredContent.jobId as string;
      for (let i = 0; i < 200 && runnerOf(jobId) === undefined; i++) await new Promise((r) => setTimeout(r, 50));
      const c: any = await client.callTool({ name: 'jobs.cancel', arguments: { jobId } });
      expect(c.structuredContent.status).toBe('cancelled');
      const before = ((await client.readResource({ uri: `job://${jobId}/partial` })) as any).contents[0].text;
      await new Promise((r) => setTimeout(r, 500));
      const after = ((await client.readResource({ uri: `job://${jobId}/partial` })) as any).contents[0].text;
      expect(after).toBe(before);
    } finally {
      await client.close();
    }
  }, 60_000);
});
