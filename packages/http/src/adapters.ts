/** The two ways in: a Node `(req, res)` listener and a Fetch-style `(Request) => Response` handler. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type BodyRead, type BodyRefused, GONE, readNodeBody, readWebBody, tooLarge } from './body.js';
import type { Front, ModernExchange, Served, Session } from './front.js';
import { validHost, type Admitted, type Remote } from './guard.js';
import type { Release } from './inflight.js';
import { clientGone, errorResponse, type Id } from './jsonrpc.js';

const noop = () => {};

function notFound(): Response {
  return errorResponse(404, null, -32000, 'Not Found');
}

function isSse(response: Response): boolean {
  return !!response.body && (response.headers.get('content-type') ?? '').includes('text/event-stream');
}

function errorEvent(id: Id | null, error: Record<string, unknown>): string {
  return `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error })}\n\n`;
}

// ------------------------------------------------------------------ Node

/** Per socket: what to run when it closes, for the responses on it that are not over yet. */
const ON_SOCKET_CLOSE = Symbol('mcp-tether.http.onSocketClose');
type WatchedSocket = IncomingMessage['socket'] & { [ON_SOCKET_CLOSE]?: Set<() => void> };

/**
 * Run `fn` once when the response is over, whichever way: its `close` (after the last byte, a hang-up,
 * an error) or its socket's `close`. Node emits `close` only on the response a socket is writing: the
 * responses of requests pipelined behind it (HTTP/1.1) never get one when the client hangs up, and
 * without the socket's event their slots, aborts and counts would be held for good. One listener per
 * socket, a set entry per response.
 */
function whenGone(res: ServerResponse, fn: () => void): void {
  const socket = res.req.socket as WatchedSocket;
  let pending = socket[ON_SOCKET_CLOSE];
  if (!pending) {
    const set = new Set<() => void>();
    pending = socket[ON_SOCKET_CLOSE] = set;
    socket.once('close', () => {
      for (const f of set) f();
      set.clear();
    });
  }
  const set = pending;
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    set.delete(once);
    fn();
  };
  if (socket.destroyed) {
    queueMicrotask(once);
    return;
  }
  set.add(once);
  res.once('close', once);
}

/** Write a web `Response` (no streaming) to a Node response; `close`: the connection ends after it. */
async function writePlain(response: Response, res: ServerResponse, close = false): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  if (close) {
    res.setHeader('connection', 'close');
    res.shouldKeepAlive = false;
  }
  if (!response.body) {
    res.end();
    return;
  }
  const body = new Uint8Array(await response.arrayBuffer());
  res.end(body);
}

function bodyFromParser(parsed: unknown, max: number): string | 'too large' {
  const text =
    typeof parsed === 'string' ? parsed : Buffer.isBuffer(parsed) ? parsed.toString('utf8') : JSON.stringify(parsed);
  return Buffer.byteLength(text) > max ? 'too large' : text;
}

function nodeHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      /* a header value the Fetch API refuses: not ours to read */
    }
  }
  return headers;
}

/** The request's URL from its Host (a malformed Host, refused by the guard anyway, becomes `localhost`). */
function nodeUrl(host: string | null, path: string): string {
  if (host !== null && validHost(host)) {
    try {
      return new URL(path, `http://${host}`).href;
    } catch {
      /* a host the URL parser refuses */
    }
  }
  return new URL(path, 'http://localhost').href;
}

export function nodeHandler(front: Front): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handleNode(front, req, res).catch((err: unknown) => {
      front.report(err);
      if (!res.headersSent) void writePlain(errorResponse(500, null, -32603, 'Internal error'), res).catch(noop);
      else res.destroy();
    });
  };
}

/**
 * Answer without serving: the rest of the body is read and discarded first (within
 * `maxDiscardBytes` and `bodyTimeoutMs`), so that a client still sending reads the answer.
 */
async function refuseNode(front: Front, req: IncomingMessage, res: ServerResponse, answer: Response): Promise<void> {
  if (req.readableEnded) return writePlain(answer, res);
  const read = await readNodeBody(req, front.opts, front.bodies, undefined, answer);
  if (read === GONE) return;
  const { refused, close } = read as BodyRefused;
  return writePlain(refused, res, close);
}

