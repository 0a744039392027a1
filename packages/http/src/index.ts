/**
 * @mcp-tether/http — the Streamable HTTP front for MCP servers: 2025-era sessions (SDK 1.x or 2.x
 * server per session) and stateless 2026-07-28 requests (SDK 2.x) on one endpoint, with idle
 * expiry, a session cap, DNS-rebinding checks, body limits, bounded streams, an `authenticate`
 * hook and graceful shutdown.
 * @packageDocumentation
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Front, type McpHttpStats, type ShutdownResult } from './front.js';
import { type FetchInfo, fetchHandler, nodeHandler } from './adapters.js';
import type { McpHttpOptions } from './options.js';

export { EventStorePool, MemoryEventStore, type MemoryEventStoreOptions } from './eventStore.js';
export type { FetchInfo } from './adapters.js';
export {
  LOOPBACK_HOSTNAMES,
  type EventStore,
  type FactoryInfo,
  type McpHttpOptions,
  type Principal,
  type SessionServer,
} from './options.js';
export type { McpHttpStats, ShutdownResult } from './front.js';
export type { StreamStats } from './shaper.js';

/** A live 2025-era session, as {@link McpHttp.sessions} lists it. */
export interface SessionInfo {
  readonly id: string;
  /** The principal's id, when `authenticate` is set. */
  readonly principal: string | undefined;
  /** The client key it counts against (`maxSessionsPerClient`). */
  readonly clientKey: string | undefined;
  /** The session's server (what your `legacy` factory returned). */
  readonly server: unknown;
  /** Calls in flight. */
  readonly inflight: number;
  /** Open streams (SSE responses, the GET stream). */
  readonly streams: number;
  /** `Date.now()` of the last request or stream end, in ms. */
  readonly lastActive: number;
}

/** A listening front (see {@link McpHttp.listen}). */
export interface Listening {
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: URL;
  readonly port: number;
  /** The Node server. */
  readonly server: Server;
}

/** The front returned by {@link createMcpHttp}. */
export interface McpHttp {
  /** A Node `http` request listener: `createServer(front.handle)`, or inside an existing app (Express: `app.all("/mcp", front.handle)`, also after `express.json()`). */
  readonly handle: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * A Fetch-style handler, `(Request, info?) => Promise<Response>` (Hono, Bun, Deno, Workers-style
   * hosts). Pass the peer's address as `info.remoteAddress` (Deno's `info.remoteAddr` works as is):
   * it is the client key of requests nobody authenticated; without it they have none (only the
   * global bounds apply to them).
   */
  readonly fetch: (request: Request, info?: FetchInfo) => Promise<Response>;
  /**
   * Listen on `host` (default `127.0.0.1`) and `port` (0 = a free one).
   * @throws SdkSeamError (from `@mcp-tether/core`) when an installed SDK lacks a private field the
   *   front relies on, naming its version; `handle`/`fetch` answer each session or request of that
   *   SDK with a 500 carrying the same message.
   */
  listen(port?: number, host?: string): Promise<Listening>;
  /**
   * Graceful shutdown: new sessions and calls get HTTP 503 with a JSON-RPC error (`data.code`
   * `SHUTTING_DOWN`) while running calls get `graceMs` (default `shutdownGraceMs`) to finish; the
   * calls still running are then answered with a `SHUTTING_DOWN` JSON-RPC error and aborted, every
   * session closes, and the listener (if {@link McpHttp.listen} made one) closes.
   */
  shutdown(graceMs?: number): Promise<ShutdownResult>;
  /** Close at once: calls abort with reason `disconnect`, sessions and the listener close. */
  close(): Promise<void>;
  /** Live 2025-era sessions by id. */
  sessions(): SessionInfo[];
  /**
   * Notifications for 2026-07-28 clients listening with `subscriptions/listen` (each goes only to
   * the streams that opted in to it; SDK 2.x `ServerNotifier`). 2025-era sessions get theirs from
   * their own server (`server.sendResourceUpdated(...)`, or `@mcp-tether/jobs` for job output).
   */
  readonly notify: {
    toolsChanged(): void;
    promptsChanged(): void;
    resourcesChanged(): void;
    /** `notifications/resources/updated` for `uri` to the listeners subscribed to it. */
    resourceUpdated(uri: string): void;
  };
  /** Counters and gauges. */
  readonly stats: Readonly<McpHttpStats>;
}

/**
 * Create the HTTP front: one endpoint serving 2025-era sessions from `options.legacy` and
 * 2026-07-28 requests from `options.modern`.
 * @throws TypeError for an invalid option (no factory, a negative size, ...)
 */
export function createMcpHttp(options: McpHttpOptions): McpHttp {
  const front = new Front(options);
  const handle = nodeHandler(front);
  const listeners = new Set<Server>();
  const closeListeners = async (settleMs = 0) => {
    for (const s of listeners) {
      s.close();
      s.closeIdleConnections();
    }
    // Let the last answers (SHUTTING_DOWN errors) reach their clients before the sockets go.
    const end = Date.now() + settleMs;
    while (front.responses > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(
      [...listeners].map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    listeners.clear();
  };
  return {
    handle,
    fetch: fetchHandler(front),
    async listen(port = 0, host = '127.0.0.1') {
      await front.checkSeams(); // an SDK whose private fields moved fails here, loudly, not later quietly
      const server = createServer(handle);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      listeners.add(server);
      const { port: bound } = server.address() as AddressInfo;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      return { url: new URL(`http://${urlHost}:${bound}${front.opts.path}`), port: bound, server };
    },
    async shutdown(graceMs) {
      const r = await front.shutdown(graceMs);
      await closeListeners(1_000);
      return r;
    },
    async close() {
      await front.close();
      await closeListeners();
    },
    sessions: () =>
      [...front.sessions.values()].map((s) => ({
        id: s.id,
        principal: s.principal,
        clientKey: s.clientKey,
        server: s.server,
        inflight: s.inflight.size,
        streams: s.streams,
        lastActive: s.lastActive,
      })),
    stats: front.stats,
    notify: {
      toolsChanged: () => front.notifyModern('toolsChanged'),
      promptsChanged: () => front.notifyModern('promptsChanged'),
      resourcesChanged: () => front.notifyModern('resourcesChanged'),
      resourceUpdated: (uri) => front.notifyModern('resourceUpdated', uri),
    },
  };
}
