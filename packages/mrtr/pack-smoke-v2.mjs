// Smoke test of the packed package on a v2-only install (@modelcontextprotocol/server + client +
// zod, no @modelcontextprotocol/sdk): a real v2 McpServer with mrtr() through tether(), and one
// refund call on each protocol era with a real v2 Client that answers the question:
// - a 2025-era session in memory: mrtr pushes elicitation/create and re-enters the handler;
// - a 2026-07-28 request through createMcpHandler (a fresh server per request): input_required with
//   a sealed requestState, the client answers and retries.
// Prints `ok` and exits 0, else exits 1.
import { handler, tether } from '@mcp-tether/core';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

const approval = { confirm: ask.boolean('Approve the refund') };
let runs = 0;

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [mrtr()]);
  server.registerTool('refund', { inputSchema: z.object({ id: z.string() }) }, handler(async ({ id }, ctx) => {
    runs++;
    const answer = readInputResult(approval);
    if (!answer) return requireInput.elicit(`Refund ${id}?`, approval);
    const done = answer.action === 'accept' && answer.content.confirm;
    return { content: [{ type: 'text', text: done ? `refunded ${id} (${ctx.era})` : 'not refunded' }] };
  }));
  return server;
}

function makeClient(options = {}) {
  const client = new Client({ name: 'smoke-client', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, ...options });
  const asked = [];
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params);
    return { action: 'accept', content: { confirm: true } };
  });
  return { client, asked };
}

async function main() {
  // 2025-era session, in memory
  const server = makeServer();
  const legacy = makeClient();
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  await legacy.client.connect(ct);
  const r1 = await legacy.client.callTool({ name: 'refund', arguments: { id: 'inv-1' } });
  await legacy.client.close();
  await server.close();

  // 2026-07-28, one server per request
  const mcp = createMcpHandler(() => makeServer());
  const modern = makeClient({ versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modern.client.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => mcp.fetch(new Request(u, i)) }));
  const r2 = await modern.client.callTool({ name: 'refund', arguments: { id: 'inv-2' } });
  await modern.client.close();
  await mcp.close();

  const got = { r1: r1.content?.[0]?.text, r2: r2.content?.[0]?.text, asked: [legacy.asked.length, modern.asked.length], runs };
  const want = { r1: 'refunded inv-1 (legacy)', r2: 'refunded inv-2 (modern)', asked: [1, 1], runs: 4 };
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`unexpected: ${JSON.stringify(got)}`);
  if (legacy.asked[0].requestedSchema?.properties?.confirm?.type !== 'boolean') throw new Error(`unexpected elicitation ${JSON.stringify(legacy.asked)}`);
  console.log('ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
