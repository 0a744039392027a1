/** The two ways in: a Node `(req, res)` listener and a Fetch-style `(Request) => Response` handler. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Front, ModernExchange, Served, Session } from './front.js';
import { errorResponse, type Id } from './jsonrpc.js';

const noop = () => {};

function tooLarge(max: number): Response {
  return errorResponse(
    413,
    null,
    -32600,
    `Payload Too Large: the request body exceeds ${max} bytes`,
    { maxBodyBytes: max },
    { connection: 'close' },
  );
}

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

/** Write a web `Response` (no streaming) to a Node response. */
async function writePlain(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  if (!response.body) {
    res.end();
    return;
  }
  const body = new Uint8Array(await response.arrayBuffer());
  res.end(body);
}

async function readNodeBody(req: IncomingMessage, max: number): Promise<string | 'too large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return 'too large';
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > max) {
        over = true;
        chunks.length = 0;
        resolve('too large');
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
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

export function nodeHandler(front: Front): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handleNode(front, req, res).catch((err: unknown) => {
      front.report(err);
      if (!res.headersSent) void writePlain(errorResponse(500, null, -32603, 'Internal error'), res).catch(noop);
      else res.destroy();
    });
  };
}

async function handleNode(front: Front, req: IncomingMessage, res: ServerResponse): Promise<void> {
  front.responses++;
  res.once('close', () => front.responses--);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  if (pathname !== front.opts.path) {
    req.resume();
    return writePlain(notFound(), res);
  }
  const headers = nodeHeaders(req);
  const refused = front.checkHostAndOrigin(headers);
  if (refused) {
    req.resume();
    return writePlain(refused, res);
  }
  let body: string | undefined;
  if (req.method === 'POST') {
    // Behind a body parser (express.json()) the stream is already read: take what it parsed.
    const parsed = (req as { body?: unknown }).body;
    const read =
      parsed !== undefined && req.readableEnded
        ? bodyFromParser(parsed, front.opts.maxBodyBytes)
        : await readNodeBody(req, front.opts.maxBodyBytes);
    if (read === 'too large') {
      req.resume();
      res.shouldKeepAlive = false;
      return writePlain(tooLarge(front.opts.maxBodyBytes), res);
    }
    body = read;
  }
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
  };
  res.once('close', onClose);
  if (res.destroyed || req.socket.destroyed) abort.abort();
  const host = headers.get('host') ?? 'localhost';
  const request = new Request(`http://${/^[\w.\-:[\]]+$/.test(host) ? host : 'localhost'}${url}`, {
    method: req.method ?? 'GET',
    headers,
    signal: abort.signal,
  });
  const served = await front.serve(request, body);
  await pipeNode(front, served, res);
}

/** An SSE response counted open (`front.streamOpened`) until `finish()`, idempotent: then counted closed and its exchange ended. */
function openStream(front: Front, { session, exchange }: Served): { readonly closed: boolean; finish(): void } {
  front.streamOpened(session);
  const stream = {
    closed: false,
    finish() {
      if (stream.closed) return;
      stream.closed = true;
      front.streamClosed(session);
      if (exchange) front.endExchange(exchange);
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
  res.once('close', () => {
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

async function readWebBody(request: Request, max: number): Promise<string | 'too large'> {
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) return 'too large';
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(noop);
      return 'too large';
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function fetchHandler(front: Front): (request: Request) => Promise<Response> {
  return async (request) => {
    try {
      const url = new URL(request.url);
      if (url.pathname !== front.opts.path) return notFound();
      const refused = front.checkHostAndOrigin(request.headers, url.host);
      if (refused) return refused;
      let body: string | undefined;
      if (request.method === 'POST') {
        const read = await readWebBody(request, front.opts.maxBodyBytes);
        if (read === 'too large') return tooLarge(front.opts.maxBodyBytes);
        body = read;
      }
      const served = await front.serve(
        new Request(request.url, { method: request.method, headers: request.headers, signal: request.signal }),
        body,
      );
      return shapeWeb(front, served);
    } catch (err) {
      front.report(err);
      return errorResponse(500, null, -32603, 'Internal error');
    }
  };
}

function shapeWeb(front: Front, served: Served): Response {
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
  const stream = openStream(front, served);
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
