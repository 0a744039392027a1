// Installed from the packed tarball into an empty project (scripts/pack-check.mjs) with SDK 2.x only
// (@modelcontextprotocol/server + client + zod): one jobs() instance shared by every server.
// - a 2025-era session in memory: a slow tool answers with a job handle, jobs.status brings the result;
// - 2026-07-28 through createMcpHandler (a fresh server per request): the same, the job started on
//   one request followed on the next.
// Prints `ok` and exits 0, else exits 1.
import { tether, handler } from '@mcp-tether/core';
import { jobs } from '@mcp-tether/jobs';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';

const work = jobs({ tools: ['slow'], inlineMs: 50 });
function makeServer() {
  const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [work]);
  work.registerTools(server);
  server.registerTool('slow', { inputSchema: z.object({ n: z.number() }) }, handler(async ({ n }) => {
    await new Promise((r) => setTimeout(r, 20 * n));
    return { content: [{ type: 'text', text: `did ${n}` }] };
  }));
  return server;
}

async function follow(client) {
  const first = await client.callTool({ name: 'slow', arguments: { n: 10 } });
  const handle = first.structuredContent;
  let done;
  for (let i = 0; i < 20; i++) {
    done = await client.callTool({ name: 'jobs.status', arguments: { jobId: handle.jobId, waitMs: 2000 } });
    if (done.structuredContent.status !== 'working') break;
  }
  return handle?.status === 'working' && done?.content?.[0]?.text === 'did 10';
}

const [ct, st] = InMemoryTransport.createLinkedPair();
await makeServer().connect(st);
const legacy = new Client({ name: 'smoke-client', version: '1.0.0' });
await legacy.connect(ct);
const legacyOk = await follow(legacy);
await legacy.close();

const mcp = createMcpHandler(() => makeServer(), { onerror: () => {} });
const modern = new Client({ name: 'smoke-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await modern.connect(new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { fetch: (input, init) => mcp.fetch(new Request(input, init)) }));
const modernOk = await follow(modern);
await modern.close();
await mcp.close();

if (!legacyOk || !modernOk) {
  console.error('pack-smoke-v2 failed', { legacyOk, modernOk });
  process.exit(1);
}
console.log('ok');