async function handleNode(front: Front, req: IncomingMessage, res: ServerResponse): Promise<void> {
  front.responses++;
  // The request's slot (maxClientRequestsInFlight) goes back when the response ends, whichever way:
  // 'close' comes after the last byte, on a hang-up, and after an error.
  let ended = false;
  let releaseSlot: Release = noop;
  const abort = new AbortController();
  whenGone(res, () => {
    front.responses--;
    ended = true;
    releaseSlot();
    if (!res.writableFinished) abort.abort();
  });
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  if (pathname !== front.opts.path) return refuseNode(front, req, res, notFound());
  const headers = nodeHeaders(req);
  if (res.destroyed || req.socket.destroyed) abort.abort();
  const request = new Request(nodeUrl(headers.get('host'), url), {
    method: req.method ?? 'GET',
    headers,
    signal: abort.signal,
  });
  const remote: Remote = { address: req.socket.remoteAddress, connection: req.socket };
  // Host/Origin and authenticate before a byte of the body is read.
  const who = await front.admit(request, remote);
  if (who instanceof Response) return refuseNode(front, req, res, who);
  // Then the client's requests in flight, still before the body.
  const slot = front.takeSlot(who);
  if (slot instanceof Response) {
    // On its client's fair turn; a client that left meanwhile gets nothing.
    const turn = front.refusalTurn(who, abort.signal);
    if (turn !== true && !(await turn)) return;
    return refuseNode(front, req, res, slot);
  }
  if (ended) slot();
  else releaseSlot = slot;
  let body: string | undefined;
  let release = noop;
  if (req.method === 'POST') {
    // Behind a body parser (express.json()) the stream is already read: take what it parsed.
    const parsed = (req as { body?: unknown }).body;
    if (parsed !== undefined && req.readableEnded) {
      const text = bodyFromParser(parsed, front.opts.maxBodyBytes);
      if (text === 'too large') {
        front.stats.refusedBodies++;
        return writePlain(tooLarge(front.opts.maxBodyBytes), res);
      }
      body = text;
    } else {
      const read = await readNodeBody(req, front.opts, front.bodies, who.clientKey);
      if (read === GONE) return;
      if ('refused' in read) {
        front.stats.refusedBodies++;
        return writePlain(read.refused, res, read.close);
      }
      body = read.text;
      release = read.release;
    }
  }
  let served: Served;
  try {
    served = await front.serve(request, body, who);
  } finally {
    release();
  }
  if (served.standing) releaseSlot();
  await pipeNode(front, served, res);
}

/**
 * An SSE response counted open (`front.streamOpened`) until `finish()`, idempotent: then counted
 * closed, its exchange ended and `onFinish` called.
 */
function openStream(front: Front, served: Served, onFinish = noop): { readonly closed: boolean; finish(): void } {
  front.streamOpened(served);
  const stream = {
    closed: false,
    finish() {
      if (stream.closed) return;
      stream.closed = true;
      front.streamClosed(served);
      if (served.exchange) front.endExchange(served.exchange);
      onFinish();
    },
  };
  return stream;
}

async function pipeNode(front: Front, served: Served, res: ServerResponse): Promise<void> {
  const { response, session, exchange } = served;
  if (!isSse(response)) {
    if (exchange) front.endExchange(exchange);
    if (res.destroyed) {
      await response.body?.cancel().catch(noop);
      return;
    }
    // A 2025-era response that is not a stream (202, an error) also counts as activity.
    if (session) session.lastActive = Date.now();
    return writePlain(response, res);
  }
  const reader = response.body!.getReader();
  const { finish } = openStream(front, served);
  if (res.destroyed) {
    // The client left while the handler ran: nobody to answer.
    finish();
    await reader.cancel().catch(noop);
    return;
  }
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  res.flushHeaders();
  return pacedNode(front, session ? () => session.flush() : () => front.flushModern(), reader, res, finish, exchange);
}

/**
 * Pump an SSE stream to the client, reading from the SDK only while the client takes what was
 * written (Node's buffer under `maxStreamBufferBytes`): what the client does not read waits in the
 * SDK's stream, where the front's shapers bound it (see `SessionStreams.instrument`). Each chunk the SDK
 * enqueues is one whole event, so events the front writes itself go between chunks.
 */
async function pacedNode(
  front: Front,
  flush: () => void,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  res: ServerResponse,
  finish: () => void,
  exchange: ModernExchange | undefined,
): Promise<void> {
  const max = front.opts.maxStreamBufferBytes;
  let gone = false;
  let failed = false;
  let wake: (() => void) | undefined;
  whenGone(res, () => {
    gone = true;
    reader.cancel().catch(noop);
    wake?.();
    finish();
  });
  res.on('drain', () => wake?.());
  if (exchange) {
    exchange.onFail = (error) => {
      if (gone || failed) return;
      failed = true;
      reader.cancel().catch(noop);
      for (const id of exchange.ids) res.write(errorEvent(id, error));
      res.end();
      wake?.();
    };
    if (exchange.failure) exchange.onFail(exchange.failure);
  }
  try {
    for (;;) {
      while (!gone && !failed && res.writableLength >= max) await new Promise<void>((r) => (wake = r));
      if (gone || failed) return;
      const { done, value } = await reader.read();
      if (done || gone || failed) break;
      res.write(value);
      flush();
    }
  } catch {
    /* cancelled */
  }
  if (!gone && !failed && !res.writableEnded) res.end();
}

