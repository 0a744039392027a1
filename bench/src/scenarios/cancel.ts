/**
 * (3) Cancel latency through the full stack, in memory: calls cancelled by the SDK client at random
 * points (a seeded random delay of 0–2 ms or a few event-loop turns after the call was sent). The
 * latency is measured on the server: from the moment `notifications/cancelled` arrives at the
 * server transport (a tap on its `onmessage`, before the SDK sees it) to the moment the handler's
 * `finally` runs. Calls run one at a time; the next starts once cancel()'s `inFlight` is back to 0.
 *
 * Two handler styles:
 * - `signal`: a plain async handler looping on `sleep(1, ctx.signal)` from @mcp-tether/cancel;
 * - `generator`: a generator handler looping on a 1 ms timer that does not take the signal, then
 *   `yield progress(...)`: core abandons it at the abort (`gen.return()`), and its `finally` runs
 *   when the pending timer fires, so this one includes up to ~1 ms of JavaScript's own limit.
 */
import { cancel, sleep } from '@mcp-tether/cancel';
import { handler, tether } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { logChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { setTimeout as delay } from 'node:timers/promises';
import { connectInMemory, newMcpServer, tapServerInbound } from '../servers.js';
import { percentile, rng, round, tick } from '../util.js';
import { z } from 'zod';

export interface CancelParams {
  calls: number;
  style: 'signal' | 'generator';
  seed?: number;
}

export async function run(p: CancelParams) {
  const cancellation = cancel();
  const server = newMcpServer();
  tether(server, [cancellation, heartbeat(), progressMiddleware(), logChannel(), mrtr(), mutex()]);
  const started = new Set<string | number>();
  const finallyAt = new Map<string | number, number>();
  const arrivedAt = new Map<string | number, number>();
  const STEPS = 2000; // ~2 s at most per call: every call is cancelled long before

  if (p.style === 'signal') {
    server.registerTool(
      'work',
      { inputSchema: { i: z.number() } },
      handler(async (_args, ctx) => {
        started.add(ctx.requestId);
        try {
          for (let s = 0; s < STEPS; s++) await sleep(1, ctx.signal);
          return { content: [{ type: 'text' as const, text: 'done' }] };
        } finally {
          finallyAt.set(ctx.requestId, performance.now());
        }
      }),
    );
  } else {
    server.registerTool(
      'work',
      { inputSchema: { i: z.number() } },
      handler(async function* (_args, ctx) {
        started.add(ctx.requestId);
        try {
          for (let s = 0; s < STEPS; s++) {
            await delay(1);
            yield progress({ progress: s + 1, total: STEPS });
          }
          return { content: [{ type: 'text' as const, text: 'done' }] };
        } finally {
          finallyAt.set(ctx.requestId, performance.now());
        }
      }),
    );
  }

  const conn = await connectInMemory(server);
  tapServerInbound(conn.serverTransport, (m) => {
    if (m.method === 'notifications/cancelled') arrivedAt.set(m.params?.requestId, performance.now());
  });

  const random = rng(p.seed ?? 42);
  const waitIdle = async () => {
    const t0 = performance.now();
    while (cancellation.inFlight > 0) {
      if (performance.now() - t0 > 10_000) throw new Error('a cancelled call did not finish within 10 s');
      await tick();
    }
  };

  const t0 = performance.now();
  let completed = 0;
  for (let i = 0; i < p.calls; i++) {
    const ac = new AbortController();
    const call = conn.client
      .callTool({ name: 'work', arguments: { i } }, CallToolResultSchema, { signal: ac.signal })
      .then(
        () => completed++,
        () => {},
      );
    const r = random();
    if (r < 0.2) {
      for (let k = Math.floor(r * 20); k > 0; k--) await tick(); // 0..3 event-loop turns
    } else {
      await delay(Math.floor(((r - 0.2) / 0.8) * 3)); // 0..2 ms
    }
    ac.abort('bench');
    await call;
    await waitIdle();
  }
  const wallMs = performance.now() - t0;
  await conn.close();

  const latencies: number[] = [];
  let beforeStart = 0;
  for (const [id, at] of arrivedAt) {
    const f = finallyAt.get(id);
    if (f !== undefined) latencies.push(f - at);
    else if (!started.has(id)) beforeStart++;
  }
  return {
    style: p.style,
    calls: p.calls,
    measured: latencies.length,
    cancelledBeforeHandler: beforeStart,
    completedAnyway: completed,
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    maxMs: round(Math.max(...latencies), 3),
    wallMs: round(wallMs, 0),
  };
}
