/**
 * The server of (10) attacks, started as a child process by scenarios/attack.ts:
 * `node --expose-gc dist/attack-server.js '<options json>'`. The demo-like stack of
 * `@mcp-tether/server` (`createApp`: both eras on one Streamable HTTP endpoint through
 * `@mcp-tether/http`, jobs, locks, questions, in-memory stores) with every bound at its default,
 * plus `@mcp-tether/ratelimit` on one tool. Nobody authenticates: a client is its remote address.
 *
 * Tools: `echo { n }` (trivial), `work { ms }` (a job: sleeps `ms`), `search { q }` (rate limited per
 * client: `search` burst / perSecond from the options), `fill { kib, holdMs }` (a job: appends `kib`
 * KiB of partial output, then sleeps `holdMs`).
 *
 * Prints `URL <url>` once listening. Commands on stdin, one per line, answered on stdout:
 * `mark` (collect garbage, reset the memory peaks, the CPU and event-loop delay counts: `MARK <json>`),
 * `stats` (`STATS <json>`: memory now, after a GC, and at its peak since the mark, sampled every 20 ms;
 * the share of a core used and the event-loop delay since the mark; the front's counters). The process exits when
 * stdin ends, and after `lifeMs` whatever happens (a bench run never leaves a server behind).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { rateLimit } from '@mcp-tether/ratelimit';
import { createApp, sleep } from '@mcp-tether/server';
import { z } from 'zod';

export interface AttackServerOptions {
  /** `search`'s bucket per client: burst, then perSecond. */
  search: { burst: number; perSecond: number };
  /** How long a job tool answers inline before its handle (ms). */
  inlineMs: number;
  /**
   * `@mcp-tether/http` options to change from their defaults (the quick run shortens `bodyTimeoutMs`;
   * `maxClientRequestsInFlight: 0` and `fairShare: 0` here mean `Infinity`, the bound or fair turns
   * off, as JSON has no Infinity).
   */
  http?: { bodyTimeoutMs?: number; maxClientRequestsInFlight?: number; fairShare?: number };
  /** The process exits after this long (ms), whatever happens. */
  lifeMs: number;
}

const opts = JSON.parse(process.argv[2] ?? '{}') as AttackServerOptions;
setTimeout(() => process.exit(3), opts.lifeMs).unref();

const limiter = rateLimit({ perTool: { search: opts.search } });
const app = createApp({
  name: 'attack-bench',
  log: false,
  handleSignals: false,
  redisUrl: false,
  inlineMs: opts.inlineMs,
  ...(opts.http
    ? {
        http: {
          ...opts.http,
          ...(opts.http.maxClientRequestsInFlight === 0 && { maxClientRequestsInFlight: Number.POSITIVE_INFINITY }),
          ...(opts.http.fairShare === 0 && { fairShare: Number.POSITIVE_INFINITY }),
        },
      }
    : {}),
});
app.use(limiter);
app.tool('echo', { inputSchema: { n: z.number() } }, async ({ n }) => String(n));
app.tool('search', { inputSchema: { q: z.string() } }, async ({ q }) => `results for ${q}`);
app.tool('work', { inputSchema: { ms: z.number().int().min(0) }, job: true }, async ({ ms }, ctx) => {
  await sleep(ms, ctx.signal);
  return 'done';
});
const KiB = 'x'.repeat(1023) + '\n';
app.tool(
  'fill',
  { inputSchema: { kib: z.number().int().min(1), holdMs: z.number().int().min(0) }, job: true },
  async ({ kib, holdMs }, ctx) => {
    for (let i = 0; i < kib; i++) await ctx.job?.append(KiB);
    await sleep(holdMs, ctx.signal);
    return 'filled';
  },
);

const served = await app.listen(0, '127.0.0.1');

type Mem = { rss: number; heapUsed: number; external: number; arrayBuffers: number; bodyBytesInFlight: number };
const now = (): Mem => {
  const m = process.memoryUsage();
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    bodyBytesInFlight: served.http.stats.bodyBytesInFlight,
  };
};
let peak = now();
setInterval(() => {
  const m = now();
  for (const k of Object.keys(m) as Array<keyof Mem>) if (m[k] > peak[k]) peak[k] = m[k];
}, 20).unref();

if (process.env.ATTACK_DEBUG) {
  let last = performance.now();
  setInterval(() => {
    const t = performance.now();
    if (t - last > 300) process.stderr.write(`[server] loop stalled ${Math.round(t - last - 100)} ms\n`);
    last = t;
  }, 100).unref();
}

const gc = (globalThis as { gc?: () => void }).gc;
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
let cpu0 = process.cpuUsage();
let t0 = performance.now();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'mark') {
    gc?.();
    peak = now();
    loop.reset();
    cpu0 = process.cpuUsage();
    t0 = performance.now();
    process.stdout.write(`MARK ${JSON.stringify(peak)}\n`);
  } else if (line === 'stats') {
    const s = served.http.stats;
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - t0;
    const at = now();
    gc?.();
    process.stdout.write(
      `STATS ${JSON.stringify({
        now: at,
        afterGc: now(),
        peak,
        // Share of one core this process used since the mark (1 = a core busy all along).
        cpu: (cpu.user + cpu.system) / 1000 / wallMs,
        loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
        front: {
          sessions: s.sessions,
          refusedSessions: s.refusedSessions,
          refusedBodies: s.refusedBodies,
          refusedRequests: s.refusedRequests,
          eventStoreBytes: s.eventStoreBytes,
        },
        limiter: limiter.stats(),
      })}\n`,
    );
  }
});
process.stdin.on('end', () => process.exit(0));
process.stdout.on('error', () => process.exit(0)); // the bench went away
process.stdout.write(`URL ${served.url.href}\n`);
