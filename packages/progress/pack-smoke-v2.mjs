// Installed-tarball smoke test on a v2-only install (@modelcontextprotocol/server + client + zod, no
// @modelcontextprotocol/sdk), run by scripts/pack-check.mjs: a 10 000-step progress loop on a real
// v2 McpServer, called by a real v2 Client on both eras — a 2025-era session in memory and a
// 2026-07-28 request through createMcpHandler. Prints `ok` and exits 0, else exits 1.
import { tether } from '@mcp-tether/core';
import { progress, progressMiddleware } from '@mcp-tether/progress';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [progressMiddleware()]);
  server.registerTool('count', { inputSchema: z.object({}) }, async function* () {
    for (let i = 1; i <= 10_000; i++) yield progress({ progress: i, total: 10_000 });
    return { content: [{ type: 'text', text: 'counted' }] };
  });
  return server;
}

async function count(client, era) {
  const seen = [];
  const r = await client.request({ method: 'tools/call', params: { name: 'count', arguments: {} } }, { onprogress: (p) => seen.push(p.progress) });
  const increasing = seen.every((v, i) => i === 0 || v > seen[i - 1]);
  if (r.content[0].text !== 'counted' || seen.length < 2 || seen.length > 101 || seen.at(-1) !== 10_000 || !increasing) {
    throw new Error(`${era}: unexpected ${JSON.stringify({ r, seen })}`);
  }
}

try {
  // 2025-era session, in memory
  const server = makeServer();
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const legacy = new Client({ name: 'smoke-client', version: '1.0.0' });
  await legacy.connect(a);
  await count(legacy, 'legacy');
  await legacy.close();

  // 2026-07-28: one server per request, Streamable HTTP in process
  const handler = createMcpHandler(() => makeServer());
  const modern = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modern.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => handler.fetch(new Request(u, i)) }));
  await count(modern, 'modern');
  await modern.close();
  await handler.close();
  console.log('ok');
  process.exit(0);
} catch (err) {
  console.error(err);
  process.exit(1);
}
