// Smoke test of the packed tarball on a v1-only install (@modelcontextprotocol/sdk + zod, no v2
// packages): tether() a real McpServer, connect a real Client in memory, make one tool call that
// proves a middleware and a generator handler ran. Prints `ok` and exits 0, else exits 1.
import { tether, progressEvent } from '@mcp-tether/core';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

async function main() {
  const stamp = {
    name: 'stamp',
    async handle(ctx, next) {
      const result = await next();
      return { ...result, content: [...result.content, { type: 'text', text: `era=${ctx.era} via=${ctx.host.sdk}` }] };
    },
    onEvent(_ctx, event, next) {
      if (event.type !== 'progress') return next(event);
      return next({ type: 'notification', notification: { method: 'notifications/progress', params: { progress: event.progress, total: event.total } } });
    },
  };
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [stamp]);
  server.registerTool('add', { inputSchema: { a: z.number(), b: z.number() } }, async function* ({ a, b }) {
    yield progressEvent(50, 100);
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'smoke-client', version: '1.0.0' });
  await client.connect(ct);
  const progress = [];
  const r = await client.request({ method: 'tools/call', params: { name: 'add', arguments: { a: 2, b: 3 } } }, CallToolResultSchema, {
    onprogress: (p) => progress.push(p.progress),
  });
  await client.close();
  const texts = r.content.map((c) => c.text);
  if (texts[0] !== '5' || texts[1] !== 'era=legacy via=v1' || progress.join() !== '50') {
    throw new Error(`unexpected: ${JSON.stringify({ texts, progress })}`);
  }
  console.log('ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
