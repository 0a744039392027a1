/**
 * Streamable HTTP serving: stateful sessions (one McpServer per session), resumability (event
 * store + `retry`), DNS-rebinding protection (Host and Origin), 404 for unknown sessions, DELETE
 * ends a session, GET opens the standalone stream.
 *
 * Two eras on one endpoint: a POST the SDK v2 classifies as 2026-07-28 (`isLegacyRequest` is false:
 * the `_meta` envelope claim `io.modelcontextprotocol/protocolVersion`, a modern
 * `MCP-Protocol-Version` header, `server/discover`) goes to a v2 `createMcpHandler(factory)`
 * (stateless, a fresh server per request); everything else to the v1 stateful sessions.
 */
import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createMcpHandler, isLegacyRequest, type McpHttpHandler, type McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { NextFunction, Request, Response } from 'express';
import { MemoryEventStore } from './eventStore.js';

/** Hostnames a loopback server accepts in `Host` and `Origin` (same list as the SDK's `localhostHostValidation`). */
export const LOOPBACK_HOSTNAMES = ['localhost', '127.0.0.1', '[::1]'];

/** Options of {@link startHttp}. */
export interface HttpOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Loopback address to bind. Default `127.0.0.1`. */
  host?: '127.0.0.1' | 'localhost' | '::1';
  /** Endpoint path. Default `/mcp`. */
  path?: string;
  /** A fresh server per session (2025-era traffic, SDK v1). */
  createServer: () => McpServer;
  /**
   * A fresh SDK v2 server per 2026-07-28 request (the `createMcpHandler` factory). Without it, the
   * endpoint serves the 2025 era only (2026-07-28 requests get the v1 transport's 400).
   */
  createModernServer?: () => McpServerV2;
  /** SSE `retry:` sent to clients in the priming event, in ms. Default 1000. */
  retryIntervalMs?: number;
  /** SSE keep-alive comment interval, in ms (SDK default 15000). */
  keepAliveMs?: number;
  /** Events kept per session for resumption. Default 5000. */
  maxEventsPerSession?: number;
  /** Diagnostics (session opened/closed). Default: nothing. */
  log?: (line: string) => void;
}

/** A live session. */
export interface HttpSession {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpServer;
}

/** A running HTTP server. */
export interface RunningHttp {
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: URL;
  readonly port: number;
  readonly sessions: ReadonlyMap<string, HttpSession>;
  /**
   * 2026-07-28: tell the `subscriptions/listen` streams whose `resourceSubscriptions` name `uri`
   * that it changed (`notifications/resources/updated`, through `createMcpHandler`'s notifier).
   * Nothing happens without `createModernServer` (2025-era sessions subscribe with `resources/subscribe`).
   */
  notifyResourceUpdated(uri: string): void;
  /** Close every session, then the listener. */
  close(): Promise<void>;
}

const rpcError = (res: Response, status: number, code: number, message: string) => {
  if (res.headersSent) return;
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
};

/** Reject a browser `Origin` that is not a loopback origin (spec: servers MUST validate Origin). */
function originValidation(allowed: readonly string[]) {
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    let hostname: string | undefined;
    try {
      hostname = new URL(origin).hostname;
    } catch {
      hostname = undefined;
    }
    if (hostname === undefined || !allowed.includes(hostname)) return rpcError(res, 403, -32000, `Invalid Origin: ${origin}`);
    next();
  };
}

/** The Node request as a web `Request` (its JSON body re-serialized from what express.json() parsed). */
function toWebRequest(req: Request, signal: AbortSignal): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  headers.delete('content-length');
  const url = new URL(req.originalUrl, `http://${req.headers.host ?? '127.0.0.1'}`);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.body !== undefined;
  return new globalThis.Request(url, { method: req.method, headers, signal, ...(hasBody && { body: JSON.stringify(req.body) }) });
}

/**
 * Abort `abort` as soon as the client's connection closes before `res` finished: from the moment
 * this is called (before the 2026-07-28 handler even runs) until the last byte of the response. On
 * 2026-07-28 that is the cancellation of the call (spec: closing the request's response stream is
 * the cancel; core reports it as `Disconnected`). Returns a function that stops watching.
 */
function abortOnDisconnect(res: Response, abort: AbortController): () => void {
  const onClose = () => {
    if (!res.writableFinished) abort.abort();
  };
  // The socket may already be gone (closed while express.json() read the body): no 'close' will come.
  if (res.destroyed || res.socket === null || res.socket.destroyed) {
    onClose();
    return () => {};
  }
  res.once('close', onClose);
  return () => res.off('close', onClose);
}

/**
 * Write a web `Response` to the Node response, streaming its body (SSE) as it comes. A client that
 * closes the connection cancels the body (the abort itself is {@link abortOnDisconnect}'s job).
 */
