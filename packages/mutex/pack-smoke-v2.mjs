// Smoke test of the packed tarball on a v2-only install (@modelcontextprotocol/server + client +
// zod, no @modelcontextprotocol/sdk), run by scripts/pack-check.mjs. Real calls with a real v2
// Client on both protocol eras of a v2 McpServer, one shared mutex({ maxQueue: 0 }):
// - a 2025-era session in memory: two concurrent calls of a destructive tool, one runs, one BUSY;
// - 2026-07-28 through createMcpHandler (a fresh server per request): the same, proving the lock
//   lives on the middleware instance across per-request servers.
// Prints `ok` and exits 0, else exits 1.
import { tether } from '@mcp-tether/core';
import { mutex } from '@mcp-tether/mutex';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const m = mutex({ maxQueue: 0 });
let inside = 0;
let overlap = false;

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [m]);
  server.registerTool('wipe', { annotations: { destructiveHint: true } }, async () => {
    inside++;
    if (inside > 1) overlap = true;
    await new Promise((r) => setTimeout(r, 100));
    inside--;
    return { content: [{ type: 'text', text: 'wiped' }] };
  });
  return server;
}

const call = (client) => client.request({ method: 'tools/call', params: { name: 'wipe', arguments: {} } });
const pairOk = ([first, second]) => first.content?.[0]?.text === 'wiped' && second.isError === true && second.structuredContent?.code === 'BUSY';

async function main() {
  // 2025-era session, in memory
  const server = makeServer();
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const legacyClient = new Client({ name: 'smoke-client', version: '1.0.0' });
  await legacyClient.connect(ct);
  const legacy = await Promise.all([call(legacyClient), call(legacyClient)]);
  await legacyClient.close();

  // 2026-07-28, one server per request, Streamable HTTP in process
  const handler = createMcpHandler(() => makeServer());
  const modernClient = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modernClient.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => handler.fetch(new Request(u, i)) }));
  const held = call(modernClient);
  for (let i = 0; i < 500 && m.stats().running === 0; i++) await new Promise((r) => setTimeout(r, 5));
  const refused = await call(modernClient); // arrives (on a server of its own) while the first holds
  const modern = [await held, refused];
  await modernClient.close();
  await handler.close();

  const stats = m.stats();
  const ok = pairOk(legacy) && pairOk(modern) && !overlap && stats.acquired === 2 && stats.rejected === 2;
  if (!ok) throw new Error(`unexpected: ${JSON.stringify({ legacy, modern, stats, overlap })}`);
  console.log('ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
