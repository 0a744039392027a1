// Pack smoke scenario (run by scripts/pack-smoke.mjs on each SDK line): real calls with the line's
// Client wrapped by tetherClient against a bare McpServer in memory (2025-era session) — progress
// reaches onProgress, and a silent call is aborted with kind 'silence' and cancelled on the server;
// then connect(url) finds the installed SDK line on its own and follows a call over Streamable HTTP
// (v1: a stateless node:http endpoint, 2025 era; v2: createMcpHandler, 2026-07-28 negotiated).
import { connect, isCallAborted, tetherClient } from '@mcp-tether/client';

/** A Streamable HTTP endpoint of the installed line serving `makeServer`. */
async function serveHttp(sdk, makeServer) {
  if (sdk.line === 'v2') {
    const { createMcpHandler } = await import('@modelcontextprotocol/server');
    const handler = createMcpHandler(() => makeServer());
    return {
      url: 'http://smoke.localhost/mcp',
      fetch: (url, init) => handler.fetch(new Request(url, init)),
      close: () => handler.close(),
    };
  }
  const http = await import('node:http');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const srv = http.createServer(async (req, res) => {
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}/mcp`,
    close: () => new Promise((resolve) => srv.close(resolve)),
  };
}

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

  const endpoint = await serveHttp(sdk, makeServer);
  const connected = await connect(endpoint.url, endpoint.fetch ? { fetch: endpoint.fetch } : {});
  const followed = [];
  const f = await connected.follow('count', {}, { onProgress: (p) => followed.push(p.progress) });
  const era = connected.sdk === 'v2' ? connected.client.getProtocolEra() : 'legacy';
  await connected.close();
  await endpoint.close();
  // In a project with one SDK line (pack-check), connect must find that one; with both, it prefers 2.x.
  const installed = (name) =>
    import(name).then(
      () => true,
      () => false,
    );
  const both =
    (await installed('@modelcontextprotocol/client')) && (await installed('@modelcontextprotocol/sdk/client/index.js'));
  const connectOk =
    connected.sdk === (both ? 'v2' : sdk.line) &&
    f.content?.[0]?.text === 'counted' &&
    followed.join() === '1,2,3' &&
    era === (sdk.line === 'v2' && connected.sdk === 'v2' ? 'modern' : 'legacy');
  if (!connectOk)
    throw new Error(
      `pack-smoke connect/follow failed on ${sdk.line}: ${JSON.stringify({ f, followed, sdk: connected.sdk, era })}`,
    );
  if (!ok)
    throw new Error(
      `pack-smoke failed on ${sdk.line}: ${JSON.stringify({ r, seen, err: String(err), kind: err?.kind, cancelled })}`,
    );
}
