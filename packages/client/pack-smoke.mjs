// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line, 2025-era session): real
// calls with the line's Client wrapped by tetherClient against a bare McpServer in memory —
// progress reaches onProgress, and a silent call is aborted with kind 'silence' and cancelled on
// the server.
import { isCallAborted, tetherClient } from '@mcp-tether/client';

/** The bare SDK handler's request seams: v1 `extra`, v2 `ctx.mcpReq`. */
const reqOf = (sdk, extra) =>
  sdk.line === 'v1'
    ? { notify: (n) => extra.sendNotification(n), signal: extra.signal, meta: extra._meta }
    : { notify: (n) => extra.mcpReq.notify(n), signal: extra.mcpReq.signal, meta: extra.mcpReq._meta };

export default async function smoke(sdk) {
  let cancelled = false;
  const makeServer = () => {
    const server = sdk.createServer();
    server.registerTool('count', { inputSchema: sdk.schema({}) }, async (_args, extra) => {
      const req = reqOf(sdk, extra);
      for (let i = 1; i <= 3; i++) {
        await req.notify({
          method: 'notifications/progress',
          params: { progressToken: req.meta.progressToken, progress: i, total: 3 },
        });
      }
      return { content: [{ type: 'text', text: 'counted' }] };
    });
    server.registerTool('hang', { inputSchema: sdk.schema({}) }, async (_args, extra) => {
      const req = reqOf(sdk, extra);
      await new Promise((resolve) =>
        req.signal.addEventListener('abort', () => {
          cancelled = true;
          resolve();
        }),
      );
      return { content: [] };
    });
    return server;
  };
  const client = await sdk.connect(makeServer, 'legacy');
  const tc = tetherClient(client.raw);
  const seen = [];
  const r = await tc.callTool('count', {}, { onProgress: (p) => seen.push(p.progress) });
  const err = await tc.callTool('hang', {}, { silenceMs: 100 }).catch((e) => e);
  await new Promise((r) => setTimeout(r, 50));
  const ok =
    r.content?.[0]?.text === 'counted' &&
    seen.join() === '1,2,3' &&
    isCallAborted(err) &&
    err.kind === 'silence' &&
    cancelled;
  await client.close();
  if (!ok)
    throw new Error(
      `pack-smoke failed on ${sdk.line}: ${JSON.stringify({ r, seen, err: String(err), kind: err?.kind, cancelled })}`,
    );
}
