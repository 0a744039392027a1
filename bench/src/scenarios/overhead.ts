/**
 * (1) Overhead, one stack in this process: sequential `tools/call` of the trivial `echo` tool over
 * the SDK's in-memory transport, timed with tinybench (one sample per call).
 *
 * Each stack runs in its own process (the orchestrator alternates them over several rounds):
 * tether's per-call context uses AsyncLocalStorage, which on Node 20 installs promise hooks for the
 * whole process, so a bare server measured in the same process after a tethered one would pay part
 * of tether's cost and hide it.
 */
import { createHook } from 'node:async_hooks';
import { Bench } from 'tinybench';
import { join } from 'node:path';
import { allocations, profile } from '../profile.js';
import { connectInMemory, echoServer, echoServerWithAls, fullStack, type Servable } from '../servers.js';
import { round } from '../util.js';
import { cancel } from '@mcp-tether/cancel';
import { heartbeat } from '@mcp-tether/heartbeat';
import { logChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';
import { mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import type { Middleware } from '@mcp-tether/core';

/** The stacks: bare SDK, FastMCP, tether with no middleware, each middleware alone, all six. */
export const STACKS: Record<string, () => Servable | Promise<Servable>> = {
  bare: () => echoServer(),
  // Reference, not a product: the bare server with its tool callback run inside
  // AsyncLocalStorage.run, i.e. what ANY AsyncLocalStorage-based per-call context costs on this Node
  // (on Node 20, promise hooks for the whole process; on Node >= 24, AsyncContextFrame, nearly free).
  'bare-als': () => echoServerWithAls(),
  full: () => echoServer(fullStack()),
  // All six without AsyncLocalStorage (mrtr asks for it by default, for readInput() & co.).
  'full-noctx': () => echoServer(fullStack(), { asyncContext: false }),
  fastmcp: async () => (await import('../servers-fastmcp.js')).echoFastMcp(),
  core: () => echoServer([]),
  cancel: () => echoServer([cancel()]),
  heartbeat: () => echoServer([heartbeat()]),
  progress: () => echoServer([progressMiddleware()]),
  'log-channel': () => echoServer([logChannel()]),
  mrtr: () => echoServer([mrtr()]),
  mutex: () => echoServer([mutex()] as Middleware[]),
};

export interface OverheadParams {
  stack: string;
  calls: number;
  warmup: number;
  /** Write a CPU profile of the measured calls to this directory. */
  cpuProfDir?: string;
}

export interface OverheadResult {
  stack: string;
  calls: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  wallMs: number;
  cpuMs: number;
  /** Bytes allocated per call (sampling heap profiler over up to 2 000 more calls). */
  allocBytesPerCall: number;
  allocByPackage: Array<{ name: string; bytesPerCall: number }>;
  /** Promises created per call, client and server (counted with an async_hooks init hook after everything else). */
  promisesPerCall: number;
  profile?: unknown;
}

export async function run(p: OverheadParams): Promise<OverheadResult> {
  const make = STACKS[p.stack];
  if (!make) throw new Error(`unknown stack ${p.stack}`);
  const conn = await connectInMemory(await make());
  const r0 = (await conn.client.callTool({ name: 'echo', arguments: { n: 7 } })) as {
    content: Array<{ text: string }>;
  };
  if (r0.content[0]?.text !== '7') throw new Error(`${p.stack}: unexpected result ${JSON.stringify(r0)}`);

  // Warm-up outside tinybench, so that a CPU profile covers the measured calls only.
  for (let i = 0; i < p.warmup; i++) await conn.client.callTool({ name: 'echo', arguments: { n: i } });
  const bench = new Bench({ iterations: p.calls, time: 0, warmup: false, throws: true });
  let n = 0;
  bench.add(p.stack, async () => {
    await conn.client.callTool({ name: 'echo', arguments: { n: n++ } });
  });
  const measure = async () => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await bench.run();
    const wallMs = performance.now() - t0;
    const c = process.cpuUsage(cpu0);
    return { wallMs, cpuMs: (c.user + c.system) / 1000 };
  };
  let prof: unknown;
  let t: { wallMs: number; cpuMs: number };
  if (p.cpuProfDir) {
    const out = await profile(join(p.cpuProfDir, `overhead-${p.stack}.cpuprofile`), measure);
    t = out.value;
    prof = out.summary;
  } else t = await measure();
  const r = bench.tasks[0]!.result;
  if (r.state !== 'completed') throw new Error(`${p.stack}: bench ${r.state}`);
  // Bytes allocated per call, after the timed calls (the sampler would disturb them): load-independent.
  const allocCalls = Math.min(p.calls, 2_000);
  const alloc = await allocations(async () => {
    for (let i = 0; i < allocCalls; i++) await conn.client.callTool({ name: 'echo', arguments: { n: i } });
  });
  // Promises created per call (async_hooks init events of type PROMISE), last: the hook itself
  // slows every promise down, and on Node 20 it stays on for the rest of the process.
  const promiseCalls = Math.min(p.calls, 1_000);
  let promises = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++;
    },
  });
  hook.enable();
  for (let i = 0; i < promiseCalls; i++) await conn.client.callTool({ name: 'echo', arguments: { n: i } });
  hook.disable();
  await conn.close();
  return {
    stack: p.stack,
    promisesPerCall: round(promises / promiseCalls, 1),
    calls: p.calls,
    meanUs: round(r.latency.mean * 1000),
    p50Us: round(r.latency.p50 * 1000),
    p99Us: round(r.latency.p99 * 1000),
    wallMs: round(t.wallMs, 1),
    cpuMs: round(t.cpuMs, 1),
    allocBytesPerCall: Math.round(alloc.bytes / allocCalls),
    allocByPackage: alloc.byPackage
      .slice(0, 8)
      .map((x) => ({ name: x.name, bytesPerCall: Math.round(x.bytes / allocCalls) })),
    ...(prof ? { profile: prof } : {}),
  };
}
