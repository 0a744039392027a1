import { handler, tether, type Middleware } from '@mcp-tether/core';
import { connectHttp, serveHttp, type HttpHarness, type TestClient } from '@mcp-tether/testing';
import { describeEachSdk, type MatrixClient, type MatrixServer, type SdkTarget } from '@mcp-tether/testing/matrix';
import { MODERN_PROTOCOL_VERSION } from '@mcp-tether/testing/v2';
import { createMcpHandler, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { heartbeat, type DeadSessionInfo } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let kit: MatrixClient | TestClient | undefined;
let harness: HttpHarness | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
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

/** A factory for `sdk.connect` (once on legacy targets, once per HTTP request on v2-modern). */
function serve(sdk: SdkTarget, middlewares: Middleware[], register: (s: MatrixServer) => void = () => {}) {
  return () => {
    const s = tether(sdk.createServer({ name: 'ping', version: '1' }), middlewares);
    register(s);
    return s;
  };
}

/** Replace the test client's `ping` handler (the SDK lines spell it differently); `fn` gets the request's abort signal. */
function onPing(sdk: SdkTarget, k: MatrixClient, fn: (signal: AbortSignal) => unknown) {
  if (sdk.sdk === 'v1')
    k.client.setRequestHandler(PingRequestSchema, (_req: unknown, extra: { signal: AbortSignal }) => fn(extra.signal));
  else
    k.client.setRequestHandler('ping', (_req: unknown, ctx: { mcpReq: { signal: AbortSignal } }) =>
      fn(ctx.mcpReq.signal),
    );
}

describeEachSdk('session ping', (sdk) => {
  // Session ping needs a session and server→client requests: 2026-07-28 has neither (no
  // sessions, no ping, servers never send requests). See the "off and harmless" test below.
  const legacyOnly = it.skipIf(sdk.era === 'modern');

  legacyOnly('pings a session regularly; answered pings keep it alive', async () => {
    const dead: DeadSessionInfo[] = [];
    kit = await sdk.connect(
      serve(sdk, [
        heartbeat({ sessionPing: { intervalMs: 30, timeoutMs: 500, maxFailures: 2, onDead: (i) => dead.push(i) } }),
      ]),
      { sessionId: 'sess-1' },
    );
    await until(() => kit!.wire.serverRequests('ping').length >= 4);
    const pings = kit.wire.serverRequests('ping');
    for (const p of pings.slice(0, 3))
      expect(kit.wire.fromClient().some((m) => m.message.id === p.message.id && m.message.result)).toBe(true);
    expect(dead).toEqual([]);
    await kit.ping(); // the session still works both ways
  });

  legacyOnly(
    'at most one ping in flight; maxFailures failures in a row → onDead once, then the session is closed',
    async () => {
      const dead: DeadSessionInfo[] = [];
      const k = await sdk.connect(
        serve(sdk, [
          heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 80, maxFailures: 3, onDead: (i) => dead.push(i) } }),
        ]),
        { sessionId: 'sess-2' },
      );
      kit = k;
      let open = 0;
      let maxOpen = 0;
      let received = 0;
      // A client that never answers pings (hung, or gone without closing the connection).
      onPing(sdk, k, (signal) => {
        received++;
        open++;
        maxOpen = Math.max(maxOpen, open);
        return new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            open--; // the server gave up on it (timeout → notifications/cancelled)
            reject(new Error('cancelled'));
          });
        });
      });
      let clientClosed = false;
      k.client.onclose = () => {
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
    },
  );

  legacyOnly('closeOnDead: false only reports', async () => {
    const dead: DeadSessionInfo[] = [];
    const k = await sdk.connect(
      serve(sdk, [
        heartbeat({
          sessionPing: {
            intervalMs: 10,
            timeoutMs: 30,
            maxFailures: 1,
            onDead: (i) => dead.push(i),
            closeOnDead: false,
          },
        }),
      ]),
      { sessionId: 'sess-3' },
    );
    kit = k;
    onPing(sdk, k, () => new Promise(() => {}));
    await until(() => dead.length === 1);
    await sleep(50);
    expect(dead.length).toBe(1);
    onPing(sdk, k, () => ({}));
    await k.ping(); // still connected
  });

  legacyOnly('no session id (stdio-like, in-memory): no pings at all', async () => {
    kit = await sdk.connect(
      serve(sdk, [heartbeat({ sessionPing: { intervalMs: 10, timeoutMs: 50, maxFailures: 1 } })]),
    );
    await sleep(120);
    expect(kit.wire.serverRequests('ping')).toEqual([]);
    await kit.ping();
  });

  it.runIf(sdk.era === 'modern')(
    '2026-07-28: sessionPing stays off and harmless — no requests, no onDead, no timer outlives its request; the watchdog still works',
    async () => {
      const setSpy = vi.spyOn(globalThis, 'setInterval');
      const clearSpy = vi.spyOn(globalThis, 'clearInterval');
      const dead: DeadSessionInfo[] = [];
      const hb = heartbeat({
        silenceMs: 100,
        sessionPing: { intervalMs: 60_000, timeoutMs: 50, maxFailures: 1, onDead: (i) => dead.push(i) },
      });
      kit = await sdk.connect(
        serve(sdk, [hb], (s) => {
          s.registerTool(
            'slow',
            { inputSchema: { n: z.number() } },
            handler(async ({ n }: { n: number }) => {
              await sleep(300);
              return { content: [{ type: 'text' as const, text: `slow ${n}` }] };
            }),
          );
        }),
      );
      const calls = [1, 2, 3].map((n) => kit!.start('slow', { n }, { id: `s${n}`, progressToken: `t${n}` }));
      const res = await Promise.all(calls.map((c) => c.response(10_000)));
      expect(res.map((r) => r.result.content[0].text)).toEqual(['slow 1', 'slow 2', 'slow 3']);
      for (const n of [1, 2, 3]) expect(kit.wire.progress(`t${n}`).length).toBeGreaterThanOrEqual(1);
      await sleep(50);
      expect(kit.wire.serverRequests()).toEqual([]);
      expect(dead).toEqual([]);
      const pingTimers = setSpy.mock.calls
        .map((c, i) => [c[1], setSpy.mock.results[i]!.value] as const)
        .filter(([ms]) => ms === 60_000);
      // setup(host) runs per request on 2026-07-28, before the server knows its era: the ping timer
      // it arms is unref'd and cleared when that request's exchange closes, without ever pinging.
      expect(pingTimers.length).toBeGreaterThanOrEqual(3);
      for (const [, t] of pingTimers) {
        expect((t as NodeJS.Timeout).hasRef()).toBe(false);
        expect(clearSpy.mock.calls.some((c) => c[0] === t)).toBe(true);
      }
      await kit.ping();
    },
  );
});

