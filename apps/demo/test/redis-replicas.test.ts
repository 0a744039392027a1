/**
 * Issue 15 on real processes: three demo replicas (`tether-demo --redis URL`) on three loopback
 * ports share one real redis-server (started by the test, no persistence). Clients are spread over
 * the replicas; the proof is read back from Redis (counter values, and the trace the demo's
 * RedisRecordStore appends in Redis order with each replica's pid and fencing token).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connectHttp, type TestClient } from '@mcp-tether/testing';
import { RedisLockStore } from '@mcp-tether/redis';
import { startRedis, type TestRedis } from '@mcp-tether/redis/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, textOf } from './helpers.js';

const bin = fileURLToPath(new URL('../src/bin.ts', import.meta.url));
const LEASE_MS = 1_000;

interface Replica {
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
}

let redis: TestRedis;
let db: Redis;
let probe: RedisLockStore;
const replicas: Replica[] = [];
const clients: TestClient[] = [];

async function startReplica(): Promise<Replica> {
  const child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), bin, '--port', '0', '--quiet', '--redis', redis.url],
    {
      env: {
        ...process.env,
        REDIS_LOCK_LEASE_MS: String(LEASE_MS),
        TETHER_DEMO_TRACE: '1',
        DEMO_MAX_QUEUE: '1000',
        MRTR_KEYS: 'replica-key-replica-key-replica-key-',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`replica did not start within 30 s:\n${out}`)), 30_000);
    child.stdout!.on('data', () => {
      const m = /listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`replica exited (${signal ?? code}) before listening:\n${out}`));
    });
  });
  const replica = { url, child, output: () => out };
  replicas.push(replica);
  return replica;
}

async function client(replica: Replica): Promise<TestClient> {
  const kit = await connectHttp(replica.url);
  clients.push(kit);
  return kit;
}

type TraceEntry = { op: 'enter' | 'exit' | 'refused'; key: string; pid: number; token: number };
async function trace(key: string): Promise<TraceEntry[]> {
  return (await db.lrange('tether:demo:trace', 0, -1))
    .map((t) => JSON.parse(t) as TraceEntry)
    .filter((e) => e.key === key);
}
async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
const lockKey = (key: string) => `mutex:records.increment:${key}`;

beforeAll(async () => {
  redis = await startRedis();
  db = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  db.on('error', () => {});
  probe = new RedisLockStore({ url: redis.url, prefix: 'tether:' });
  await Promise.all([startReplica(), startReplica(), startReplica()]);
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const r of replicas.splice(0))
    if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  await probe?.close();
  db?.disconnect();
  await redis?.stop();
});

describe('three demo replicas on one Redis', () => {
  it('200 concurrent records.increment on one key through all three replicas: the counter is exactly 200 more, the enter/exit trace never overlaps, fencing tokens increase', async () => {
    const kits = await Promise.all([0, 1, 2, 0, 1, 2].map((i) => client(replicas[i]!)));
    const before = Number(textOf(await kits[0]!.callTool('records.get', { key: 'counter' })));
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        kits[i % kits.length]!.callTool('records.increment', { key: 'counter', delayMs: 1 }),
      ),
    );
    expect(results.filter((r) => r.isError)).toEqual([]);
    expect(results.map((r) => Number(textOf(r))).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 200 }, (_, i) => before + i + 1),
    );
    expect(Number(textOf(await kits[1]!.callTool('records.get', { key: 'counter' })))).toBe(before + 200);

    const t = await trace('counter');
    expect(t).toHaveLength(400);
    for (let i = 0; i < t.length; i += 2) {
      // enter, then the exit of the same holder, before anyone else enters
      expect(t[i]!.op).toBe('enter');
      expect(t[i + 1]).toMatchObject({ op: 'exit', pid: t[i]!.pid, token: t[i]!.token });
      if (i > 0) expect(t[i]!.token).toBeGreaterThan(t[i - 2]!.token);
    }
    expect(new Set(t.map((e) => e.pid)).size).toBe(3); // every replica served some
  }, 60_000);

  it('an aborted waiter leaves the shared queue at once and never runs; the next waiter on another replica runs after the holder', async () => {
    const [a, b, c] = await Promise.all([client(replicas[0]!), client(replicas[1]!), client(replicas[2]!)]);
    const holder = a.start('records.increment', { key: 'abort', delayMs: 800 }, { id: 'holder' });
    await until('the holder to enter', async () => (await trace('abort')).length === 1);
    const quitter = b.start('records.increment', { key: 'abort', delayMs: 0 }, { id: 'quitter' });
    await until('the first waiter to queue', async () => (await probe.inspect(lockKey('abort'))).waiting === 1);
    const next = c.start('records.increment', { key: 'abort', delayMs: 0 }, { id: 'next' });
    await until('the second waiter to queue', async () => (await probe.inspect(lockKey('abort'))).waiting === 2);
    const t0 = Date.now();
    await quitter.cancel('changed my mind');
    await until(
      'the aborted waiter to leave',
      async () => (await probe.inspect(lockKey('abort'))).waiting === 1,
      2_000,
    );
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(textOf((await holder.response(10_000)).result)).toBe('1');
    expect(textOf((await next.response(10_000)).result)).toBe('2');
    const t = await trace('abort');
    expect(t.map((e) => `${e.op}:${e.pid}`)).toEqual([
      `enter:${replicas[0]!.child.pid}`,
      `exit:${replicas[0]!.child.pid}`,
      `enter:${replicas[2]!.child.pid}`,
      `exit:${replicas[2]!.child.pid}`,
    ]);
    await expect(quitter.response(300)).rejects.toThrow(); // cancelled: no response, as MCP says
  }, 30_000);

  it('a replica paused past its lease while holding: the next holder proceeds; the paused one, resumed, is refused by the fencing token check (stale writer)', async () => {
    const [a, b] = await Promise.all([client(replicas[0]!), client(replicas[1]!)]);
    const paused = a.start('records.increment', { key: 'fence', delayMs: 300 }, { id: 'paused' });
    await until('the holder to enter', async () => (await trace('fence')).length === 1);
    replicas[0]!.child.kill('SIGSTOP');
    try {
      const t0 = Date.now();
      const r = await b.callTool('records.increment', { key: 'fence', delayMs: 0 });
      expect(textOf(r)).toBe('1');
      expect(Date.now() - t0).toBeLessThan(LEASE_MS * 5);
    } finally {
      replicas[0]!.child.kill('SIGCONT');
    }
    const stale = (await paused.response(10_000)).result;
    expect(stale.isError).toBe(true);
    expect(textOf(stale)).toMatch(/refused: fencing token \d+ is stale/);
    expect(Number(textOf(await b.callTool('records.get', { key: 'fence' })))).toBe(1); // the stale write never landed
    const t = await trace('fence');
    expect(t.map((e) => e.op)).toEqual(['enter', 'enter', 'exit', 'refused']);
    expect(t[0]!.token).toBeLessThan(t[1]!.token);
  }, 30_000);

  it("a replica killed (SIGKILL) while holding a lock: the others proceed within the lease; its fencing token is lower than the next holder's", async () => {
    const victim = replicas[2]!;
    const [v, b] = await Promise.all([client(victim), client(replicas[1]!)]);
    void v
      .start('records.increment', { key: 'kill', delayMs: 10_000 }, { id: 'doomed' })
      .response(20_000)
      .catch(() => {});
    await until('the victim to enter', async () => (await trace('kill')).length === 1);
    const waiting = b.callTool('records.increment', { key: 'kill', delayMs: 0 });
    await until('the waiter to queue', async () => (await probe.inspect(lockKey('kill'))).waiting === 1);
    const t0 = Date.now();
    victim.child.kill('SIGKILL');
    expect(textOf(await waiting)).toBe('1'); // the victim never wrote
    expect(Date.now() - t0).toBeLessThan(LEASE_MS * 3);
    const t = await trace('kill');
    expect(t.map((e) => `${e.op}:${e.pid}`)).toEqual([
      `enter:${victim.child.pid}`,
      `enter:${replicas[1]!.child.pid}`,
      `exit:${replicas[1]!.child.pid}`,
    ]);
    expect(t[0]!.token).toBeLessThan(t[1]!.token);
    replicas[2] = await startReplica(); // back to three
    replicas.pop(); // (startReplica appended it too)
  }, 40_000);

  it('2026-07-28 billing.refund: round 1 on replica 1, the retry on replica 2 (shared MRTR_KEYS); the captured retry replayed to replica 3 is refused -32602 replayed', async () => {
    // A "load balancer": each tools/call goes to the next replica.
    const sent: Array<{ url: string; headers: Headers; body: any }> = [];
    let n = 0;
    const lb: typeof fetch = async (input, init) => {
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      const target = body?.method === 'tools/call' ? replicas[n++ % 3]!.url : replicas[0]!.url;
      sent.push({ url: target, headers: new Headers(init?.headers), body });
      return fetch(target, init);
    };
    const modern = new Client({ name: 'replicas', version: '0' }, {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    modern.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
    await modern.connect(new StreamableHTTPClientTransport(new URL(replicas[0]!.url), { fetch: lb }));
    try {
      const result = await modern.callTool({ name: 'billing.refund', arguments: { invoiceId: 'INV-REPLICAS' } });
      expect(textOf(result)).toMatch(/^Refunded \$[\d.]+ to .+ for invoice INV-REPLICAS\.$/);
    } finally {
      await modern.close();
    }
    const calls = sent.filter((c) => c.body?.method === 'tools/call');
    expect(calls.map((c) => c.url)).toEqual([replicas[0]!.url, replicas[1]!.url]);
    const retry = calls[1]!;
    expect(retry.body.params.requestState).toEqual(expect.any(String));
    // Eve captured the retry (state and answer) and sends it again, to replica 3.
    const replay = await fetch(replicas[2]!.url, {
      method: 'POST',
      headers: retry.headers,
      body: JSON.stringify({ ...retry.body, id: 'replay' }),
    });
    const text = await replay.text();
    const message = JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? text);
    expect(message).toMatchObject({ id: 'replay', error: { code: -32602, data: { reason: 'replayed' } } });
  }, 30_000);

  it('Redis restarted mid-run: calls fail with a clear JSON-RPC error, no replica crashes, no lock is held forever, service recovers when Redis is back', async () => {
    const kits = await Promise.all(replicas.map((r) => client(r)));
    expect(textOf(await kits[0]!.callTool('records.increment', { key: 'restart', delayMs: 0 }))).toBe('1');
    const holding = kits[1]!.start(
      'records.increment',
      { key: 'restart', delayMs: 1_500 },
      { id: 'through-the-restart' },
    );
    await until('the holder to enter', async () => (await trace('restart')).length === 3);
    await redis.stop();
    const failed = await Promise.all(
      kits.map((k) =>
        k.callTool('records.increment', { key: 'restart', delayMs: 0 }).then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    for (const err of failed) {
      expect(err).toMatchObject({ code: -32603 });
      expect(String((err as Error).message)).toMatch(/Redis is unavailable/);
    }
    const during = await holding.response(10_000);
    expect(during.error ?? during.result?.isError).toBeTruthy(); // its write could not reach Redis
    await redis.restart(); // empty, on the same port
    for (const k of kits) expect(textOf(await k.callTool('records.get', { key: 'restart' }))).toBe('0');
    const after = await Promise.all(kits.map((k) => k.callTool('records.increment', { key: 'restart', delayMs: 0 })));
    expect(after.map((r) => textOf(r)).sort()).toEqual(['1', '2', '3']);
    for (const r of replicas) expect(r.child.exitCode).toBeNull();
    expect(await probe.inspect(lockKey('restart'))).toEqual({ holders: 0, waiting: 0 });
  }, 40_000);
});
