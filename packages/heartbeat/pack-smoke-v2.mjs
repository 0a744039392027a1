// Installed-tarball smoke test on a v2-only install (@modelcontextprotocol/server + client + zod, no
// @modelcontextprotocol/sdk), run by scripts/pack-check.mjs: a tool silent for 700 ms on a real v2
// McpServer, called by a real v2 Client with a 400 ms timeout that only the heartbeats
// (resetTimeoutOnProgress) keep alive, on both eras — a 2025-era session in memory and a 2026-07-28
// request through createMcpHandler. Prints `ok` and exits 0, else exits 1.
import { tether } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

const hb = heartbeat({ silenceMs: 100 }); // one instance: on 2026-07-28 it serves every per-request server

function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [hb]);
  server.registerTool('quiet', { inputSchema: z.object({}) }, async () => {
    await new Promise((r) => setTimeout(r, 700));
    return { content: [{ type: 'text', text: 'finished' }] };
  });
  return server;
}

async function quiet(client, era) {
  const beats = [];
  const r = await client.request(
    { method: 'tools/call', params: { name: 'quiet', arguments: {} } },
    { timeout: 400, resetTimeoutOnProgress: true, onprogress: (p) => beats.push(p) },
  );
  if (r.content[0].text !== 'finished' || beats.length < 2 || !beats.every((p) => /still working/.test(p.message))) {
    throw new Error(`${era}: unexpected ${JSON.stringify({ r, beats })}`);
  }
}

try {
  // 2025-era session, in memory
  const server = makeServer();
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const legacy = new Client({ name: 'smoke-client', version: '1.0.0' });
  await legacy.connect(a);
  await quiet(legacy, 'legacy');
  await legacy.close();

  // 2026-07-28: one server per request, Streamable HTTP in process
  const handler = createMcpHandler(() => makeServer());
  const modern = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await modern.connect(new StreamableHTTPClientTransport(new URL('http://smoke.test/mcp'), { fetch: (u, i) => handler.fetch(new Request(u, i)) }));
  await quiet(modern, 'modern');
  await modern.close();
  await handler.close();
  console.log('ok');
  process.exit(0);
} catch (err) {
  console.error(err);
  process.exit(1);
}