describeEachSdk('Streamable HTTP', (sdk) => {
  // The kit's stateful Streamable HTTP harness (serveHttp) is built on the v1 SDK transport;
  // 2026-07-28 HTTP is covered by the v2-modern tests below (v2-legacy runs in memory).
  it.runIf(sdk.name === 'v1')(
    'stateful: heartbeats ride the POST stream of their call; session pings ride the GET stream and are answered',
    async () => {
      harness = await serveHttp(
        serve(
          sdk,
          [heartbeat({ silenceMs: 100, sessionPing: { intervalMs: 50, timeoutMs: 2_000, maxFailures: 3 } })],
          (s) => {
            s.registerTool(
              'slow',
              { inputSchema: {} },
              handler(async () => {
                await sleep(600);
                return { content: [{ type: 'text' as const, text: 'slow done' }] };
              }),
            );
          },
        ),
        { stateful: true },
      );
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
      await until(() =>
        http.wire.fromClient().some((m) => m.message.id === firstPing && m.message.result !== undefined),
      );
      expect(harness.sessions.size).toBe(1);
    },
  );

  it.runIf(sdk.era === 'modern')(
    '2026-07-28: heartbeats ride the POST stream of their own call, before its response; nothing else is sent',
    async () => {
      kit = await sdk.connect(
        serve(
          sdk,
          [heartbeat({ silenceMs: 100, sessionPing: { intervalMs: 50, timeoutMs: 2_000, maxFailures: 3 } })],
          (s) => {
            s.registerTool(
              'slow',
              { inputSchema: { ms: z.number() } },
              handler(async ({ ms }: { ms: number }) => {
                await sleep(ms);
                return { content: [{ type: 'text' as const, text: `slept ${ms}` }] };
              }),
            );
          },
        ),
      );
      const a = kit.start('slow', { ms: 600 }, { id: 'slow-a', progressToken: 'ta' });
      const b = kit.start('slow', { ms: 450 }, { id: 'slow-b', progressToken: 'tb' });
      const [ra, rb] = await Promise.all([a.response(10_000), b.response(10_000)]);
      expect([ra.result.content[0].text, rb.result.content[0].text]).toEqual(['slept 600', 'slept 450']);
      for (const [id, token] of [
        ['slow-a', 'ta'],
        ['slow-b', 'tb'],
      ] as const) {
        const onStream = kit.wire.forRequest(id);
        expect(
          onStream.every(
            (m) => m.stream?.kind === 'post' && m.stream.requestIds.length === 1 && m.stream.requestIds[0] === id,
          ),
        ).toBe(true);
        const beats = onStream.filter((m) => m.message.method === 'notifications/progress');
        expect(beats.length).toBeGreaterThanOrEqual(2);
        expect(beats.every((m) => m.message.params.progressToken === token)).toBe(true);
        expect(beats.every((m) => m.seq < kit!.wire.responseTo(id)!.seq)).toBe(true);
      }
      expect(kit.wire.notifications().length).toBe(
        kit.wire.forRequest('slow-a').length + kit.wire.forRequest('slow-b').length - 2,
      );
      expect(kit.wire.serverRequests()).toEqual([]);
    },
  );
});

