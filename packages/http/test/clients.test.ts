/**
 * Issue 26 on the wire: who the client is (the client key), one client's sessions capped so that
 * another is still served, and the faults 2, 3 and 5. Real HTTP on 127.0.0.1; a second client
 * address is 127.0.0.2 (Linux routes all of 127.0.0.0/8 to loopback); real SDK clients of both
 * lines where a session or a call is involved.
 */
import { connect } from 'node:net';
import { connectHttp } from '@mcp-tether/testing';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHttp, type Listening, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { init, META26, modernHeaders, post, raw, rawSession, until, V25 } from './helpers.js';

let front: McpHttp | undefined;
let at: Listening;
const closers: Array<() => Promise<unknown>> = [];
async function start(o: Partial<McpHttpOptions> = {}) {
  front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server(), ...o });
  at = await front.listen(0);
  return at;
}
afterEach(async () => {
  for (const c of closers.splice(0)) await c().catch(() => {});
  await front?.close();
  front = undefined;
});

const who = (r: any) => JSON.parse(r.content[0].text) as { principal: string | null; clientKey: string | null };

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function v1Client(url: URL, headers: Record<string, string> = {}) {
  const client = new ClientV1({ name: 'v1', version: '0' });
  await client.connect(new TransportV1(url, { requestInit: { headers } }));
  closers.push(() => client.close());
  return client;
}
async function v2Client(url: URL, modern: boolean, headers: Record<string, string> = {}) {
  const client = new ClientV2(
    { name: 'v2', version: '0' },
    (modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}) as never,
  );
  await client.connect(new TransportV2(url, { requestInit: { headers } }));
  closers.push(() => client.close());
  return client;
}

