// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): one real call.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { tether } from '@mcp-tether/core';
import { cancel, sleep, DeadlineExceeded } from '@mcp-tether/cancel';

const c = cancel({ timeouts: { slow: 100 } });
const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [c]);
let cleaned = 0;
let reason;
server.registerTool('slow', { inputSchema: {} }, async (_args, ctx) => {
  ctx.defer(() => void cleaned++);
  await sleep(5_000, ctx.signal).catch((e) => {
    reason = e;
    throw e;
  });
  return { content: [{ type: 'text', text: 'too slow to see' }] };
});
const [ct, st] = InMemoryTransport.createLinkedPair();
await server.connect(st);
const client = new Client({ name: 'smoke-client', version: '1.0.0' });
await client.connect(ct);
const result = await client.callTool({ name: 'slow', arguments: {} });
await new Promise((r) => setTimeout(r, 20));
const ok =
  result.isError === true &&
  result.structuredContent?.code === 'TIMEOUT' &&
  reason instanceof DeadlineExceeded &&
  cleaned === 1 &&
  c.inFlight === 0;
await client.close();
if (!ok) {
  console.error('pack-smoke failed', { result, reason, cleaned, inFlight: c.inFlight });
  process.exit(1);
}
console.log('ok');
