// Installed-tarball smoke test: a real McpServer with logChannel() through tether(), a real SDK
// Client over InMemoryTransport, one tool call whose log line arrives as notifications/message.
import { handler, tether } from '@mcp-tether/core';
import { logChannel } from '@mcp-tether/log-channel';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const fail = (msg) => {
  console.error(`pack-smoke: ${msg}`);
  process.exit(1);
};

const sunk = [];
const logs = logChannel({ level: 'info', sink: (e) => sunk.push(e) });
const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [logs]);
server.registerTool(
  'greet',
  { inputSchema: { name: z.string() } },
  handler(async ({ name }, ctx) => {
    ctx.log.debug({ hidden: true });
    ctx.log.child('greeter').info({ greeted: name });
    return { content: [{ type: 'text', text: `hello ${name}` }] };
  }),
);

const client = new Client({ name: 'smoke-client', version: '1.0.0' });
const received = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  received.push(n.params);
});
const [ct, st] = InMemoryTransport.createLinkedPair();
await server.connect(st);
await client.connect(ct);

if (JSON.stringify(client.getServerCapabilities()?.logging) !== '{}') fail('logging capability not advertised');
const result = await client.callTool({ name: 'greet', arguments: { name: 'ada' } });
if (result.content?.[0]?.text !== 'hello ada') fail(`unexpected result ${JSON.stringify(result)}`);
if (JSON.stringify(received) !== JSON.stringify([{ level: 'info', logger: 'greeter', data: { greeted: 'ada' } }])) {
  fail(`unexpected log lines ${JSON.stringify(received)}`);
}
if (sunk.length !== 2) fail(`sink got ${sunk.length} entries, expected 2`);
await client.close();
await server.close();
console.log('ok');
