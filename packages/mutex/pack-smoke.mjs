// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): real calls.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { tether } from '@mcp-tether/core';
import { mutex } from '@mcp-tether/mutex';

const m = mutex({ maxQueue: 0 });
const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [m]);
let inside = 0;
let overlap = false;
server.registerTool('wipe', { inputSchema: {}, annotations: { destructiveHint: true } }, async () => {
  inside++;
  if (inside > 1) overlap = true;
  await new Promise((r) => setTimeout(r, 100));
  inside--;
  return { content: [{ type: 'text', text: 'wiped' }] };
});
const [ct, st] = InMemoryTransport.createLinkedPair();
await server.connect(st);
const client = new Client({ name: 'smoke-client', version: '1.0.0' });
await client.connect(ct);
const [first, second] = await Promise.all([
  client.callTool({ name: 'wipe', arguments: {} }),
  client.callTool({ name: 'wipe', arguments: {} }),
]);
const stats = m.stats();
const ok =
  first.content?.[0]?.text === 'wiped' &&
  second.isError === true &&
  second.structuredContent?.code === 'BUSY' &&
  !overlap &&
  stats.acquired === 1 &&
  stats.rejected === 1;
await client.close();
if (!ok) {
  console.error('pack-smoke failed', { first, second, stats, overlap });
  process.exit(1);
}
console.log('ok');
