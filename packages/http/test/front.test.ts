/** Both eras on one endpoint with real SDK clients over real HTTP on 127.0.0.1, and the safety checks. */
import { request as httpRequest } from 'node:http';
import { connectHttp } from '@mcp-tether/testing';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHttp, type Listening, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { META26, read, V26, type Reading } from './helpers.js';

let front: McpHttp | undefined;
let at: Listening;
async function start(o: Partial<McpHttpOptions> = {}) {
  front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server(), ...o });
  at = await front.listen(0);
  return at;
}
afterEach(async () => {
  await front?.close();
  front = undefined;
});

const textOf = (r: any) => (r.content ?? []).map((c: any) => c.text).join('\n');
const init = (id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});
const H = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(at.url, {
    method: 'POST',
    headers: { ...H, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** Open a session with a raw initialize; returns its id. */
async function rawSession(): Promise<string> {
  const r = await post(init());
  expect(r.status).toBe(200);
  await r.text();
  const sid = r.headers.get('mcp-session-id')!;
  await post(
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
  );
  return sid;
}

async function modernClient(url: URL) {
  const client = new ClientV2({ name: 'modern', version: '0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  await client.connect(new TransportV2(url));
  return client;
}

describe('one endpoint, both eras', () => {
  it('SDK 1.x sessions and SDK 2.x 2026-07-28 requests on the same URL', async () => {
    await start();
    const legacy = await connectHttp(at.url);
    expect(textOf(await legacy.callTool('echo', { text: 'a' }))).toBe('echo a principal=- era=legacy');
    expect(front!.sessions()).toHaveLength(1);
    const modern = await modernClient(at.url);
    const r = await modern.callTool({ name: 'echo', arguments: { text: 'b' } });
    expect(textOf(r)).toBe('echo b principal=- era=modern');
    expect(front!.sessions()).toHaveLength(1); // 2026-07-28 is stateless: no session
    // A 2026-07-28 request ignores Mcp-Session-Id (spec 2026-07-28 transports), even a foreign one.
    const META = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    const stray = await post(
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { _meta: META, name: 'echo', arguments: { text: 'c' } } },
      {
        'mcp-session-id': 'not-a-session',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'echo',
      },
    );
    expect(await stray.text()).toContain('echo c principal=- era=modern');
    // With the id of a live session too (the front's shortcut for session messages must not take it);
    // and a 2025 header on a 2026 body is the SDK's header/body mismatch, not a session call.
    const sid = await rawSession();
    const call = (headers: Record<string, string>) =>
      post(
        {
          jsonrpc: '2.0',
          id: 6,
          method: 'tools/call',
          params: { _meta: META, name: 'echo', arguments: { text: 'd' } },
        },
        { 'mcp-session-id': sid, 'mcp-method': 'tools/call', 'mcp-name': 'echo', ...headers },
      );
    expect(await (await call({ 'mcp-protocol-version': '2026-07-28' })).text()).toContain(
      'echo d principal=- era=modern',
    );
    const mismatch = await call({ 'mcp-protocol-version': '2025-11-25' });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.text()).not.toContain('era=legacy');
    await modern.close();
    await legacy.close();
  });

  it('SDK 2.x servers per 2025-era session', async () => {
    await start({ legacy: () => v2Server() });
    const legacy = await connectHttp(at.url);
    expect(textOf(await legacy.callTool('echo', { text: 'v2' }))).toBe('echo v2 principal=- era=legacy');
    await legacy.close();
  });

  it('front.handle inside an existing Node app, behind a body parser', async () => {
    const { createServer } = await import('node:http');
    front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server() });
    const handle = front.handle;
    const app = createServer((req, res) => {
      // What express.json() does: read the body, put the parsed value on req.body.
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (chunks.length) (req as any).body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        handle(req, res);
      });
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    try {
      const url = new URL(`http://127.0.0.1:${(app.address() as any).port}/mcp`);
      const legacy = await connectHttp(url);
      expect(textOf(await legacy.callTool('echo', { text: 'app' }))).toBe('echo app principal=- era=legacy');
      await legacy.close();
      const modern = await modernClient(url);
      expect(textOf(await modern.callTool({ name: 'echo', arguments: { text: 'app' } }))).toBe(
        'echo app principal=- era=modern',
      );
      await modern.close();
    } finally {
      app.closeAllConnections();
      await new Promise((r) => app.close(r));
    }
  });

  it('the Fetch-style handler serves both eras too', async () => {
    front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server() });
    const f = front.fetch;
    const base = 'http://localhost/mcp';
    const r = await f(new Request(base, { method: 'POST', headers: H, body: JSON.stringify(init()) }));
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('"protocolVersion":"2025-11-25"');
    const modern = new ClientV2({ name: 'modern', version: '0' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    await modern.connect(new TransportV2(new URL(base), { fetch: (u: any, i: any) => f(new Request(u, i)) }));
    expect(textOf(await modern.callTool({ name: 'echo', arguments: { text: 'f' } }))).toBe(
      'echo f principal=- era=modern',
    );
    await modern.close();
    // A 2025-era session through it, with an SDK 1.x client (SSE streams, GET stream, DELETE).
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const legacy = new Client({ name: 'legacy', version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(base), {
      fetch: (u: any, i: any) => f(new Request(u, i)),
    });
    await legacy.connect(transport);
    expect(textOf(await legacy.callTool({ name: 'echo', arguments: { text: 'g' } }))).toBe(
      'echo g principal=- era=legacy',
    );
    expect(front.sessions()).toHaveLength(2);
    await transport.terminateSession();
    expect(front.sessions()).toHaveLength(1);
    await legacy.close();
  });
});

describe('safe by default', () => {
  const status = (headers: Record<string, string>, body: unknown = init()) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest(at.url, { method: 'POST', headers: { ...H, ...headers } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });

  it('Host and Origin are checked against loopback names (DNS rebinding)', async () => {
    await start();
    expect(await status({ host: 'evil.example.com' })).toBe(403);
    expect(await status({ origin: 'http://evil.example.com' })).toBe(403);
    expect(await status({ origin: 'null' })).toBe(403);
    expect(await status({ host: `localhost:${at.port}`, origin: `http://localhost:${at.port}` })).toBe(200);
    expect(front!.sessions()).toHaveLength(1); // the refused ones opened nothing
  });

  it('the lists are configurable', async () => {
    await start({ allowedHosts: ['mcp.example.com'], allowedOrigins: ['https://app.example.com'] });
    expect(await status({ host: 'mcp.example.com' })).toBe(200);
    expect(await status({ host: 'mcp.example.com', origin: 'https://app.example.com' })).toBe(200);
    expect(await status({ host: 'mcp.example.com', origin: 'http://app.example.com' })).toBe(403);
    expect(await status({})).toBe(403); // 127.0.0.1 is not listed any more
  });

  it("an entry's port is dropped, as the Host header's is; a URL, a path or an empty list is refused at construction", async () => {
    await start({ allowedHosts: ['MCP.example.com:8080', '[::1]:3000'] });
    expect(await status({ host: 'mcp.example.com:8080' })).toBe(200);
    expect(await status({ host: 'mcp.example.com' })).toBe(200);
    expect(await status({ host: `[::1]:${at.port}` })).toBe(200);
    expect(await status({})).toBe(403);
    const make = (o: Partial<McpHttpOptions>) => () => createMcpHttp({ legacy: () => v1Server(), ...o });
    expect(make({ allowedHosts: ['http://example.com'] })).toThrow(
      /allowedHosts entry "http:\/\/example\.com": give a host name \(example\.com\), not a URL or a path/,
    );
    expect(make({ allowedHosts: ['example.com/mcp'] })).toThrow(TypeError);
    expect(make({ allowedHosts: [] })).toThrow(/allowedHosts is empty, so every request would get 403/);
  });

  it("['*'] accepts any Host and Origin, as '*' does; a pattern entry is refused at construction", async () => {
    await start({ allowedHosts: ['*'], allowedOrigins: ['*'] });
    expect(await status({ host: 'mcp.example.com' })).toBe(200);
    expect(await status({ host: 'anything.test:8443', origin: 'https://app.example.com' })).toBe(200);
    expect(await status({ host: 'x' })).toBe(200);
    // A malformed Host is still 400: '*' lifts the allowlist, not the syntax check.
    expect(await status({ host: 'a b' })).toBe(400);
    await front!.close();
    await start({ allowedHosts: ['mcp.example.com', '*'] });
    expect(await status({ host: 'other.example.com' })).toBe(200);
    const make = (o: Partial<McpHttpOptions>) => () => createMcpHttp({ legacy: () => v1Server(), ...o });
    expect(make({ allowedHosts: ['*.example.com'] })).toThrow(
      /allowedHosts entry "\*\.example\.com": patterns are not supported/,
    );
    expect(make({ allowedOrigins: ['https://*.example.com'] })).toThrow(TypeError);
    expect(make({ allowedHosts: 'example.com' as never })).toThrow(/allowedHosts must be '\*' or an array of strings/);
  });

  it('a body over maxBodyBytes gets 413; bad JSON -32700; a bad envelope -32600 with its id', async () => {
    await start({ maxBodyBytes: 1000 });
    const big = await post({ jsonrpc: '2.0', id: 1, method: 'ping', params: { x: 'y'.repeat(2000) } });
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).error.code).toBe(-32600);
    const bad = await post('{not json');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ id: null, error: { code: -32700 } });
    const env = await post({ jsonrpc: '1.0', id: 7, method: 'ping' });
    expect(env.status).toBe(400);
    expect(await env.json()).toMatchObject({ id: 7, error: { code: -32600 } });
    const text = await post('{}', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(front!.sessions()).toHaveLength(0);
    // Client mistakes, counted (never reported to onError): -32700, -32600, 415; the 413 is refusedBodies.
    expect(front!.stats).toMatchObject({ invalidRequests: 3, refusedBodies: 1 });
  });

  it('an unknown or garbage Mcp-Session-Id gets 404 with no side effect', async () => {
    await start();
    const sid = await rawSession();
    for (const id of ['no-such-session', 'x'.repeat(5000), 'sp ace', sid.toUpperCase()]) {
      const r = await post(
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
      );
      expect(r.status).toBe(404);
      const g = await fetch(at.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': id } });
      expect(g.status).toBe(404);
      await g.text();
    }
    expect(front!.sessions().map((s) => s.id)).toEqual([sid]);
    const ok = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    );
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('"echo"');
  });

  it('DELETE ends a session; maxSessions refuses the next initialize with 503 + JSON-RPC error', async () => {
    await start({ maxSessions: 2, maxSessionsPerClient: 2 }); // one client here: the per-client cap would come first
    const a = await rawSession();
    await rawSession();
    const third = await post(init(9));
    expect(third.status).toBe(503);
    expect(await third.json()).toMatchObject({ id: 9, error: { data: { code: 'BUSY', maxSessions: 2 } } });
    const del = await fetch(at.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': a, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(del.status).toBe(200);
    expect(front!.sessions()).toHaveLength(1);
    expect((await post(init(10))).status).toBe(200);
  });

  it('authenticate: 401 without a principal; the principal reaches ctx (both eras); a session is unknown to other principals', async () => {
    await start({ authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined });
    expect((await post(init())).status).toBe(401);
    const alice = { authorization: 'Bearer alice' };
    const r = await post(init(), alice);
    expect(r.status).toBe(200);
    await r.text();
    const sid = r.headers.get('mcp-session-id')!;
    const h = { ...alice, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
    const call = await post(
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
      h,
    );
    expect(await call.text()).toContain('echo x principal=alice era=legacy');
    const bob = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, { ...h, authorization: 'Bearer bob' });
    expect(bob.status).toBe(404);
    const anon = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, { ...h, authorization: '' });
    expect(anon.status).toBe(401);
    const modern = new ClientV2({ name: 'modern', version: '0' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    await modern.connect(new TransportV2(at.url, { requestInit: { headers: { authorization: 'Bearer carol' } } }));
    expect(textOf(await modern.callTool({ name: 'echo', arguments: { text: 'm' } }))).toBe(
      'echo m principal=carol era=modern',
    );
    await modern.close();
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('front.notify (2026-07-28 subscriptions/listen)', () => {
  it('resourceUpdated reaches the listen streams subscribed to that URI, and no other', async () => {
    const { url } = await start({ modern: () => v2Server({ resources: { subscribe: true } }) });
    front!.notify.resourceUpdated('job://before/partial'); // no 2026 request yet: nothing to send, no error
    const listen = (id: number, uri: string) =>
      fetch(url, {
        method: 'POST',
        headers: { ...H, 'mcp-protocol-version': V26, 'mcp-method': 'subscriptions/listen' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'subscriptions/listen',
          params: { _meta: META26, notifications: { resourceSubscriptions: [uri] } },
        }),
      }).then(read);
    const a = await listen(1, 'job://a/partial');
    const b = await listen(2, 'job://b/partial');
    const acked = (r: Reading) => r.messages.some((m) => m.method === 'notifications/subscriptions/acknowledged');
    for (let i = 0; i < 500 && !(acked(a) && acked(b)); i++) await sleep(10);
    expect(acked(a) && acked(b)).toBe(true);
    front!.notify.resourceUpdated('job://a/partial');
    const updates = (r: Reading) =>
      r.messages.filter((m) => m.method === 'notifications/resources/updated').map((m) => m.params.uri);
    for (let i = 0; i < 500 && updates(a).length === 0; i++) await sleep(10);
    expect(updates(a)).toEqual(['job://a/partial']);
    await sleep(100);
    expect(updates(b)).toEqual([]);
  });
});
