// Installed-tarball smoke test on a v2-only install (@modelcontextprotocol/server + client + zod,
// no @modelcontextprotocol/sdk): logChannel() through tether() on a real v2 McpServer, a real v2
// Client, one tool call per protocol era whose log line arrives as notifications/message —
// a 2025-era session in memory (default level), and a 2026-07-28 request through createMcpHandler
// (level in _meta; a request without one gets no logs). Prints `ok` and exits 0, else exits 1.
import { handler, tether } from '@mcp-tether/core';
import { LOG_LEVEL_META_KEY, logChannel } from '@mcp-tether/log-channel';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

const logs = logChannel({ level: 'info' });

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [logs]);
  server.registerTool(
    'greet',
    { inputSchema: z.object({ name: z.string() }) },
    handler(async ({ name }, ctx) => {
      ctx.log.debug({ hidden: true });
      ctx.log.child('greeter').info({ greeted: name, era: ctx.era });
      return { content: [{ type: 'text', text: `hello ${name}` }] };
    }),
  );
  return server;
}

function listen(client) {
  const received = [];
  client.setNotificationHandler('notifications/message', (n) => void received.push(n.params));
  return received;
}

const greet = (client, meta) =>
  client.request({ method: 'tools/call', params: { name: 'greet', arguments: { name: 'ada' }, ...(meta && { _meta: meta }) } });

async function main() {
  // 2025-era session, in memory: the default level (info) applies.
  const server = makeServer();
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const legacyClient = new Client({ name: 'smoke-client', version: '1.0.0' });
  const legacyLogs = listen(legacyClient);
  await legacyClient.connect(ct);
  if (JSON.stringify(legacyClient.getServerCapabilities()?.logging) !== '{}') throw new Error('logging capability not advertised (2025)');
  const r1 = await greet(legacyClient);
  await legacyClient.close();

  // 2026-07-28, one server per request, Streamable HTTP in process: the level rides each request.
  const mcp = createMcpHandler(() => makeServer());
  const modernClient = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const modernLogs = listen(modernClient);
  await modernClient.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => mcp.fetch(new Request(u, i)) }));
  const r2 = await greet(modernClient, { [LOG_LEVEL_META_KEY]: 'info' });
  const r3 = await greet(modernClient); // no level: no logs
  await modernClient.close();
  await mcp.close();

  const texts = [r1, r2, r3].map((r) => r.content?.[0]?.text);
  if (JSON.stringify(texts) !== JSON.stringify(['hello ada', 'hello ada', 'hello ada'])) throw new Error(`unexpected results ${JSON.stringify(texts)}`);
  const line = (era) => ({ level: 'info', logger: 'greeter', data: { greeted: 'ada', era } });
  if (JSON.stringify(legacyLogs) !== JSON.stringify([line('legacy')])) throw new Error(`unexpected 2025 log lines ${JSON.stringify(legacyLogs)}`);
  if (JSON.stringify(modernLogs) !== JSON.stringify([line('modern')])) throw new Error(`unexpected 2026-07-28 log lines ${JSON.stringify(modernLogs)}`);
  console.log('ok');
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
