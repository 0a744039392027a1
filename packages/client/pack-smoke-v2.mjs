// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): real calls
// with a v2 Client (2025-era session) wrapped by tetherClient against a bare v2 McpServer in memory.
import { McpServer } from '@modelcontextprotocol/server';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { isCallAborted, tetherClient } from '@mcp-tether/client';

const server = new McpServer({ name: 'smoke', version: '1.0.0' });
let cancelled = false;
server.registerTool('count', { inputSchema: z.object({}) }, async (_args, ctx) => {
  for (let i = 1; i <= 3; i++) {
    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: ctx.mcpReq._meta.progressToken, progress: i, total: 3 } });
  }
  return { content: [{ type: 'text', text: 'counted' }] };
});
server.registerTool('hang', { inputSchema: z.object({}) }, async (_args, ctx) => {
  await new Promise((resolve) => ctx.mcpReq.signal.addEventListener('abort', () => resolve((cancelled = true))));
  return { content: [] };
});
const [ct, st] = InMemoryTransport.createLinkedPair();
await server.connect(st);
const client = new Client({ name: 'smoke-client', version: '1.0.0' });
await client.connect(ct);
const tc = tetherClient(client);
const seen = [];
const r = await tc.callTool('count', {}, { onProgress: (p) => seen.push(p.progress) });
const err = await tc.callTool('hang', {}, { silenceMs: 100 }).catch((e) => e);
await new Promise((r) => setTimeout(r, 50));
const ok = r.content?.[0]?.text === 'counted' && seen.join() === '1,2,3' && isCallAborted(err) && err.kind === 'silence' && cancelled;
await client.close();
if (!ok) {
  console.error('pack-smoke failed', { r, seen, err, cancelled });
  process.exit(1);
}
console.log('ok');
