/**
 * Issue 26, requests in flight per client (`maxClientRequestsInFlight`), on the wire: a client at
 * its bound is refused 429 with a JSON-RPC `BUSY` body before its body is read, while another
 * address (127.0.0.2) and another principal are served; every way a response ends gives its slot
 * back; standing streams hold none once open; the default leaves an SDK client's parallel calls
 * alone. Real HTTP on 127.0.0.1, real SDK clients where a client is involved.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHttp, type Listening, type McpHttp, type McpHttpOptions } from '../src/index.js';
import { v1Server, v2Server } from './fixtures/app.js';
import { call, H, init, META26, modernHeaders, post, raw, rawSession, read, until, V25, V26 } from './helpers.js';

let front: McpHttp | undefined;
let at: Listening;
const aborts: AbortController[] = [];
const closers: Array<() => Promise<unknown>> = [];
async function start(o: Partial<McpHttpOptions> = {}) {
  front = createMcpHttp({ legacy: () => v1Server(), modern: () => v2Server(), ...o });
  at = await front.listen(0);
  return at;
}
afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort();
  for (const c of closers.splice(0)) await c().catch(() => {});
  await front?.close();
  front = undefined;
});

/** An AbortSignal aborted after the test at the latest. */
function signal(): AbortController {
  const a = new AbortController();
  aborts.push(a);
  return a;
}

const HOUR = 3_600_000;
/** A 2025-era call of `slow` on session `h`: resolves once its stream is open (the call runs on). */
const slow25 = (h: Record<string, string>, id: number, a = signal()) =>
  post(at.url, call(id, 'slow', { ms: HOUR }), h, a.signal);
/** The same on 2026-07-28, where the SDK answers only once the call ends: not awaited, it runs until aborted. */
const slow26 = (id: number, a = signal()): void => {
  post(at.url, call(id, 'slow', { ms: HOUR }, META26), modernHeaders('slow'), a.signal).catch(() => {});
};
const echo25 = (h: Record<string, string>, id: number) => post(at.url, call(id, 'echo', { text: 'hi' }), h);
const echo26 = (id: number) => post(at.url, call(id, 'echo', { text: 'hi' }, META26), modernHeaders('echo'));

const busyBody = (max: number) => ({
  jsonrpc: '2.0',
  id: null,
  error: {
    code: -32603,
    message: expect.stringContaining('Too many requests in flight'),
    data: {
      code: 'BUSY',
      reason: 'client-requests',
      limit: max,
      maxClientRequestsInFlight: max,
      retryAfterMs: 1_000,
      retryAfterSeconds: 1,
    },
  },
});

async function expectBusy(res: Response | Promise<Response>, max: number): Promise<void> {
  const r = await res;
  expect(r.status).toBe(429);
  expect(r.headers.get('retry-after')).toBe('1');
  expect(await r.json()).toEqual(busyBody(max));
}

async function expectServed(res: Response | Promise<Response>, id: number): Promise<void> {
  const r = await res;
  expect(r.status).toBe(200);
  const reading = read(r);
  expect((await reading.response(id)).result.content[0].text).toContain('echo hi');
}

