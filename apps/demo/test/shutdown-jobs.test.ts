/**
 * Issue 24 on a real process: a demo replica on a real redis-server gets SIGTERM while a job runs.
 * Before it exits, the job's record in Redis says what happened (`cancelled`, `shutdown: …`), instead
 * of `working` until its lease runs out and then `failed: job runner lost` on the other replicas.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis, type TestRedis } from '@mcp-tether/redis/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
let redis: TestRedis;
let db: Redis;
let child: ChildProcess | undefined;

beforeAll(async () => {
  redis = await startRedis();
  db = new Redis(redis.url);
}, 30_000);

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  db?.disconnect();
  await redis?.stop();
});

it('SIGTERM while a job runs: before the process exits 0 the job is handed back to BullMQ (with --redis) or ends cancelled (shutdown)', async () => {
  child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), bin, '--port', '0', '--quiet', '--inline-ms', '200', '--redis', redis.url],
    { env: { ...process.env, MRTR_KEYS: 'shutdown-key-shutdown-key-shutdown-' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start within 30 s:\n${out}`)), 30_000);
    child!.stdout!.on('data', () => {
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child!.once('exit', (code) => reject(new Error(`the demo exited (${code}):\n${out}`)));
  });
  // A 2026-07-28 client: its job is owned by no session, so only the shutdown can end it.
  const client = new Client({ name: 'shutdown', version: '0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const first = await client.callTool({ name: 'corpus.reindex', arguments: { files: 2_000, delayMs: 100 } });
  const jobId = (first.structuredContent as { jobId?: string } | undefined)?.jobId;
  expect(jobId, JSON.stringify(first)).toMatch(/^[A-Za-z0-9_-]{16,}$/);
  await client.close();
  const record = async () => {
    // RedisJobStore keys carry the id base64url-encoded: `<prefix>job:<enc(id)>`.
    const enc = Buffer.from(jobId!, 'utf8').toString('base64url');
    const keys = (await db.keys(`*job:${enc}`)).filter((k) => !k.endsWith(':partial'));
    expect(keys).toHaveLength(1);
    return JSON.parse((await db.get(keys[0]!))!) as { status: string; statusMessage?: string };
  };
  expect((await record()).status).toBe('working');

  const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  const after = await record();
  // With --redis the job runs on a BullMQ worker (this process): shutdown hands it back to the queue
  // for another worker and says so; run in process, it ends cancelled ('shutdown: …'). Either way the
  // record says what happened before the process exited; never `working` with no word.
  if (after.status === 'working') {
    // Handed back: BullMQ holds the job again, waiting for another worker (its id is the job id).
    const waiting: string[] = [];
    for (const key of await db.keys('tether:bull:*:wait')) waiting.push(...(await db.lrange(key, 0, -1)));
    expect(waiting, JSON.stringify(after)).toContain(jobId);
  } else {
    expect(after.status, JSON.stringify(after)).toBe('cancelled');
    expect(after.statusMessage).toMatch(/^shutdown/);
  }
}, 60_000);
