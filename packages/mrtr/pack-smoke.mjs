// Smoke test of the packed package: a real McpServer with mrtr() through tether(), a real SDK
// Client over InMemoryTransport that answers the elicitation, one tool call. Prints `ok`, exits 0.
import { handler, tether } from '@mcp-tether/core';
import { ask, mrtr, readInputResult, requireInput } from '@mcp-tether/mrtr';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const fail = (msg) => {
  console.error(`pack-smoke failed: ${msg}`);
  process.exit(1);
};

try {
  const approval = { confirm: ask.boolean('Approve the refund') };
  let runs = 0;
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [mrtr()]);
  server.registerTool('refund', { inputSchema: { id: z.string() } }, handler(async ({ id }) => {
    runs++;
    const answer = readInputResult(approval);
    if (!answer) return requireInput.elicit(`Refund ${id}?`, approval);
    const done = answer.action === 'accept' && answer.content.confirm;
    return { content: [{ type: 'text', text: done ? `refunded ${id}` : 'not refunded' }] };
  }));

  const client = new Client({ name: 'smoke-client', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return { action: 'accept', content: { confirm: true } };
  });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  await client.connect(b);
  const result = await client.callTool({ name: 'refund', arguments: { id: 'inv-1' } });
  await client.close();
  await server.close();

  if (result.content?.[0]?.text !== 'refunded inv-1') fail(`unexpected result ${JSON.stringify(result)}`);
  if (asked.length !== 1 || asked[0].requestedSchema?.properties?.confirm?.type !== 'boolean') fail(`unexpected elicitations ${JSON.stringify(asked)}`);
  if (runs !== 2) fail(`handler ran ${runs} times, expected 2`);
  console.log('ok');
  process.exit(0);
} catch (err) {
  fail(err?.stack ?? String(err));
}
