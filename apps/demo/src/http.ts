/**
 * The demo's Streamable HTTP front: `@mcp-tether/http` with the demo's two factories. 2025-era
 * sessions get an SDK v1 server each; 2026-07-28 requests an SDK v2 server each, on the same
 * endpoint. Everything else (DNS-rebinding checks, limits, idle expiry, resumability, bounded
 * streams, graceful shutdown) is the package's.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { createMcpHttp, type EventStore, type McpHttp, type SessionInfo, type ShutdownResult } from '@mcp-tether/http';

export { LOOPBACK_HOSTNAMES } from '@mcp-tether/http';

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
  /** A fresh SDK v2 server per 2026-07-28 request. Without it, the endpoint serves the 2025 era only. */
  createModernServer?: () => McpServerV2;
  /** SSE `retry:` sent to clients in the priming event, in ms. Default 1000. */
  retryIntervalMs?: number;
  /** SSE keep-alive comment interval, in ms (SDK default 15000). */
  keepAliveMs?: number;
  /** A session with no request and no open stream for this long is closed, in ms. Default 300 000. */
  sessionIdleMs?: number;
  /** Diagnostics (session opened/closed). Default: nothing. */
  log?: (line: string) => void;
  /** Resumability store, one per session (`--redis`: a `RedisEventStore` scope). Default: the front's `MemoryEventStore`. */
  eventStore?: (info: { readonly sessionId: string }) => EventStore;
}

/** A running HTTP server. */
export interface RunningHttp {
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: URL;
  readonly port: number;
  /** Live 2025-era sessions by id (a snapshot). */
  readonly sessions: ReadonlyMap<string, SessionInfo>;
  /** The front itself. */
  readonly front: McpHttp;
  /** Graceful: refuse new work (503 SHUTTING_DOWN), let running calls finish for `graceMs`, then stop them and close. */
  shutdown(graceMs?: number): Promise<ShutdownResult>;
  /** Close every session, then the listener. */
  close(): Promise<void>;
}

/** Serve the demo over Streamable HTTP on a loopback address. */
export async function startHttp(options: HttpOptions): Promise<RunningHttp> {
  const host = options.host ?? '127.0.0.1';
  const createModernServer = options.createModernServer;
  const front = createMcpHttp({
    legacy: () => options.createServer(),
    ...(createModernServer && { modern: () => createModernServer() }),
    ...(options.path !== undefined && { path: options.path }),
    retryIntervalMs: options.retryIntervalMs ?? 1_000,
    // Loopback only: every client has the same address, so a per-address session cap would make the
    // conformance suite and the Inspector (one session per run, no DELETE) one client.
    maxSessionsPerClient: 1_000,
    // For the same reason, requests in flight are not bounded per client (the replicas test runs ~67
    // increments at once on each replica, all from 127.0.0.1).
    maxClientRequestsInFlight: Number.POSITIVE_INFINITY,
    ...(options.keepAliveMs !== undefined && { keepAliveMs: options.keepAliveMs }),
    ...(options.sessionIdleMs !== undefined && { sessionIdleMs: options.sessionIdleMs }),
    ...(options.eventStore && { eventStore: options.eventStore }),
    ...(options.log && { log: options.log, onError: (e: Error) => options.log!(`error: ${e.message}`) }),
  });
  const { url, port } = await front.listen(options.port, host === 'localhost' ? '127.0.0.1' : host);
  const shown = host === 'localhost' ? new URL(url.href.replace('127.0.0.1', 'localhost')) : url;
  return {
    url: shown,
    port,
    get sessions() {
      return new Map(front.sessions().map((s) => [s.id, s]));
    },
    front,
    shutdown: (graceMs) => front.shutdown(graceMs),
    close: () => front.close(),
  };
}
