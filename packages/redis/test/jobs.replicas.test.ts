/**
 * RedisJobStore across real processes: a runner replica (a child process) and this process as
 * another replica (its own RedisJobStore) sharing one redis-server.
 */
import { randomBytes } from 'node:crypto';
import type { JobSignal } from '@mcp-tether/jobs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisJobStore, RUNNER_LOST_MESSAGE } from '../src/jobs.js';
import { startRedis, type TestRedis } from '../src/testing.js';
import { spawnReplica, type Replica } from './helpers.js';

let redis: TestRedis;
let other: RedisJobStore;
const runners: Replica[] = [];
const PREFIX = 'replicas:';
beforeAll(async () => {
  redis = await startRedis();
  other = await RedisJobStore.open({ url: redis.url, prefix: PREFIX });
});
afterAll(async () => {
  await Promise.all(runners.map((r) => r.kill('SIGKILL')));
  await other?.close();
  await redis?.stop();
});

const newId = () => randomBytes(16).toString('base64url');
async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
const run = async (id: string, steps: number, leaseMs: number) => {
  const r = await spawnReplica('job-runner.ts', [redis.url, PREFIX, id, String(steps), String(leaseMs)]);
  runners.push(r);
  return r;
};

describe('RedisJobStore across replica processes', () => {
  it('a job run by replica 1 is polled to completion from replica 2, its partial output and signals included', async () => {
    const id = newId();
    const got: JobSignal[] = [];
    const off = other.subscribe(id, (s) => got.push(s));
    const runner = await run(id, 5, 2_000);
    const done = await until(
      'completion',
      () => other.get(id, 'alice'),
      (j) => j?.status === 'completed',
    );
    expect(done!.result).toEqual({ content: [{ type: 'text', text: `done by pid ${runner.child.pid}` }] });
    expect(done!.partialLength).toBe(5);
    expect(await other.readPartial(id, 'alice', 2)).toEqual({
      chunks: ['chunk 3\n', 'chunk 4\n', 'chunk 5\n'],
      next: 5,
    });
    await until(
      'the last signal',
      async () => got.length,
      (n) => got.some((s) => s.type === 'update' && s.job.status === 'completed'),
    );
    expect(got.filter((s) => s.type === 'partial').map((s) => (s as { length: number }).length)).toEqual([
      1, 2, 3, 4, 5,
    ]);
    expect(await other.get(id, 'mallory')).toBeUndefined();
    off();
  });

  it('hostile job ids from clients name no other key: undefined everywhere, no Redis type error', async () => {
    const id = newId();
    const runner = await run(id, 3, 2_000);
    await until(
      'completion',
      () => other.get(id, 'alice'),
      (j) => j?.status === 'completed',
    );
    for (const bad of [`${id}:partial`, `${id}\n`, '*', '', '../x', 'a'.repeat(5_000)]) {
      expect(await other.get(bad, 'alice')).toBeUndefined();
      expect(await other.readPartial(bad, 'alice', 0)).toBeUndefined();
      expect(await other.signal(bad, 'alice', { type: 'cancel' })).toBe(false);
      expect(await other.update(bad, { progress: 1 })).toBeUndefined();
      expect(await other.appendPartial(bad, 'x')).toBe(-1);
    }
    expect((await other.readPartial(id, 'alice', 0))!.chunks).toHaveLength(3);
    await runner.kill();
  });

  it('a cancel signalled from replica 2 reaches the runner on replica 1, which stops and records it', async () => {
    const id = newId();
    const runner = await run(id, 1_000, 2_000);
    await until(
      'some progress',
      () => other.get(id, 'alice'),
      (j) => (j?.progress ?? 0) >= 2,
    );
    expect(await other.signal(id, 'mallory', { type: 'cancel', reason: 'foreign' })).toBe(false);
    expect(await other.signal(id, 'alice', { type: 'cancel', reason: 'enough' })).toBe(true);
    const cancelled = await until(
      'cancelled',
      () => other.get(id, 'alice'),
      (j) => j?.status === 'cancelled',
    );
    expect(cancelled!.statusMessage).toBe(`cancelled: enough (seen by pid ${runner.child.pid})`);
    await until(
      'the runner to exit',
      async () => runner.child.exitCode,
      (c) => c === 0,
    );
  });

  it('a runner killed (SIGKILL) mid-job: after its lease the job reads failed from any replica, never working forever', async () => {
    const id = newId();
    const runner = await run(id, 1_000, 400);
    await until(
      'some progress',
      () => other.get(id, 'alice'),
      (j) => (j?.progress ?? 0) >= 2,
    );
    await runner.kill('SIGKILL');
    const t0 = Date.now();
    const failed = await until(
      'failed',
      () => other.get(id, 'alice'),
      (j) => j?.status === 'failed',
    );
    expect(failed!.statusMessage).toBe(RUNNER_LOST_MESSAGE);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(await other.update(id, { status: 'completed' })).toBeUndefined(); // terminal is final
  });
});
