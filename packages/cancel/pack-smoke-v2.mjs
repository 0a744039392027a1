// Smoke test of the packed tarball on a v2-only install (@modelcontextprotocol/server + client +
// zod, no @modelcontextprotocol/sdk), run by scripts/pack-check.mjs. Real calls with a real v2
// Client on both protocol eras of a v2 McpServer:
// - a 2025-era session in memory: a per-tool deadline answers TIMEOUT, aborts the signal with
//   DeadlineExceeded and runs the ctx.defer cleanup once;
// - 2026-07-28 through createMcpHandler (a fresh server per request, one shared cancel() instance):
//   the same deadline, then a call whose response stream the client closes is aborted with
//   Disconnected and cleaned up.
// Prints `ok` and exits 0, else exits 1.
import { tether } from '@mcp-tether/core';
import { cancel, sleep, DeadlineExceeded, Disconnected } from '@mcp-tether/cancel';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';

const c = cancel({ timeouts: { slow: 100 } });
const reasons = [];
let cleaned = 0;
let entered = 0;

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [c]);
  const body = async (_args, ctx) => {
    entered++;
    ctx.defer(() => void cleaned++);
    await sleep(5_000, ctx.signal).catch((e) => {
      reasons.push(e);
      throw e;
    });
    return { content: [{ type: 'text', text: 'too slow to see' }] };
  };
  server.registerTool('slow', { inputSchema: z.object({}) }, body);
  server.registerTool('wait', { inputSchema: z.object({}) }, body);
  return server;
}

const until = async (pred) => {
  for (let i = 0; i < 500 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!pred()) throw new Error('timed out');
};
const isTimeout = (r) => r.isError === true && r.structuredContent?.code === 'TIMEOUT';

async function main() {
  // 2025-era session, in memory
  const server = makeServer();
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const legacyClient = new Client({ name: 'smoke-client', version: '1.0.0' });
  await legacyClient.connect(ct);
  const legacy = await legacyClient.request({ method: 'tools/call', params: { name: 'slow', arguments: {} } });
  await until(() => cleaned === 1);
  await legacyClient.close();

  // 2026-07-28, one server per request, Streamable HTTP in process
  const handler = createMcpHandler(() => makeServer());
  const fetchFn = (u, i) => handler.fetch(new Request(u, i));
  const modernClient = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modernClient.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: fetchFn }));
  const modern = await modernClient.request({ method: 'tools/call', params: { name: 'slow', arguments: {} } });
  await until(() => cleaned === 2);
  // the client cancels a call by closing its response stream
  const ac = new AbortController();
  const pending = modernClient.request({ method: 'tools/call', params: { name: 'wait', arguments: {} } }, { signal: ac.signal }).catch(() => 'aborted');
  await until(() => entered === 3);
  ac.abort();
  await until(() => cleaned === 3 && c.inFlight === 0);
  const third = await pending;
  await modernClient.close();
  await handler.close();

  const ok =
    isTimeout(legacy) &&
    isTimeout(modern) &&
    third === 'aborted' &&
    reasons.length === 3 &&
    reasons[0] instanceof DeadlineExceeded &&
    reasons[1] instanceof DeadlineExceeded &&
    reasons[2] instanceof Disconnected &&
    cleaned === 3;
  if (!ok) throw new Error(`unexpected: ${JSON.stringify({ legacy, modern, third, reasons: reasons.map(String), cleaned })}`);
  console.log('ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
