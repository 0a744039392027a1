// Issue 16, fault 4: the session ping over real Streamable HTTP (the kit's serveHttp, SDK 1.32.2
// transport), driven with raw fetch so that whether and when a standalone GET stream is open is ours.
import { tether } from '@mcp-tether/core';
import { serveHttp, type HttpHarness } from '@mcp-tether/testing';
import { McpServer as McpServerV2, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { heartbeat, type DeadSessionInfo } from '../src/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PROTOCOL = '2025-06-18';

let harness: HttpHarness | undefined;
const streams: AbortController[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.abort();
  await harness?.close();
  harness = undefined;
});

/** JSON-RPC messages in an SSE or JSON body. */
function messagesOf(text: string): any[] {
  if (text.trimStart().startsWith('{') || text.trimStart().startsWith('[')) return [JSON.parse(text)].flat();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)));
}

/** A raw 2025-era client: POSTs with the session header, an optional GET stream it opens when told. */
class RawSession {
  sessionId = '';
  readonly pings: any[] = [];
  /** `fetch`, or any `(url, init) => Response` such as a web-standard transport's `handleRequest`. */
  constructor(
    readonly url: URL,
    readonly fetch: (url: URL, init: RequestInit) => Promise<Response> = globalThis.fetch,
  ) {}
  headers(): Record<string, string> {
    const h: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL,
    };
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    return h;
  }
  async post(message: unknown): Promise<{ status: number; messages: any[] }> {
    const res = await this.fetch(this.url, { method: 'POST', headers: this.headers(), body: JSON.stringify(message) });
    const sid = res.headers.get('mcp-session-id');
    if (sid) this.sessionId = sid;
    const text = await res.text();
    return { status: res.status, messages: text ? messagesOf(text) : [] };
  }
  async initialize(): Promise<void> {
    const r = await this.post({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    expect(r.status).toBe(200);
    expect((await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  }
  /** Open the standalone GET SSE stream; every ping on it is answered by POST (unless `answer` is false). */
  async openGet(answer = true): Promise<AbortController> {
    const ac = new AbortController();
    streams.push(ac);
    const res = await this.fetch(this.url, {
      method: 'GET',
      headers: { ...this.headers(), accept: 'text/event-stream' },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          for (let i = buf.indexOf('\n\n'); i !== -1; i = buf.indexOf('\n\n')) {
            const event = buf.slice(0, i);
            buf = buf.slice(i + 2);
            for (const m of messagesOf(event)) {
              if (m.method !== 'ping') continue;
              this.pings.push(m);
              if (answer) void this.post({ jsonrpc: '2.0', id: m.id, result: {} }).catch(() => {});
            }
          }
        }
      } catch {
        /* aborted */
      }
    })();
    return ac;
  }
}

type Line = 'v1' | 'v2';
const makeServer =
  (line: Line, dead: DeadSessionInfo[], ping = { intervalMs: 40, timeoutMs: 60, maxFailures: 1 }) =>
  () => {
    const mcp =
      line === 'v2'
        ? (new McpServerV2({ name: 'p', version: '1' }) as unknown as McpServer)
        : new McpServer({ name: 'p', version: '1' });
    return tether(mcp, [heartbeat({ sessionPing: { ...ping, onDead: (i) => dead.push(i) } })]);
  };

describe.each(['v1', 'v2'] as const)('session ping over real Streamable HTTP, %s server (fault 4)', (line) => {
  it('a client that never opens the GET stream: no ping is sent, nothing counts as a failure, the session lives', async () => {
    const dead: DeadSessionInfo[] = [];
    harness = await serveHttp(makeServer(line, dead));
    const s = new RawSession(harness.url);
    await s.initialize();
    await sleep(600); // 15 ping turns; with maxFailures 1, the first undeliverable ping used to end the session
    expect(dead).toEqual([]);
    const r = await s.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(r.status).toBe(200); // was 404: the session had been closed
    expect(harness.sessions.size).toBe(1);
  });

  it('a GET opened a while after initialize: pings start on it and are answered; closing it stops them without a failure', async () => {
    const dead: DeadSessionInfo[] = [];
    // A generous ping timeout: on a loaded machine an answer can take longer than 60 ms, and with
    // maxFailures 1 that one late answer would end the session (what this test is not about).
    harness = await serveHttp(makeServer(line, dead, { intervalMs: 40, timeoutMs: 5_000, maxFailures: 1 }));
    const s = new RawSession(harness.url);
    await s.initialize();
    await sleep(200); // several ping turns before the stream exists
    const get = await s.openGet();
    const t0 = Date.now();
    while (s.pings.length < 3 && Date.now() - t0 < 15_000) await sleep(10);
    expect(s.pings.length).toBeGreaterThanOrEqual(3);
    expect(dead).toEqual([]);
    get.abort(); // the client drops its GET stream
    await sleep(400);
    expect(dead).toEqual([]);
    expect((await s.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' })).status).toBe(200);
  });

  it('a GET stream whose client stops answering: the session is still found dead (maxFailures in a row)', async () => {
    const dead: DeadSessionInfo[] = [];
    harness = await serveHttp(makeServer(line, dead, { intervalMs: 40, timeoutMs: 60, maxFailures: 2 }));
    const s = new RawSession(harness.url);
    await s.initialize();
    await s.openGet(false); // receives pings, never answers: a hung client
    const t0 = Date.now();
    while (dead.length === 0 && Date.now() - t0 < 5_000) await sleep(10);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ sessionId: s.sessionId, failures: 2 });
    while (harness.sessions.size !== 0 && Date.now() - t0 < 5_000) await sleep(10);
    expect((await s.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' })).status).toBe(404);
  });
});

// SDK 2.x's own transport (WebStandardStreamableHTTPServerTransport, Fetch Request → Response), driven
// without a socket: the same standalone-stream rules hold on the transport @mcp-tether/http builds on.
describe("session ping on SDK 2.x's own Streamable HTTP transport (fault 4)", () => {
  const open = async (dead: DeadSessionInfo[]) => {
    const server = makeServer('v2', dead)() as unknown as McpServerV2;
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
    await server.connect(transport);
    const s = new RawSession(new URL('http://127.0.0.1/mcp'), (url, init) =>
      transport.handleRequest(new Request(url, init)),
    );
    return { server, s };
  };

  it('no GET stream: no ping, no failure, the session lives; a GET opened later gets pings that are answered', async () => {
    const dead: DeadSessionInfo[] = [];
    const { server, s } = await open(dead);
    try {
      await s.initialize();
      await sleep(400);
      expect(dead).toEqual([]);
      expect((await s.post({ jsonrpc: '2.0', id: 'list', method: 'tools/list' })).status).toBe(200);
      const get = await s.openGet();
      const t0 = Date.now();
      while (s.pings.length < 3 && Date.now() - t0 < 15_000) await sleep(10);
      expect(s.pings.length).toBeGreaterThanOrEqual(3);
      get.abort();
      await sleep(300);
      expect(dead).toEqual([]);
    } finally {
      await server.close();
    }
  });
});