describe('the client key (ctx.clientKey)', () => {
  it('by default the remote address, on SDK 1.x and 2.x sessions and on 2026-07-28; the principal when authenticated', async () => {
    await start();
    const a = await v1Client(at.url);
    expect(who(await a.callTool({ name: 'who', arguments: {} }))).toEqual({
      principal: null,
      clientKey: 'ip:127.0.0.1',
    });
    const b = await v2Client(at.url, false);
    expect(who(await b.callTool({ name: 'who', arguments: {} }))).toEqual({
      principal: null,
      clientKey: 'ip:127.0.0.1',
    });
    const c = await v2Client(at.url, true);
    expect(who(await c.callTool({ name: 'who', arguments: {} }))).toEqual({
      principal: null,
      clientKey: 'ip:127.0.0.1',
    });
    expect(front!.sessions().map((s) => s.clientKey)).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1']);
    await front!.close();

    await start({ authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined });
    const auth = { authorization: 'Bearer alice' };
    const d = await v1Client(at.url, auth);
    expect(who(await d.callTool({ name: 'who', arguments: {} }))).toEqual({ principal: 'alice', clientKey: 'alice' });
    const e = await v2Client(at.url, true, auth);
    expect(who(await e.callTool({ name: 'who', arguments: {} }))).toEqual({ principal: 'alice', clientKey: 'alice' });
  });

  it("X-Forwarded-For counts only with trustProxy; 'connection' and 'session' keys", async () => {
    const forwarded = { 'x-forwarded-for': '198.51.100.1, 203.0.113.9' };
    await start();
    const a = await v1Client(at.url, forwarded);
    expect(who(await a.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:127.0.0.1'); // anyone can write it
    await front!.close();

    await start({ trustProxy: 1 }); // one proxy (here: the test) in front: its peer wrote the last entry
    const b = await v1Client(at.url, forwarded);
    expect(who(await b.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:203.0.113.9');
    const c = await v2Client(at.url, true, forwarded);
    expect(who(await c.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:203.0.113.9');
    await front!.close();

    await start({ clientKey: 'session' });
    const d = await v1Client(at.url);
    const sid = front!.sessions()[0]!.id;
    expect(who(await d.callTool({ name: 'who', arguments: {} })).clientKey).toBe(`session:${sid}`);
    await front!.close();

    await start({ clientKey: 'connection' });
    const h = await rawSession(at.url);
    const r = await post(
      at.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'who', arguments: {} } },
      h,
    );
    expect(await r.text()).toMatch(/clientKey\\":\\"conn:\d+\\"/);
  });
});

describe('sessions per client (maxSessionsPerClient)', () => {
  it('one address at its cap gets 429 + JSON-RPC BUSY with retryAfter; another address and SDK clients of both lines are served', async () => {
    await start({ maxSessions: 20, maxSessionsPerClient: 3 });
    const attacker = async (id: number) =>
      raw(at.url, { headers: JSON_HEADERS, body: JSON.stringify(init(id)), localAddress: '127.0.0.2' });
    for (let i = 1; i <= 3; i++) expect((await attacker(i)).status).toBe(200);
    const refused = await attacker(4);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused.text)).toMatchObject({
      jsonrpc: '2.0',
      id: 4,
      error: {
        code: -32603,
        data: { code: 'BUSY', reason: 'client-session-cap', limit: 3, retryAfterMs: 1000, retryAfterSeconds: 1 },
      },
    });
    expect(front!.stats.refusedSessions).toBe(1);
    // Everyone else: served, on both SDK lines.
    const a = await v1Client(at.url);
    expect(who(await a.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:127.0.0.1');
    const b = await v2Client(at.url, false);
    expect(who(await b.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:127.0.0.1');
    // The attacker frees one (DELETE) and may open one again.
    const sid = front!.sessions().find((s) => s.clientKey === 'ip:127.0.0.2')!.id;
    const del = await raw(at.url, {
      method: 'DELETE',
      headers: { 'mcp-session-id': sid, 'mcp-protocol-version': V25 },
      localAddress: '127.0.0.2',
    });
    expect(del.status).toBe(200);
    expect((await attacker(5)).status).toBe(200);
  });
});

describe('faults found on the wire', () => {
  it('fault 5: a Host with a non-numeric or out-of-range port is 400 with a JSON-RPC body, never 500', async () => {
    await start();
    for (const host of ['localhost:evil', 'localhost:99999', '127.0.0.1:80:80', 'a b']) {
      const r = await raw(at.url, { headers: { ...JSON_HEADERS, host }, body: JSON.stringify(init()) });
      expect(r.status, host).toBe(400);
      expect(JSON.parse(r.text), host).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    }
    // The Fetch handler too.
    const r = await front!.fetch(
      new Request(at.url, { method: 'POST', headers: { ...JSON_HEADERS, host: 'localhost:evil' }, body: '{}' }),
    );
    expect(r.status).toBe(400);
  });

  it('fault 3: a message nested 2 200 levels deep gets -32600 with its id before anything walks it (both eras)', async () => {
    await start();
    const deep = `${'{"a":'.repeat(2_200)}1${'}'.repeat(2_200)}`;
    const modern = await post(
      at.url,
      `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"_meta":${JSON.stringify(META26)},"name":"depth","arguments":{"value":${deep}}}}`,
      modernHeaders('depth'),
    );
    expect(modern.status).toBe(400);
    expect(await modern.json()).toMatchObject({ id: 'deep', error: { code: -32600, data: { maxJsonDepth: 1000 } } });
    const h = await rawSession(at.url);
    const legacy = await post(
      at.url,
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"depth","arguments":{"value":${deep}}}}`,
      h,
    );
    expect(legacy.status).toBe(400);
    expect(await legacy.json()).toMatchObject({ id: 7, error: { code: -32600 } });
    // Up to the bound, served.
    const ok = `${'['.repeat(900)}1${']'.repeat(900)}`;
    const fine = await post(
      at.url,
      `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"depth","arguments":{"value":${ok}}}}`,
      h,
    );
    expect(await fine.text()).toContain('depth 900');
  });

  it('fault 2: a body over the limit is read and discarded, then answered 413: SDK clients of both lines read it every time', async () => {
    await start({ maxBodyBytes: 64 * 1024 });
    const big = { text: 'x'.repeat(256 * 1024) };
    const v1 = await connectHttp(at.url);
    closers.push(() => v1.close());
    const v2 = await v2Client(at.url, true);
    for (let i = 0; i < 6; i++) {
      await expect(v1.callTool('echo', big)).rejects.toThrow(/413|Payload Too Large/);
      await expect(v2.callTool({ name: 'echo', arguments: big })).rejects.toThrow(/413|Payload Too Large/);
    }
    expect(front!.stats.refusedBodies).toBe(12);
    // The connection was kept: the same clients go on.
    expect(JSON.stringify(await v1.callTool('echo', { text: 'small' }))).toContain('echo small');
    // Past maxDiscardBytes the answer goes out and the connection closes.
    const huge = await raw(at.url, { headers: JSON_HEADERS, body: 'x'.repeat(1024 * 1024) }).catch((e) => e);
    if (!(huge instanceof Error)) {
      expect(huge.status).toBe(413);
      expect(huge.headers.connection).toBe('close');
    }
  });
});

/** A raw socket that sends a POST's headers and `sent` bytes of its body, then holds the rest back. */
function withhold(url: URL, declared: number, sent: number, localAddress: string) {
  const socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (c) => (answer += c));
  socket.on('error', () => {});
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      `accept: application/json, text/event-stream\r\ncontent-length: ${declared}\r\n\r\n`,
  );
  if (sent > 0) socket.write(Buffer.alloc(sent, 0x20));
  return { socket, closed, answer: () => answer };
}

describe('memory bounded before anyone is known', () => {
  it('authenticate and the Host check run before a byte of the body is read', async () => {
    let authenticated = 0;
    await start({
      authenticate: () => {
        authenticated++;
        return undefined;
      },
      bodyTimeoutMs: 60_000,
    });
    const s = withhold(at.url, 1024, 0, '127.0.0.1');
    await until(() => authenticated === 1, 10_000, 'authenticate');
    expect(front!.stats.bodyBytesInFlight).toBe(0); // nothing reserved for a refused request
    s.socket.end(Buffer.alloc(1024, 0x20)); // the body arrives: it is discarded, the 401 goes out
    await s.closed;
    expect(s.answer()).toMatch(/^HTTP\/1\.1 401/);
  });

  it('a client that hangs up in the middle of its body: the front stays up, frees what it reserved, serves the next client', async () => {
    await start({ bodyTimeoutMs: 60_000 });
    for (let i = 0; i < 3; i++) {
      const s = withhold(at.url, 1024 * 1024, 64 * 1024, '127.0.0.2');
      await until(() => front!.stats.bodyBytesInFlight > 0, 10_000, 'the body being read');
      s.socket.destroy(); // hang up: the request stream errors / closes before its end
      await s.closed;
      await until(() => front!.stats.bodyBytesInFlight === 0, 10_000, 'the reservation freed');
    }
    const a = await v1Client(at.url);
    expect(who(await a.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:127.0.0.1');
  });

  it('40 withheld bodies from one address stay under the per-client bound and are dropped at the body timeout; another address is served meanwhile', async () => {
    const MiB = 1024 * 1024;
    await start({
      maxBodyBytes: MiB,
      maxBodyBytesInFlight: 8 * MiB,
      maxClientBodyBytesInFlight: 2 * MiB,
      bodyTimeoutMs: 1_000,
      // The body bounds alone (the default 16 requests in flight per client would refuse 24 of the 40 first).
      maxClientRequestsInFlight: Number.POSITIVE_INFINITY,
    });
    const held = Array.from({ length: 40 }, () => withhold(at.url, MiB, MiB - 1024, '127.0.0.2'));
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, front!.stats.bodyBytesInFlight)), 5);
    try {
      // Another client, another address: served while the 40 wait.
      const a = await v1Client(at.url);
      expect(who(await a.callTool({ name: 'who', arguments: {} })).clientKey).toBe('ip:127.0.0.1');
      // Every withheld body is dropped (408, or 429 for those past the bound) and its connection closed.
      await Promise.all(held.map((h) => h.closed));
    } finally {
      clearInterval(watch);
    }
    expect(peak).toBeLessThanOrEqual(2 * MiB + 64 * 1024); // the attacker's 2 MiB, plus the other client's small bodies
    expect(front!.stats.bodyBytesInFlight).toBe(0);
    const statuses = held.map((h) => /^HTTP\/1\.1 (\d+)/.exec(h.answer())?.[1]);
    expect(statuses.every((s) => s === '408' || s === '429')).toBe(true);
    // 2 MiB holds 2 of them at a time: most are refused at once (a few get in when a timed-out one leaves).
    expect(statuses.filter((s) => s === '429').length).toBeGreaterThan(20);
    expect(front!.stats.refusedBodies).toBe(40);
  }, 60_000);
});

describe('the event store bounded in bytes', () => {
  it('per session and in total: big results of 4 sessions (SDK 1.x and 2.x) stay under maxEventStoreBytes; freed when the sessions end', async () => {
    const KiB = 1024;
    await start({ maxEventStoreBytes: 300 * KiB });
    const a = await connectHttp(at.url);
    const b = await connectHttp(at.url);
    const c = await v2Client(at.url, false);
    const d = await v2Client(at.url, false);
    let peak = 0;
    for (let i = 0; i < 4; i++) {
      for (const k of [a, b]) {
        const r: any = await k.callTool('big', { kib: 100 });
        expect(r.content[0].text).toHaveLength(100 * KiB);
      }
      for (const k of [c, d]) {
        const r: any = await k.callTool({ name: 'big', arguments: { kib: 100 } });
        expect(r.content[0].text).toHaveLength(100 * KiB);
      }
      peak = Math.max(peak, front!.stats.eventStoreBytes);
    }
    expect(peak).toBeGreaterThan(100 * KiB); // events are kept (resumability) ...
    expect(peak).toBeLessThanOrEqual(300 * KiB); // ... within the bound
    await a.close();
    await b.close();
    await front!.close();
    expect(front!.stats.eventStoreBytes).toBe(0);
  });
});
