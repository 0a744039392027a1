/**
 * (jobs) What `@mcp-tether/jobs` costs, over the in-memory transport with a real SDK 1.x client and
 * `[cancel(), jobs()]`:
 * - memory per held job: `held` jobs running (their handlers wait on one promise), used heap after
 *   full GCs before and while they are held;
 * - per-poll cost: `polls` sequential `jobs.status { jobId }` calls while those jobs are held
 *   (mean µs wall, µs CPU);
 * - round trips, `calls` each, sequential: a plain call of the echo tool; the same tool as a job that
 *   finishes inline (store write, inline wait); and handle mode (answered with a handle at once,
 *   `inlineMs: 0`, then one `jobs.status { waitMs }` that returns the result).
 *
 * Run alone: `node --expose-gc --import tsx src/child.ts jobs '{"held":1000,"polls":2000,"calls":2000}' out.json`.
 */
import { cancel } from '@mcp-tether/cancel';
import { handler, tether } from '@mcp-tether/core';
import { jobs } from '@mcp-tether/jobs';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectInMemory, echoResult, echoSchema, newMcpServer } from '../servers.js';
import { cpuMs, heapAfterGc, round } from '../util.js';

export interface JobsParams {
  held: number;
  polls: number;
  calls: number;
}

export async function run(p: JobsParams) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const handleMode = jobs({
    tools: ['held', 'echo-job'],
    inlineMs: 0,
    maxLivePerOwner: p.held + p.calls + 10,
    leaseMs: 0,
  });
  const inline = jobs({ tools: ['echo-job'], inlineMs: 60_000, maxLivePerOwner: p.calls + 10, leaseMs: 0 });
  const build = (j: ReturnType<typeof jobs>) => {
    const server = newMcpServer();
    tether(server, [cancel(), j]);
    j.registerTools(server);
    server.registerTool('echo', { inputSchema: echoSchema }, async ({ n }) => echoResult(n));
    server.registerTool('echo-job', { inputSchema: echoSchema }, async ({ n }) => echoResult(n));
    server.registerTool(
      'held',
      { inputSchema: echoSchema },
      handler(async ({ n }, ctx) => {
        await Promise.race([
          gate,
          new Promise((_, rej) => ctx.signal.addEventListener('abort', () => rej(ctx.signal.reason), { once: true })),
        ]);
        return echoResult(n);
      }),
    );
    return server;
  };
  const conn = await connectInMemory(build(handleMode));
  const call = (name: string, args: Record<string, unknown>) =>
    conn.client.callTool({ name, arguments: args }, CallToolResultSchema);

  // memory per held job
  for (let i = 0; i < 50; i++) await call('echo', { n: i });
  const heap0 = await heapAfterGc();
  const ids: string[] = [];
  for (let i = 0; i < p.held; i++)
    ids.push(((await call('held', { n: i })).structuredContent as { jobId: string }).jobId);
  const heapHeld = await heapAfterGc();

  // per-poll cost while they are held
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < p.polls; i++) await call('jobs.status', { jobId: ids[i % ids.length] });
  const pollUs = ((performance.now() - t0) * 1000) / p.polls;
  const pollCpuUs = (cpuMs(cpu0) * 1000) / p.polls;
  release();
  for (const id of ids) await call('jobs.status', { jobId: id, waitMs: 5_000 });

  // round trips
  const time = async (fn: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < 100; i++) await fn(i);
    const s = performance.now();
    for (let i = 0; i < p.calls; i++) await fn(i);
    return ((performance.now() - s) * 1000) / p.calls;
  };
  const plainUs = await time((i) => call('echo', { n: i }));
  const handleUs = await time(async (i) => {
    const r = await call('echo-job', { n: i });
    const h = r.structuredContent as { jobId?: string } | undefined;
    if (h?.jobId) await call('jobs.status', { jobId: h.jobId, waitMs: 5_000 });
  });
  await conn.close();
  const inlineConn = await connectInMemory(build(inline));
  const inlineUs = await time((i) =>
    inlineConn.client.callTool({ name: 'echo-job', arguments: { n: i } }, CallToolResultSchema),
  );
  await inlineConn.close();

  return {
    held: p.held,
    bytesPerHeldJob: round((heapHeld - heap0) / p.held, 0),
    pollUs: round(pollUs, 1),
    pollCpuUs: round(pollCpuUs, 1),
    plainCallUs: round(plainUs, 1),
    inlineJobUs: round(inlineUs, 1),
    handleRoundTripUs: round(handleUs, 1),
  };
}