// ------------------------------------------------------------------ Fetch

/** What a Fetch host may pass beside the request: `{ remoteAddress }` (or Deno's `{ remoteAddr: { hostname } }`). */
export interface FetchInfo {
  readonly remoteAddress?: string;
  readonly remoteAddr?: { readonly hostname?: string };
}

function remoteOf(info: unknown): Remote {
  const i = (typeof info === 'object' && info !== null ? info : {}) as FetchInfo;
  const address =
    typeof i.remoteAddress === 'string'
      ? i.remoteAddress
      : typeof i.remoteAddr?.hostname === 'string'
        ? i.remoteAddr.hostname
        : undefined;
  return { address, connection: undefined };
}

export function fetchHandler(front: Front): (request: Request, info?: FetchInfo) => Promise<Response> {
  return async (request, info) => {
    try {
      const url = new URL(request.url);
      if (url.pathname !== front.opts.path) return await refuseWeb(front, request, notFound());
      const inner = new Request(request.url, {
        method: request.method,
        headers: request.headers,
        signal: request.signal,
      });
      // Host/Origin and authenticate before a byte of the body is read.
      const who: Admitted | Response = await front.admit(inner, remoteOf(info));
      if (who instanceof Response) return await refuseWeb(front, request, who);
      // Then the client's requests in flight, still before the body.
      const slot = front.takeSlot(who);
      if (slot instanceof Response) {
        // On its client's fair turn; a client that left meanwhile gets nothing (nobody reads it).
        const turn = front.refusalTurn(who, request.signal);
        if (turn !== true && !(await turn)) return clientGone();
        return await refuseWeb(front, request, slot);
      }
      // Given back when the response is complete: at once for a plain one, when the stream ends
      // (read to its end, cancelled, failed) for SSE; and in any case when the client goes away.
      request.signal.addEventListener('abort', slot, { once: true });
      let streaming = false;
      try {
        let body: string | undefined;
        let release = noop;
        if (request.method === 'POST') {
          const read = await readWebBody(request, front.opts, front.bodies, who.clientKey);
          if (read === GONE) return errorResponse(400, null, -32000, 'Bad Request: the request body could not be read');
          if ('refused' in read) {
            front.stats.refusedBodies++;
            return read.refused;
          }
          body = (read as BodyRead).text;
          release = (read as BodyRead).release;
        }
        let served: Served;
        try {
          served = await front.serve(inner, body, who);
        } finally {
          release();
        }
        const response = shapeWeb(front, served, served.standing ? noop : slot);
        streaming = !served.standing && isSse(served.response);
        return response;
      } finally {
        if (!streaming) slot();
      }
    } catch (err) {
      front.report(err);
      return errorResponse(500, null, -32603, 'Internal error');
    }
  };
}

/** Answer without serving, after reading and discarding the body within the bounds (as {@link refuseNode}). */
async function refuseWeb(front: Front, request: Request, answer: Response): Promise<Response> {
  if (!request.body || request.bodyUsed) return answer;
  const read = await readWebBody(request, front.opts, front.bodies, undefined, answer);
  return read === GONE ? answer : (read as BodyRefused).refused;
}

function shapeWeb(front: Front, served: Served, onFinish: Release): Response {
  const { response, session, exchange } = served;
  if (!isSse(response)) {
    if (exchange) front.endExchange(exchange);
    if (session) session.lastActive = Date.now();
    return response;
  }
  const reader = response.body!.getReader();
  const max = front.opts.maxStreamBufferBytes;
  const flush = session ? () => session.flush() : () => front.flushModern();
  // Paced by the consumer: the SDK's stream is read only when the host pulls.
  const stream = openStream(front, served, onFinish);
  const finish = stream.finish;
  const encoder = new TextEncoder();
  const paced = new ReadableStream<Uint8Array>(
    {
      start(c) {
        if (!exchange) return;
        exchange.onFail = (error) => {
          if (stream.closed) return;
          reader.cancel().catch(noop);
          for (const id of exchange.ids) c.enqueue(encoder.encode(errorEvent(id, error)));
          finish();
          c.close();
        };
        if (exchange.failure) exchange.onFail(exchange.failure);
      },
      async pull(c) {
        try {
          const { done, value } = await reader.read();
          if (stream.closed) return;
          if (done) {
            finish();
            c.close();
            return;
          }
          c.enqueue(value);
          flush();
        } catch {
          if (stream.closed) return;
          finish();
          c.close();
        }
      },
      cancel() {
        finish();
        return reader.cancel().catch(noop);
      },
    },
    { highWaterMark: max, size: (chunk) => chunk.byteLength },
  );
  return new Response(paced, { status: response.status, headers: response.headers });
}

export type { ModernExchange, Session };