async function sendWebResponse(response: globalThis.Response, res: Response): Promise<void> {
  if (res.destroyed) {
    // The client left while the handler ran: nobody to answer (the call was aborted).
    await response.body?.cancel().catch(() => {});
    return;
  }
  res.status(response.status);
  response.headers.forEach((value, name) => res.setHeader(name, value));
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.once('close', () => {
    if (!res.writableFinished) reader.cancel().catch(() => {});
  });
  res.flushHeaders();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    /* the client went away, or the stream was cancelled */
  }
  res.end();
}

/** Serve `createServer()` sessions over Streamable HTTP on a loopback address. */
export async function startHttp(options: HttpOptions): Promise<RunningHttp> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const log = options.log ?? (() => {});
  const sessions = new Map<string, HttpSession>();

  // The SDK's app: Host header validation for loopback hosts (403 otherwise), then express.json().
  const app = createMcpExpressApp({ host });
  app.use(originValidation(LOOPBACK_HOSTNAMES));

  // 2026-07-28: the SDK v2 per-request handler, modern-only (2025-era traffic stays on the sessions below).
  const createModernServer = options.createModernServer;
  const modern: McpHttpHandler | undefined = createModernServer
    ? createMcpHandler(() => createModernServer(), { legacy: 'reject', onerror: (err) => log(`2026-07-28: ${err.message}`) })
    : undefined;

  const lookup = (req: Request, res: Response): HttpSession | undefined => {
    const sid = req.header('mcp-session-id');
    if (!sid) {
      rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const session = sessions.get(sid);
    if (!session) rpcError(res, 404, -32001, 'Session not found');
    return session;
  };

  app.post(path, async (req: Request, res: Response) => {
    if (modern) {
      const abort = new AbortController();
      // Watch the connection first: a client leaving before the response starts (the handler still
      // running, nothing written yet) must cancel the call as surely as one leaving mid-stream.
      const unwatch = abortOnDisconnect(res, abort);
      const request = toWebRequest(req, abort.signal);
      // The SDK's own classification (the same code createMcpHandler runs), from the parsed body.
      if (!(await isLegacyRequest(request, req.body))) {
        const response = await modern.fetch(request, req.body === undefined ? {} : { parsedBody: req.body });
        await sendWebResponse(response, res);
        return;
      }
      // 2025 era: a dropped POST is not a cancel there (spec 2025-11-25, transports; the event
      // store lets the client resume). Only the session's end aborts its calls.
      unwatch();
    }
    if (req.header('mcp-session-id') !== undefined) {
      const session = lookup(req, res);
      if (session) await session.transport.handleRequest(req, res, req.body);
      return;
    }
    if (!isInitializeRequest(req.body)) {
      return rpcError(res, 400, -32000, 'Bad Request: no session id, and not an initialize request');
    }
    const server = options.createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(options.maxEventsPerSession),
      retryInterval: options.retryIntervalMs ?? 1_000,
      ...(options.keepAliveMs !== undefined && { keepAliveMs: options.keepAliveMs }),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
        log(`session ${id} opened`);
      },
      onsessionclosed: (id) => {
        log(`session ${id} ended by the client (DELETE)`);
      },
    });
    // Runs before the server's own close handling (Protocol.connect chains it).
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id && sessions.get(id)?.transport === transport) {
        sessions.delete(id);
        log(`session ${id} closed`);
      }
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });

  const byMethod = async (req: Request, res: Response) => {
    const session = lookup(req, res);
    if (session) await session.transport.handleRequest(req, res);
  };
  app.get(path, byMethod);
  app.delete(path, byMethod);
  app.all(path, (_req: Request, res: Response) => {
    res.setHeader('Allow', 'GET, POST, DELETE');
    rpcError(res, 405, -32000, 'Method not allowed');
  });

  // Errors: bad JSON bodies get a JSON-RPC parse error; anything else a 500, never a crash.
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const e = err as { type?: string; status?: number; message?: string };
    if (e?.type === 'entity.parse.failed') return rpcError(res, 400, -32700, 'Parse error');
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return rpcError(res, e.status, -32000, e.message ?? 'Bad Request');
    log(`internal error: ${e?.message ?? String(err)}`);
    rpcError(res, 500, -32603, 'Internal error');
  });

  const listener: HttpServer = await new Promise((resolve, reject) => {
    const s = app.listen(options.port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
    s.once('error', reject);
  });
  const { port } = listener.address() as AddressInfo;
  const urlHost = host === '::1' ? '[::1]' : host;

  return {
    url: new URL(`http://${urlHost}:${port}${path}`),
    port,
    sessions,
    notifyResourceUpdated: (uri) => modern?.notify.resourceUpdated(uri),
    close: async () => {
      for (const { transport, server } of [...sessions.values()]) {
        await transport.close().catch(() => {});
        await server.close().catch(() => {});
      }
      sessions.clear();
      await modern?.close().catch(() => {});
      listener.closeAllConnections();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
