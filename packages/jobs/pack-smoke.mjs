// Installed from the packed tarball into an empty project (scripts/pack-check.mjs) with SDK 1.x only:
// a slow tool answers with a job handle, jobs.status brings its result, the partial resource reads.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { tether, handler } from '@mcp-tether/core';
import { jobs } from '@mcp-tether/jobs';
import { z } from 'zod';

const work = jobs({ tools: ['slow'], inlineMs: 50 });
const server = tether(new McpServer({ name: 'smoke', version: '1.0.0' }), [work]);
work.registerTools(server);
server.registerTool('slow', { inputSchema: { n: z.number() } }, handler(async ({ n }, ctx) => {
  for (let i = 1; i <= n; i++) {
    await new Promise((r) => setTimeout(r, 20));
    await ctx.job?.append(`step ${i}\n`);
  }
  return { content: [{ type: 'text', text: `did ${n}` }] };
}));
const [ct, st] = InMemoryTransport.createLinkedPair();
await server.connect(st);
const client = new Client({ name: 'smoke-client', version: '1.0.0' });
await client.connect(ct);
const first = await client.callTool({ name: 'slow', arguments: { n: 10 } });
const handle = first.structuredContent;
let done;
for (let i = 0; i < 20; i++) {
  done = await client.callTool({ name: 'jobs.status', arguments: { jobId: handle.jobId, waitMs: 2000 } });
  if (done.structuredContent.status !== 'working') break;
}
const partial = await client.readResource({ uri: handle.partialUri });
const ok = handle.status === 'working' && done.content?.[0]?.text === 'did 10' && partial.contents[0].text.split('\n').filter(Boolean).length === 10;
await client.close();
if (!ok) {
  console.error('pack-smoke failed', { first, done, partial });
  process.exit(1);
}
console.log('ok');
