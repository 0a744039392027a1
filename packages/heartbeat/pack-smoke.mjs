// Installed-tarball smoke test: run by scripts/pack-check.mjs in an empty project with only the SDK and zod.
import { tether } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

try {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [heartbeat({ silenceMs: 100 })]);
  server.registerTool('quiet', { inputSchema: {} }, async () => {
    await new Promise((r) => setTimeout(r, 700));
    return { content: [{ type: 'text', text: 'finished' }] };
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const client = new Client({ name: 'smoke-client', version: '1.0.0' });
  await client.connect(a);
  const beats = [];
  // 400 ms client timeout, extended by each heartbeat because the client opted in.
  const r = await client.request({ method: 'tools/call', params: { name: 'quiet', arguments: {} } }, CallToolResultSchema, {
    timeout: 400,
    resetTimeoutOnProgress: true,
    onprogress: (p) => beats.push(p),
  });
  if (r.content[0].text !== 'finished' || beats.length < 2 || !beats.every((p) => /still working/.test(p.message))) {
    throw new Error(`unexpected: ${JSON.stringify({ r, beats })}`);
  }
  await client.close();
  console.log('ok');
  process.exit(0);
} catch (err) {
  console.error(err);
  process.exit(1);
}
