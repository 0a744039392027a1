import { handler, tether } from '@mcp-tether/core';
import { connect, connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/core/testing';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { heartbeat, type DeadSessionInfo } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let kit: TestClient | undefined;
let harness: HttpHarness | undefined;
afterEach(async () => {
  await kit?.close().catch(() => {});
  kit = undefined;
  await harness?.close();
  harness = undefined;
});

async function until(cond: () => boolean, ms = 5_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('session ping', () => {
  it('pings a session regularly; answered pings keep it alive', async () => {
    const dead: DeadSessionInfo[] = [];
    const server = tether(new McpServer({ name: 'ping', version: '1' }), [
      heartbeat({ sessionPing: { intervalMs: 30, timeoutMs: 500, maxFailures: 2, onDead: (i) => dead.push(i) } }),
    ]);
    kit = await connect(server, { sessionId: 'sess-1' });
    await until(() => kit!.wire.serverRequests('ping').length >= 4);
    const pings = kit.wire.serverRequests('ping');
    for (const p of pings.slice(0, 3)) expect(kit.wire.fromClient().some((m) => m.message.id === p.message.id && m.message.result)).toBe(true);
    expect(dead).toEqual([]);
    await kit.ping(); // the session still works both ways
  });

  it('at most one ping in flight; maxFailures failures in a row → onDead once, then the session is closed', async () => {
    const dead: DeadSessionInfo[] = [];
    const server = tether(new McpServer({ name: 'ping', version: '1' }), [
      heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 80, maxFailures: 3, onDead: (i) => dead.push(i) } }),
    ]);
    kit = await connect(server, { sessionId: 'sess-2' });
    let open = 0;
    let maxOpen = 0;
    let received = 0;
    // A client that never answers pings (hung, or gone without closing the connection).
    kit.client.setRequestHandler(PingRequestSchema, (_req, extra) => {
      received++;
      open++;
      maxOpen = Math.max(maxOpen, open);
      return new Promise((_resolve, reject) => {
        extra.signal.addEventListener('abort', () => {
          open--; // the server gave up on it (timeout → notifications/cancelled)
          reject(new Error('cancelled'));
        });
      });
    });
    let clientClosed = false;
    kit.client.onclose = () => {
      clientClosed = true;
    };
    await until(() => clientClosed);
    expect(dead.length).toBe(1);
    expect(dead[0]).toMatchObject({ sessionId: 'sess-2', failures: 3 });
    expect(String(dead[0]!.error)).toMatch(/timed out|timeout/i);
    expect(received).toBe(3);
    expect(maxOpen).toBe(1); // 10 ms interval, 80 ms timeout: yet never two pings at once
    await sleep(100);
    expect(received).toBe(3); // nothing after death
  });

  it('closeOnDead: false only reports', async () => {
    const dead: DeadSessionInfo[] = [];
    const server = tether(new McpServer({ name: 'ping', version: '1' }), [
      heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 30, maxFailures: 1, onDead: (i) => dead.push(i), closeOnDead: false } }),
    ]);
    kit = await connect(server, { sessionId: 'sess-3' });
    kit.client.setRequestHandler(PingRequestSchema, () => new Promise(() => {}));
    await until(() => dead.length === 1);
    await sleep(50);
    expect(dead.length).toBe(1);
    kit.client.setRequestHandler(PingRequestSchema, () => ({}));
    await kit.ping(); // still connected
  });

  it('no session id (stdio-like, in-memory): no pings at all', async () => {
    const server = tether(new McpServer({ name: 'ping', version: '1' }), [heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 50, maxFailures: 1 } })]);
    kit = await connect(server);
    await sleep(120);
    expect(kit.wire.serverRequests('ping')).toEqual([]);
    await kit.ping();
  });
});

describe('stateful Streamable HTTP', () => {
  it('heartbeats ride the POST stream of their call; session pings ride the GET stream and are answered', async () => {
    harness = await serveHttp(() => {
      const s = tether(new McpServer({ name: 'http', version: '1' }), [
        heartbeat({ silenceMs: 100, sessionPing: { intervalMs: 50, timeoutMs: 2_000, maxFailures: 3 } }),
      ]);
      s.registerTool('slow', { inputSchema: {} }, handler(async function* () {
        await sleep(600);
        return { content: [{ type: 'text' as const, text: 'slow done' }] };
      }));
      return s;
    }, { stateful: true });
    const http = await connectHttp(harness.url);
    kit = http;
    const call = http.start('slow', {}, { id: 'slow-1', progressToken: 'tk' });
    const res = await call.response(10_000);
    expect(res.result.content[0].text).toBe('slow done');
    const beats = http.wire.notifications('notifications/progress');
    expect(beats.length).toBeGreaterThanOrEqual(2);
    for (const b of beats) {
      expect(b.message.params.progressToken).toBe('tk');
      expect(b.stream).toEqual({ kind: 'post', requestIds: ['slow-1'] });
    }
    await until(() => http.wire.serverRequests('ping').length >= 2);
    for (const p of http.wire.serverRequests('ping')) expect(p.stream).toEqual({ kind: 'get' });
    const firstPing = http.wire.serverRequests('ping')[0]!.message.id;
    await until(() => http.wire.fromClient().some((m) => m.message.id === firstPing && m.message.result !== undefined));
    expect(harness.sessions.size).toBe(1);
  });

  it('keepAliveMs: an idle call\'s POST stream carries ": keepalive" SSE comment frames', async () => {
    harness = await serveHttp(() => {
      const s = tether(new McpServer({ name: 'ka', version: '1' }), [heartbeat()]);
      s.registerTool('idle', { inputSchema: {} }, async () => {
        await sleep(400);
        return { content: [{ type: 'text' as const, text: 'idle done' }] };
      });
      return s;
    }, { stateful: true, keepAliveMs: 50 });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(harness.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }),
    });
    const sid = init.headers.get('mcp-session-id')!;
    expect(sid).toBeTruthy();
    await init.body?.cancel();
    const h2 = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await fetch(harness.url, { method: 'POST', headers: h2, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.body?.cancel());
    const res = await fetch(harness.url, { method: 'POST', headers: h2, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'idle', arguments: {} } }) });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const body = await res.text();
    expect((body.match(/^: keepalive$/gm) ?? []).length).toBeGreaterThanOrEqual(2);
    expect(body).toContain('idle done');
    await fetch(harness.url, { method: 'DELETE', headers: h2 }).then((r) => r.body?.cancel());
  });
});
