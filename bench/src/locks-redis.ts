/**
 * Lock acquisition, memory store vs Redis store (issue 15's benchmark). Standalone:
 *
 *   node bench/dist/locks-redis.js [--quick]     (after `pnpm --filter @mcp-tether/bench... build`)
 *
 * Starts its own redis-server (loopback, no persistence) with @mcp-tether/redis/testing, then per
 * store: (a) uncontended — N sequential acquire + release of one key, latency per pair (mean, p50,
 * p99) and pairs per second; (b) 100 waiters — one holder, 100 acquisitions queued behind it, then
 * every holder releases as soon as it is granted: hand-overs per second and the time from a release
 * to the next grant. Two RedisLockStores (two connections, as two processes) share the key in (b),
 * alternating waiters. Writes results/locks-redis.md. Numbers depend on the machine and its load.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryLockStore, type LockStore, type Release } from '@mcp-tether/mutex';
import { RedisLockStore } from '@mcp-tether/redis';
import { startRedis } from '@mcp-tether/redis/testing';

const quick = process.argv.includes('--quick');
const N = quick ? 200 : 5_000;
const WAITERS = 100;
const ROUNDS = quick ? 1 : 5;
const never = new AbortController().signal;
const opts = { max: 1, maxQueue: Infinity, signal: never };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function uncontended(store: LockStore, key: string) {
  const lat: number[] = [];
  for (let i = 0; i < 50; i++) await (await store.acquire(key, opts))(); // warm-up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const s = performance.now();
    const release = await store.acquire(key, opts);
    await release();
    lat.push((performance.now() - s) * 1000);
  }
  const total = performance.now() - t0;
  return { meanUs: mean(lat), p50Us: pct(lat, 50), p99Us: pct(lat, 99), perSec: (N / total) * 1000 };
}

async function contended(stores: LockStore[], key: string) {
  const first = await stores[0]!.acquire(key, opts);
  const grants: number[] = [];
  let lastRelease = 0;
  const handovers: number[] = [];
  const waiters = Array.from({ length: WAITERS }, (_, i) =>
    stores[i % stores.length]!.acquire(key, opts).then(async (release: Release) => {
      const now = performance.now();
      grants.push(now);
      handovers.push((now - lastRelease) * 1000);
      lastRelease = performance.now();
      await release();
    }),
  );
  await new Promise((r) => setTimeout(r, quick ? 100 : 300)); // everyone queued
  const t0 = performance.now();
  lastRelease = t0;
  await first();
  await Promise.all(waiters);
  const total = performance.now() - t0;
  return { perSec: (WAITERS / total) * 1000, handoverP50Us: pct(handovers, 50), handoverP99Us: pct(handovers, 99) };
}

const redis = await startRedis();
try {
  const memory = new MemoryLockStore();
  const a = new RedisLockStore({ url: redis.url, prefix: 'bench:' });
  const b = new RedisLockStore({ url: redis.url, prefix: 'bench:' });
  const rows: string[] = [];
  const best = <T extends Record<string, number>>(runs: T[], by: keyof T) =>
    runs.sort((x, y) => (y[by] as number) - (x[by] as number))[Math.floor(runs.length / 2)]!;
  const run = async <T extends Record<string, number>>(f: () => Promise<T>) => {
    const out: T[] = [];
    for (let r = 0; r < ROUNDS; r++) out.push(await f());
    return best(out, 'perSec');
  };
  const mu = await run(() => uncontended(memory, 'u'));
  const ru = await run(() => uncontended(a, 'u'));
  const mc = await run(() => contended([memory], 'c'));
  const rc = await run(() => contended([a, b], 'c'));
  rows.push(
    '| store | uncontended acquire+release: mean | p50 | p99 | pairs/s | 100 waiters: hand-overs/s | release→grant p50 | p99 |',
    '|---|---|---|---|---|---|---|---|',
    `| MemoryLockStore | ${mu.meanUs.toFixed(1)} µs | ${mu.p50Us.toFixed(1)} µs | ${mu.p99Us.toFixed(1)} µs | ${Math.round(mu.perSec)} | ${Math.round(mc.perSec)} | ${mc.handoverP50Us.toFixed(1)} µs | ${mc.handoverP99Us.toFixed(1)} µs |`,
    `| RedisLockStore (2 connections) | ${ru.meanUs.toFixed(1)} µs | ${ru.p50Us.toFixed(1)} µs | ${ru.p99Us.toFixed(1)} µs | ${Math.round(ru.perSec)} | ${Math.round(rc.perSec)} | ${rc.handoverP50Us.toFixed(1)} µs | ${rc.handoverP99Us.toFixed(1)} µs |`,
  );
  const md = [
    `# Lock stores: memory vs Redis${quick ? ' (quick run: numbers meaningless)' : ''}`,
    '',
    `Node ${process.version}, redis-server on loopback (no persistence), load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; ${N} uncontended pairs, ${WAITERS} waiters, median of ${ROUNDS} rounds.`,
    '',
    ...rows,
    '',
  ].join('\n');
  console.log(md);
  const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'results', quick ? 'quick' : '', 'locks-redis.md');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  await Promise.all([a.close(), b.close()]);
} finally {
  await redis.stop();
}
