/**
 * (6, detail) What one call in flight keeps alive: `calls` silent calls (each with a progress token)
 * held open on the server, driven by the raw client; used heap after GC before and after, and heap
 * snapshot counts by constructor (objects, promises, closures, suspended async functions...), per
 * open call. Stacks: the bare SDK, `tether(server, [])`, all six middlewares.
 */
import { handler, tether } from '@mcp-tether/core';
import { heapCounts, heapDiff } from '../heapcount.js';
import { RawClient } from '../rawclient.js';
import { fullStack, newMcpServer } from '../servers.js';
import { deferred, heapAfterGc, round, tick } from '../util.js';

export interface OpenCallsParams {
  stack: 'bare' | 'core' | 'full';
  calls: number;
  /** Also count objects in heap snapshots (slower). */
  snapshot: boolean;
}

export async function run(p: OpenCallsParams) {
  const server = newMcpServer();
  if (p.stack !== 'bare') tether(server, p.stack === 'core' ? [] : fullStack());
  let gate = deferred();
  let entered = 0;
  const silent = async () => {
    entered++;
    await gate.promise; // read at call time: the gate in force when the call arrived
    return { content: [{ type: 'text' as const, text: 'done' }] };
  };
  if (p.stack === 'bare') server.registerTool('silent', { inputSchema: {} }, silent);
  else server.registerTool('silent', { inputSchema: {} }, handler(silent));
  const client = await RawClient.connect(server);
  // One call through first, so that lazily created per-server state is in the baseline.
  gate.resolve();
  await client.request('tools/call', { name: 'silent', arguments: {}, _meta: { progressToken: 0 } });
  gate = deferred();
  entered = 0;

  const counts0 = p.snapshot ? await heapCounts() : undefined;
  const heap0 = await heapAfterGc();
  const calls: Array<Promise<unknown>> = [];
  for (let i = 0; i < p.calls; i++) {
    calls.push(client.request('tools/call', { name: 'silent', arguments: {}, _meta: { progressToken: i + 1 } }));
    if (i % 500 === 499) await tick();
  }
  while (entered < p.calls) await tick();
  const heap1 = await heapAfterGc();
  const counts1 = p.snapshot ? await heapCounts() : undefined;
  gate.resolve();
  await Promise.all(calls);
  await client.close();
  const top = counts0 && counts1 ? heapDiff(counts0, counts1, p.calls, 12) : undefined;
  const pick = (name: string) =>
    counts0 && counts1 ? round(((counts1[name]?.[0] ?? 0) - (counts0[name]?.[0] ?? 0)) / p.calls, 1) : undefined;
  return {
    stack: p.stack,
    calls: p.calls,
    heapPerCallKiB: round((heap1 - heap0) / 1024 / p.calls, 2),
    ...(top
      ? {
          perCall: {
            promises: pick('Promise'),
            closures: pick('(closure)'),
            suspendedAsyncFunctions: pick('Generator'),
            contexts: pick('system / Context'),
            heapNumbers: pick('(number)'),
          },
          topByBytes: top,
        }
      : {}),
  };
}
