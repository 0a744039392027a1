// Smoke test of the packed tarball on a v2-only install (@modelcontextprotocol/server + client +
// zod, no @modelcontextprotocol/sdk): tether() a real v2 McpServer and make one tool call on each
// protocol era with a real v2 Client — a 2025-era session in memory, and a 2026-07-28 request
// through createMcpHandler — proving a middleware and a generator handler ran. Prints `ok` and
// exits 0, else exits 1.
import { tether, progressEvent } from '@mcp-tether/core';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';

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

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [stamp]);
  server.registerTool('add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, async function* ({ a, b }) {
    yield progressEvent(50, 100);
    return { content: [{ type: 'text', text: String(a + b) }] };
  });
  return server;
}

async function callAdd(client) {
  const progress = [];
  const r = await client.request({ method: 'tools/call', params: { name: 'add', arguments: { a: 2, b: 3 } } }, { onprogress: (p) => progress.push(p.progress) });
  return { texts: r.content.map((c) => c.text), progress: progress.join() };
}

async function main() {
  // 2025-era session, in memory
  const server = makeServer();
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const legacyClient = new Client({ name: 'smoke-client', version: '1.0.0' });
  await legacyClient.connect(ct);
  const legacy = await callAdd(legacyClient);
  await legacyClient.close();

  // 2026-07-28, one server per request, Streamable HTTP in process
  const handler = createMcpHandler(() => makeServer());
  const modernClient = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modernClient.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => handler.fetch(new Request(u, i)) }));
  const modern = await callAdd(modernClient);
  await modernClient.close();
  await handler.close();

  const want = (era) => JSON.stringify({ texts: ['5', `era=${era} via=v2`], progress: '50' });
  if (JSON.stringify(legacy) !== want('legacy') || JSON.stringify(modern) !== want('modern')) {
    throw new Error(`unexpected: ${JSON.stringify({ legacy, modern })}`);
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
