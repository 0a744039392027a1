/**
 * (6) Memory: sequential calls through the full stack over the in-memory transport with a real SDK
 * client; used heap after full GCs once `small` calls were made, then again after `large` calls in
 * total. The difference is what the stack keeps per call (a leak shows up as growth proportional
 * to the extra calls; one-off warm-up such as JIT code does not, hence the second-half figure).
 *
 * Workloads:
 * - `echo`: the trivial tool of (1), no progress token;
 * - `busy`: a generator tool that yields three progress events and logs one line, called with a
 *   progress token (progress, heartbeat registration, log buckets, per-call state all exercised).
 */
import { handler } from '@mcp-tether/core';
import { progress } from '@mcp-tether/progress';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectInMemory, echoResult, echoServer, echoSchema, fullStack } from '../servers.js';
import { heapAfterGc, round } from '../util.js';
import '@mcp-tether/log-channel';

export interface MemoryParams {
  workload: 'echo' | 'busy';
  /** `full` (default): all six middlewares; `bare`: the SDK alone (echo only), for comparison. */
  stack?: 'full' | 'bare';
  small: number;
  large: number;
}

export async function run(p: MemoryParams) {
  const bare = p.stack === 'bare';
  if (bare && p.workload !== 'echo') throw new Error('the bare stack serves echo only');
  const server = echoServer(bare ? undefined : fullStack());
  if (!bare)
    server.registerTool(
      'busy',
      { inputSchema: echoSchema },
      handler(async function* ({ n }, ctx) {
        yield progress(10, 'start');
        ctx.log.info({ n });
        yield progress(50, 'half');
        yield progress(90, 'almost');
        return echoResult(n);
      }),
    );
  const conn = await connectInMemory(server);
  const callOnce = (i: number) =>
    p.workload === 'echo'
      ? conn.client.callTool({ name: 'echo', arguments: { n: i } })
      : conn.client.callTool(
          { name: 'busy', arguments: { n: i }, _meta: { progressToken: `t${i}` } },
          CallToolResultSchema,
        );
  let i = 0;
  const t0 = performance.now();
  for (; i < p.small; i++) await callOnce(i);
  const heapSmall = await heapAfterGc();
  const mid = Math.floor((p.small + p.large) / 2);
  for (; i < mid; i++) await callOnce(i);
  const heapMid = await heapAfterGc();
  for (; i < p.large; i++) await callOnce(i);
  const wallMs = performance.now() - t0;
  const heapLarge = await heapAfterGc();
  await conn.close();
  const growth = heapLarge - heapSmall;
  return {
    workload: p.workload,
    stack: bare ? 'bare' : 'full',
    small: p.small,
    large: p.large,
    heapSmallMiB: round(heapSmall / 2 ** 20, 2),
    heapLargeMiB: round(heapLarge / 2 ** 20, 2),
    growthKiB: round(growth / 1024, 1),
    /** Growth over the second half alone: warm-up (JIT code, caches) is done by then; a leak keeps growing. */
    secondHalfGrowthKiB: round((heapLarge - heapMid) / 1024, 1),
    bytesPerExtraCall: round(growth / (p.large - p.small), 2),
    wallMs: round(wallMs, 0),
  };
}
