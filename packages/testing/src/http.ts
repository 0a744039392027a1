/** A real Streamable HTTP server on 127.0.0.1 for tests, built on the SDK's own transport and node:http. */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions {
  /** Stateful sessions (`Mcp-Session-Id`, one server per session) or stateless (one server per request). Default true. */
  stateful?: boolean;
  /** SDK `enableJsonResponse` (no SSE: progress and logs cannot be delivered). */
  enableJsonResponse?: boolean;
  /** SDK `keepAliveMs` for SSE comment frames. */
  keepAliveMs?: number;
  /** Event store for resumability (stateful only). */
  eventStore?: () => EventStore;
  /** Path of the endpoint. Default `/mcp`. */
  path?: string;
}

/** A running HTTP harness. */
export interface HttpHarness {
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: URL;
  /** Live sessions (stateful mode): session id → transport. */
  readonly sessions: Map<string, StreamableHTTPServerTransport>;
  close(): Promise<void>;
}

type Connectable = { connect(t: Transport): Promise<void>; close(): Promise<void> };

/**
 * Serve `factory()` servers over Streamable HTTP on 127.0.0.1 (random free port).
 * Stateful: a new server per session, kept until the session closes. Stateless: a new server and
 * transport per request, closed when the response ends (as the SDK documents).
 */
export async function serveHttp(
  factory: () => Connectable | Promise<Connectable>,
  options: ServeHttpOptions = {},
): Promise<HttpHarness> {
  const h: Harness = {
    factory,
    options,
    path: options.path ?? '/mcp',
    sessions: new Map(),
    servers: new Set(),
  };
  const stateful = options.stateful ?? true;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== h.path) return fail(res, 404, 'Not found');
    const body = req.method === 'POST' ? await readBody(req).catch(() => undefined) : undefined;
    return stateful ? serveSessions(h, req, res, body) : serveStateless(h, req, res, body);
  };
  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err) => fail(res, 500, String(err)));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}${h.path}`),
    sessions: h.sessions,
    close: async () => {
      for (const s of [...h.servers]) await s.close().catch(() => {});
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** What the requests of one harness share. */
interface Harness {
  readonly factory: () => Connectable | Promise<Connectable>;
  readonly options: ServeHttpOptions;
  readonly path: string;
  /** Live sessions (stateful): session id → transport. */
  readonly sessions: Map<string, StreamableHTTPServerTransport>;
  /** Servers not closed yet (closed by `close()`). */
  readonly servers: Set<Connectable>;
}

/** The request's JSON body (`undefined` when empty). */
function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text) return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', reject);
  });
}

/** A JSON-RPC error answer with `id: null` (nothing once the headers went out). */
function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return;
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/** Stateless: a new server and transport for this POST, closed when its response ends. */
async function serveStateless(h: Harness, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  if (req.method !== 'POST') return fail(res, 405, 'Method not allowed');
  const server = await h.factory();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: h.options.enableJsonResponse ?? false,
    ...(h.options.keepAliveMs !== undefined && { keepAliveMs: h.options.keepAliveMs }),
  });
  h.servers.add(server);
  res.on('close', () => {
    void transport.close();
    void server.close();
    h.servers.delete(server);
  });
  await server.connect(transport);
  return transport.handleRequest(req, res, body);
}

/** Stateful: a request of a live session goes to its transport; an `initialize` without one opens a session. */
async function serveSessions(h: Harness, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const sid = req.headers['mcp-session-id'];
  const sessionId = Array.isArray(sid) ? sid[0] : sid;
  if (sessionId) {
    const transport = h.sessions.get(sessionId);
    if (!transport) return fail(res, 404, 'Session not found');
    return transport.handleRequest(req, res, body);
  }
  const isInit = (Array.isArray(body) ? body : [body]).some(
    (m) => m && (m as { method?: string }).method === 'initialize',
  );
  if (req.method !== 'POST' || !isInit) return fail(res, 400, 'Bad Request: no session id');
  const server = await h.factory();
  h.servers.add(server);
  const { options, sessions } = h;
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse: options.enableJsonResponse ?? false,
    ...(options.keepAliveMs !== undefined && { keepAliveMs: options.keepAliveMs }),
    ...(options.eventStore && { eventStore: options.eventStore() }),
    onsessioninitialized: (id) => {
      sessions.set(id, transport);
    },
    onsessionclosed: (id) => {
      sessions.delete(id);
    },
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
    h.servers.delete(server);
  };
  await server.connect(transport);
  return transport.handleRequest(req, res, body);
}
