// Installed-tarball smoke test: run by scripts/pack-check.mjs in an empty project with only the SDK and zod.
import { tether } from '@mcp-tether/core';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

try {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [progressMiddleware()]);
  server.registerTool('count', { inputSchema: {} }, async function* () {
    for (let i = 1; i <= 10_000; i++) yield progress({ progress: i, total: 10_000 });
    return { content: [{ type: 'text', text: 'counted' }] };
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const client = new Client({ name: 'smoke-client', version: '1.0.0' });
  await client.connect(a);
  const seen = [];
  const r = await client.request({ method: 'tools/call', params: { name: 'count', arguments: {} } }, CallToolResultSchema, { onprogress: (p) => seen.push(p.progress) });
  const increasing = seen.every((v, i) => i === 0 || v > seen[i - 1]);
  if (r.content[0].text !== 'counted' || seen.length < 2 || seen.length > 101 || seen.at(-1) !== 10_000 || !increasing) {
    throw new Error(`unexpected: ${JSON.stringify({ r, seen })}`);
  }
  await client.close();
  console.log('ok');
  process.exit(0);
} catch (err) {
  console.error(err);
  process.exit(1);
}
