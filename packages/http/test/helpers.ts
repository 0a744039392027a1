/** Raw HTTP helpers for wire tests (fetch, no SDK client in between). */
import {
  createServer,
  type IncomingMessage,
  request as httpRequest,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';

export const H = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
export const V25 = '2025-11-25';
export const V26 = '2026-07-28';
export const META26 = {
  'io.modelcontextprotocol/protocolVersion': V26,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
};

export const init = (id: number | string = 1, capabilities: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: V25, capabilities, clientInfo: { name: 'raw', version: '0' } },
});

export const post = (url: URL, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { ...H, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(signal && { signal }),
  });

/** Open a 2025-era session with raw requests; returns the headers to use with it. */
export async function rawSession(
  url: URL,
  capabilities: Record<string, unknown> = {},
): Promise<Record<string, string>> {
  const r = await post(url, init(1, capabilities));
  expect(r.status).toBe(200);
  await r.text();
  const h = { 'mcp-session-id': r.headers.get('mcp-session-id')!, 'mcp-protocol-version': V25 };
  const n = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  expect(n.status).toBe(202);
  return h;
}

export const call = (
  id: string | number,
  name: string,
  args: Record<string, unknown> = {},
  meta?: Record<string, unknown>,
) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta && { _meta: meta }) },
});

/** Headers of a 2026-07-28 tools/call. */
export const modernHeaders = (name: string) => ({
  'mcp-protocol-version': V26,
  'mcp-method': 'tools/call',
  'mcp-name': name,
});

/** An SSE (or JSON) response read as it comes: every JSON-RPC message, raw bytes count, and when it ended. */
export interface Reading {
  messages: Array<Record<string, any>>;
  /** Every raw chunk's text, in order. */
  raw: string[];
  ended: boolean;
  done: Promise<void>;
  /** The first message with this id that is a response. */
  response(id: string | number, timeoutMs?: number): Promise<Record<string, any>>;
}

export function read(res: Response): Reading {
  const r: Reading = {
    messages: [],
    raw: [],
    ended: false,
    done: Promise.resolve(),
    response: async (id, timeoutMs = 10_000) => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const m = r.messages.find((x) => x.id === id && x.method === undefined);
        if (m) return m;
        if (r.ended || Date.now() > end) throw new Error(`no response for ${String(id)} (ended=${r.ended})`);
        await new Promise((z) => setTimeout(z, 10));
      }
    },
  };
  const json = (res.headers.get('content-type') ?? '').includes('application/json');
  r.done = (async () => {
    if (!res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        r.raw.push(value);
        buf += value;
        if (json) continue;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trim())
            .join('\n');
          if (data) r.messages.push(JSON.parse(data));
        }
      }
      if (json && buf) r.messages.push(JSON.parse(buf));
    } catch {
      /* aborted */
    } finally {
      r.ended = true;
    }
  })();
  return r;
}

/** Wait for `check()` (polled every 10 ms) up to `ms` of real time (`performance.now`: a test may fake `Date`). */
export async function until(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A raw HTTP request with full control of the headers and the local address. */
export function raw(
  url: URL,
  o: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string },
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: o.method ?? 'POST', headers: o.headers, ...(o.localAddress && { localAddress: o.localAddress }) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

/**
 * POSTs held back until a round of them arrived, then handed over in one go, in arrival order — as
 * one poll phase of the event loop does when several sockets are ready at once. The fair-turns
 * tests prove order this way, never by time.
 */
export class HeldRounds {
  /** The POSTs of the round being held, in arrival order. */
  readonly held: Array<[IncomingMessage, ServerResponse]> = [];
  #holdFor = 0;

  /** Hold the next `n` POSTs, then hand them all over within one callback. */
  hold(n: number): void {
    this.#holdFor = n;
  }

  /** A server listener passing every request to `handle`, a held round's POSTs together. */
  listener(handle: (req: IncomingMessage, res: ServerResponse) => void) {
    return (req: IncomingMessage, res: ServerResponse): void => {
      if (this.#holdFor === 0 || req.method !== 'POST') {
        handle(req, res);
        return;
      }
      this.held.push([req, res]);
      if (this.held.length < this.#holdFor) return;
      this.#holdFor = 0;
      for (const [q, s] of this.held.splice(0)) handle(q, s); // one turn: all of them read in this callback
    };
  }

  /** Hold nothing more and forget the held round. */
  reset(): void {
    this.#holdFor = 0;
    this.held.splice(0);
  }
}

/** A plain Node server on a free loopback port with `listener`; its `/mcp` URL. */
export async function serveLoopback(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: URL }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`) };
}

/** Close `server` (if any) and every connection it still holds. */
export async function closeServer(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}