describe('keep-alive frames on idle streams', () => {
  it('v1 stateful keepAliveMs: an idle call\'s POST stream carries ": keepalive" SSE comment frames', async () => {
    harness = await serveHttp(
      () => {
        const s = tether(new McpServer({ name: 'ka', version: '1' }), [heartbeat()]);
        s.registerTool('idle', { inputSchema: {} }, async () => {
          await sleep(400);
          return { content: [{ type: 'text' as const, text: 'idle done' }] };
        });
        return s;
      },
      { stateful: true, keepAliveMs: 50 },
    );
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(harness.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
      }),
    });
    const sid = init.headers.get('mcp-session-id')!;
    expect(sid).toBeTruthy();
    await init.body?.cancel();
    const h2 = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await fetch(harness.url, {
      method: 'POST',
      headers: h2,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    }).then((r) => r.body?.cancel());
    const res = await fetch(harness.url, {
      method: 'POST',
      headers: h2,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'idle', arguments: {} } }),
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const body = await res.text();
    expect((body.match(/^: keepalive$/gm) ?? []).length).toBeGreaterThanOrEqual(2);
    expect(body).toContain('idle done');
    await fetch(harness.url, { method: 'DELETE', headers: h2 }).then((r) => r.body?.cancel());
  });

  it('v2 createMcpHandler keepAliveMs (2026-07-28): a call\'s response stream, once upgraded to SSE by a heartbeat, carries ": keepalive" frames while idle', async () => {
    const handlerV2 = createMcpHandler(
      () => {
        const s = tether(new McpServerV2({ name: 'ka', version: '1' }), [heartbeat({ silenceMs: 50 })]);
        s.registerTool('idle', { inputSchema: z.object({}) }, async () => {
          await sleep(400);
          return { content: [{ type: 'text' as const, text: 'idle done' }] };
        });
        return s;
      },
      { keepAliveMs: 50, onerror: () => {} } as never,
    );
    const post = (meta: Record<string, unknown>) =>
      handlerV2.fetch(
        new Request('http://tether.test/mcp', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
            'mcp-method': 'tools/call',
            'mcp-name': 'idle',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: {
              name: 'idle',
              arguments: {},
              _meta: {
                ...meta,
                'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
                'io.modelcontextprotocol/clientCapabilities': {},
                'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
              },
            },
          }),
        }),
      );
    try {
      const res = await post({ progressToken: 'ka' });
      expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
      const body = await res.text();
      expect((body.match(/^: keepalive$/gm) ?? []).length).toBeGreaterThanOrEqual(2);
      expect(body).toContain('still working');
      expect(body).toContain('idle done');
      // No token: no heartbeat, so `auto` mode answers with one JSON body at the end (no stream to keep alive).
      const plain = await post({});
      expect(plain.headers.get('content-type')).toMatch(/application\/json/);
      expect(((await plain.json()) as any).result.content[0].text).toBe('idle done');
    } finally {
      await handlerV2.close();
    }
  });
});