describe('requests in flight per client (maxClientRequestsInFlight)', () => {
  it('a client at its bound gets 429 + JSON-RPC BUSY and Retry-After, its body unread; another address is served (both eras)', async () => {
    await start({ maxClientRequestsInFlight: 2 });
    const h = await rawSession(at.url);
    const running = signal();
    expect((await slow25(h, 1, running)).status).toBe(200); // a 2025-era call's stream, open
    slow26(2, running); // a 2026-07-28 call, running
    await until(() => front!.stats.requestsInFlight === 2, 10_000, 'two calls running');

    await expectBusy(echo25(h, 3), 2);
    await expectBusy(echo26(4), 2);
    await expectBusy(post(at.url, init(5)), 2); // a new session too
    await expectBusy(post(at.url, 'not even JSON', h), 2); // 429, not 400: the body was never parsed
    await expectBusy(fetch(at.url, { headers: { ...h, accept: 'text/event-stream' } }), 2); // a GET stream
    expect(front!.stats.refusedRequests).toBe(5);
    expect(front!.stats.refusedSessions).toBe(0);

    // Another address (another client key) is served meanwhile, on both eras.
    const other = await raw(at.url, {
      headers: { ...H, ...modernHeaders('who') },
      body: JSON.stringify(call(6, 'who', {}, META26)),
      localAddress: '127.0.0.2',
    });
    expect(other.status).toBe(200);
    expect(other.text).toContain('ip:127.0.0.2');
    const opened = await raw(at.url, { headers: H, body: JSON.stringify(init(7)), localAddress: '127.0.0.2' });
    expect(opened.status).toBe(200);

    // The calls end (the client hangs up): its slots come back, and it is served again.
    running.abort();
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots given back');
    await expectServed(echo25(h, 8), 8);
    await expectServed(echo26(9), 9);
  });

  it('counts per principal when authenticate names one: alice at her bound, bob from the same address is served', async () => {
    await start({
      maxClientRequestsInFlight: 1,
      authenticate: (req) => req.headers.get('authorization')?.replace(/^Bearer /, '') || undefined,
    });
    const alice = { authorization: 'Bearer alice' };
    const bob = { authorization: 'Bearer bob' };
    const a = signal();
    post(at.url, call(1, 'slow', { ms: HOUR }, META26), { ...modernHeaders('slow'), ...alice }, a.signal).catch(
      () => {},
    );
    await until(() => front!.stats.requestsInFlight === 1, 10_000, "alice's call running");
    await expectBusy(post(at.url, call(2, 'echo', { text: 'hi' }, META26), { ...modernHeaders('echo'), ...alice }), 1);
    await expectServed(post(at.url, call(3, 'echo', { text: 'hi' }, META26), { ...modernHeaders('echo'), ...bob }), 3);
    // Refused by authenticate: 401 before any slot is taken.
    expect((await echo26(4)).status).toBe(401);
    expect(front!.stats.refusedRequests).toBe(1);
  });

  it('slots come back after each response ends: answered, aborted by the client mid-call, ended by an error', async () => {
    let factoryFails = false;
    await start({
      maxClientRequestsInFlight: 1,
      maxBodyBytes: 10_000,
      modern: () => {
        if (factoryFails) throw new Error('no server for you');
        return v2Server();
      },
    });
    const h = await rawSession(at.url);
    // Answered, one after another, on both eras (each needs the one slot).
    for (let i = 0; i < 5; i++) {
      await expectServed(echo25(h, 10 + i), 10 + i);
      await expectServed(echo26(20 + i), 20 + i);
    }
    // Aborted by the client mid-call, on both eras.
    for (const begin of [(c: AbortController) => slow25(h, 30, c), (c: AbortController) => slow26(31, c)]) {
      const a = signal();
      await begin(a);
      await until(() => front!.stats.requestsInFlight === 1, 10_000, 'the call running');
      a.abort();
      await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slot back after the abort');
    }
    // Errors: not JSON (400), unknown session (404), too large (413), the server factory throws (500).
    expect((await post(at.url, '{', h)).status).toBe(400);
    expect((await echo25({ ...h, 'mcp-session-id': 'nope' }, 40)).status).toBe(404);
    expect((await post(at.url, call(41, 'echo', { text: 'x'.repeat(20_000) }), h)).status).toBe(413);
    factoryFails = true;
    expect((await echo26(42)).status).toBeGreaterThanOrEqual(500);
    factoryFails = false;
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slots back after the errors');
    expect(front!.stats.refusedRequests).toBe(0);
    await expectServed(echo26(44), 44);
  });

  it('standing streams hold no slot once open: the 2025-era GET stream, a 2026-07-28 subscriptions/listen', async () => {
    await start({ maxClientRequestsInFlight: 1 });
    const h = await rawSession(at.url);
    const get = await fetch(at.url, { headers: { ...h, accept: 'text/event-stream' }, signal: signal().signal });
    expect(get.status).toBe(200);
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'GET stream standing');
    await expectServed(echo25(h, 1), 1);
    const listen = await fetch(at.url, {
      method: 'POST',
      headers: { ...H, 'mcp-protocol-version': V26, 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'subscriptions/listen',
        params: { _meta: META26, notifications: { toolsListChanged: true } },
      }),
      signal: signal().signal,
    });
    expect(listen.status).toBe(200);
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'listen stream standing');
    await expectServed(echo26(3), 3);
    await expectServed(echo25(h, 4), 4);
    expect(front!.stats.refusedRequests).toBe(0);
  });

  it('front.fetch: a stream holds its slot until it is read to its end or cancelled', async () => {
    await start({ maxClientRequestsInFlight: 1 });
    const f = front!.fetch;
    const req = (body: unknown, headers: Record<string, string> = {}) =>
      f(new Request(at.url, { method: 'POST', headers: { ...H, ...headers }, body: JSON.stringify(body) }), {
        remoteAddress: '192.0.2.7',
      });
    const opened = await req(init(1));
    await opened.text();
    const h = { 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': V25 };
    expect((await req({ jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status).toBe(202);
    expect(front!.stats.requestsInFlight).toBe(0);
    const first = await req(call(2, 'slow', { ms: HOUR }), h); // a call's stream, open
    expect(first.status).toBe(200);
    expect(front!.stats.requestsInFlight).toBe(1);
    await expectBusy(req(call(3, 'echo', { text: 'hi' }), h), 1);
    await first.body!.cancel(); // the host cancels it (its client went away)
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slot back after cancel');
    const second = await req(call(4, 'slow', { ms: 10 }), h);
    expect(second.status).toBe(200);
    expect(front!.stats.requestsInFlight).toBe(1);
    expect(await second.text()).toContain('slept 10'); // read to its end
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'slot back after the end');
    await expectServed(req(call(5, 'echo', { text: 'hi' }), h), 5);
  });

  it('the default (32) leaves SDK clients making 20 parallel calls alone, and refuses the 33rd request in flight', async () => {
    await start();
    const v1 = new ClientV1({ name: 'v1', version: '0' });
    await v1.connect(new TransportV1(at.url));
    closers.push(() => v1.close());
    const v2 = new ClientV2({ name: 'v2', version: '0' }, {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    } as never);
    await v2.connect(new TransportV2(at.url));
    closers.push(() => v2.close());
    for (const client of [v1, v2] as Array<{ callTool: ClientV1['callTool'] }>) {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => client.callTool({ name: 'slow', arguments: { ms: 300 } })),
      );
      for (const r of results) expect((r.content as Array<{ text: string }>)[0]!.text).toBe('slept 300');
    }
    expect(front!.stats.refusedRequests).toBe(0);
    await v1.close();

    // 40 calls in flight at once from one address: 32 run, 8 are refused.
    await until(() => front!.stats.requestsInFlight === 0, 10_000, 'quiet');
    const h = await rawSession(at.url);
    const a = signal();
    const statuses = (await Promise.all(Array.from({ length: 40 }, (_, i) => slow25(h, 100 + i, a)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(32);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
  });

  it('Infinity turns the bound off; 0, negative and fractional bounds are refused', async () => {
    await start({ maxClientRequestsInFlight: Number.POSITIVE_INFINITY });
    const h = await rawSession(at.url);
    const a = signal();
    const statuses = (await Promise.all(Array.from({ length: 40 }, (_, i) => slow25(h, i, a)))).map((r) => r.status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(front!.stats.requestsInFlight).toBe(0); // nothing counted
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => createMcpHttp({ modern: () => v2Server(), maxClientRequestsInFlight: bad })).toThrow(
        /maxClientRequestsInFlight/,
      );
  });
});
