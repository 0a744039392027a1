// Installed from the packed tarball into an empty project (scripts/pack-check.mjs): real calls
// with a v1 Client wrapped by tetherClient against a bare v1 McpServer in memory.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { isCallAborted, tetherClient } from '@mcp-tether/client';

const server = new McpServer({ name: 'smoke', version: '1.0.0' });
let cancelled = false;
server.registerTool('count', { inputSchema: {} }, async (_args, extra) => {
  for (let i = 1; i <= 3; i++) {
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: extra._meta.progressToken, progress: i, total: 3 } });
  }
  return { content: [{ type: 'text', text: 'counted' }] };
});
server.registerTool('hang', { inputSchema: {} }, async (_args, extra) => {
  await new Promise((resolve) => extra.signal.addEventListener('abort', () => resolve((cancelled = true))));
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
