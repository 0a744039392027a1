/**
 * (5) Heartbeat: `calls` concurrent silent calls, each with a progress token, through the full
 * stack with `heartbeat({ silenceMs })`, in memory, driven by a raw JSON-RPC client (no SDK client:
 * it would add a timeout timer and zod parsing per call). Once every handler is waiting, for
 * `windowMs`: CPU time of this process (the server's work, plus a counter increment per message on
 * the client side), heartbeats received, timers alive (`process.getActiveResourcesInfo()`
 * 'Timeout' entries, before and during), event-loop delay and ping round trips.
 *
 * `variant: 'none'` is the same stack without heartbeat(): the idle cost of the open calls, the
 * baseline to subtract.
 */
import { handler, tether } from '@mcp-tether/core';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { profile } from '../profile.js';
import { RawClient } from '../rawclient.js';
import { fullStack, newMcpServer } from '../servers.js';
import { canGc, deferred, heapAfterGc, median, round, sleep, tick, timersAlive } from '../util.js';

export interface HeartbeatParams {
  calls: number;
  silenceMs: number;
  windowMs: number;
  variant: 'full' | 'none';
  /** Write a CPU profile of the measured window to this directory. */
  cpuProfDir?: string;
}

export async function run(p: HeartbeatParams) {
  const stack = fullStack({ heartbeat: { silenceMs: p.silenceMs } });
  const middlewares = p.variant === 'full' ? stack : stack.filter((m) => m.name !== 'heartbeat');
  const server = newMcpServer();
  tether(server, middlewares);
  const gate = deferred();
  let entered = 0;
  server.registerTool(
    'silent',
    { inputSchema: {} },
    handler(async () => {
      entered++;
      await gate.promise;
      return { content: [{ type: 'text' as const, text: 'done' }] };
    }),
  );
  const client = await RawClient.connect(server);
  const timersBefore = timersAlive();
  const heap0 = canGc ? await heapAfterGc() : NaN;

  const tStart = performance.now();
  const calls: Array<Promise<unknown>> = [];
  for (let i = 0; i < p.calls; i++) {
    calls.push(client.request('tools/call', { name: 'silent', arguments: {}, _meta: { progressToken: i + 1 } }));
    if (i % 500 === 499) await tick();
  }
  while (entered < p.calls) await tick();
  const startMs = performance.now() - tStart;
  // Heap held by the open calls (server side, plus the raw client's id → resolver map).
  const heapOpen = canGc ? await heapAfterGc() : NaN;
  // Let the first heartbeats go out, so the window sees the steady state.
  await sleep(Math.max(2 * p.silenceMs, 200));

  const timersDuring = timersAlive();
  const hb0 = client.count('notifications/progress');
  const loop = monitorEventLoopDelay({ resolution: 5 });
  const pings: number[] = [];
  const window = async () => {
    loop.enable();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    while (performance.now() - t0 < p.windowMs) {
      const tp = performance.now();
      await client.request('ping');
      pings.push(performance.now() - tp);
      await sleep(Math.min(100, p.windowMs / 10));
    }
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    loop.disable();
    return { wall, cpu };
  };
  let prof: unknown;
  let measured: { wall: number; cpu: NodeJS.CpuUsage };
  if (p.cpuProfDir) {
    const out = await profile(join(p.cpuProfDir, `heartbeat-${p.variant}-${p.calls}.cpuprofile`), window);
    measured = out.value;
    prof = out.summary;
  } else measured = await window();
  const { wall, cpu } = measured;
  const beats = client.count('notifications/progress') - hb0;
  const timersMid = timersAlive();

  const tEnd = performance.now();
  gate.resolve();
  await Promise.all(calls);
  const endMs = performance.now() - tEnd;
  await tick();
  const timersAfter = timersAlive();
  await client.close();

  const cpuMs = (cpu.user + cpu.system) / 1000;
  return {
    variant: p.variant,
    calls: p.calls,
    silenceMs: p.silenceMs,
    windowMs: round(wall, 0),
    startMs: round(startMs, 0),
    heapPerOpenCallKiB: round((heapOpen - heap0) / 1024 / p.calls, 2),
    endMs: round(endMs, 0),
    cpuMsPerSec: round((cpuMs * 1000) / wall, 1),
    heartbeatsPerSec: round((beats * 1000) / wall, 0),
    heartbeatsPerCallPerSec: round((beats * 1000) / wall / p.calls, 2),
    cpuUsPerHeartbeat: beats ? round((cpuMs * 1000) / beats, 2) : null,
    timersBefore,
    timersDuring:
      timersDuring.all === undefined
        ? timersDuring
        : { all: Math.max(timersDuring.all, timersMid.all ?? 0), refed: Math.max(timersDuring.refed, timersMid.refed) },
    timersAfter,
    loopDelayP99Ms: round(loop.percentile(99) / 1e6, 1),
    pingMedianMs: round(median(pings), 2),
    ...(prof ? { profile: prof } : {}),
  };
}
