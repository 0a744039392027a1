/** Options of {@link createMcpHttp}, their defaults and their checks. */

/** The SDKs' `EventStore` (resumability), as both SDK lines define it; any implementation works (memory, Redis). */
export interface EventStore {
  storeEvent(streamId: string, message: unknown): Promise<string>;
  getStreamIdForEventId?(eventId: string): Promise<string | undefined>;
  replayEventsAfter(
    lastEventId: string,
    handlers: { send: (eventId: string, message: any) => Promise<void> },
  ): Promise<string>;
}

/** Who sent a request, as {@link McpHttpOptions.authenticate} tells. */
export interface Principal {
  /** Stable id of the principal (OAuth client id, user id); it becomes `ctx.principal`. */
  clientId: string;
  /** The credential as presented (passed to the SDK as `authInfo.token`). Default `''`. */
  token?: string;
  /** Granted scopes. Default `[]`. */
  scopes?: string[];
  /** Seconds since the epoch when the credential expires. */
  expiresAt?: number;
  /** Anything else for your handlers (`authInfo.extra` on the SDK's request context). */
  extra?: Record<string, unknown>;
}

/** What a server factory is told. */
export interface FactoryInfo {
  /** The authenticated principal, when {@link McpHttpOptions.authenticate} is set. */
  readonly principal: Principal | undefined;
  /** The headers of the request that created the session (2025 era) or of the request (2026-07-28). */
  readonly headers: Headers;
}

/** Anything with `connect(transport)` and `close()`: an `McpServer` of SDK 1.x or 2.x, tethered or not. */
export interface SessionServer {
  connect(transport: any): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link createMcpHttp}. Times are in ms, sizes in bytes. */
export interface McpHttpOptions {
  /**
   * A fresh server for each 2025-era session (an `McpServer` from `@modelcontextprotocol/sdk` 1.x
   * or from `@modelcontextprotocol/server` 2.x). Called once per `initialize`; the server lives
   * until the session ends (DELETE, idle expiry, shutdown). Without it, 2025-era traffic is refused.
   */
  legacy?: (info: FactoryInfo) => SessionServer | Promise<SessionServer>;
  /**
   * A fresh SDK 2.x `McpServer` (`@modelcontextprotocol/server`) for each 2026-07-28 request
   * (the SDK's `createMcpHandler` factory). Without it, 2026-07-28 requests reach the 2025-era
   * sessions, which refuse them.
   */
  modern?: (info: FactoryInfo) => SessionServer | Promise<SessionServer>;
  /** Endpoint path. Default `/mcp`. Other paths get 404. */
  path?: string;
  /**
   * Host names accepted in the `Host` header (DNS-rebinding protection; the port is ignored,
   * case-insensitive). Default: loopback only, `localhost`, `127.0.0.1`, `[::1]`. `'*'` accepts any
   * (behind a proxy that checks it).
   */
  allowedHosts?: readonly string[] | '*';
  /**
   * Origins accepted in the `Origin` header, when a request has one (browsers send it): full
   * origins (`https://app.example.com`) or bare host names (any scheme and port). Default: the
   * loopback host names. `'*'` accepts any. A request with a foreign or `null` Origin gets 403.
   */
  allowedOrigins?: readonly string[] | '*';
  /** Largest request body, in bytes; a larger one gets 413 before it is parsed. Default 4 MiB. */
  maxBodyBytes?: number;
  /**
   * A 2025-era session with no request and no open stream for this long, in ms, is closed: its
   * calls abort with reason `disconnect`, its server is closed. Default 300 000 (5 min). The SDK 1.x
   * client's `close()` sends no DELETE, so this is what frees ordinary sessions.
   */
  sessionIdleMs?: number;
  /** Most 2025-era sessions open at once; an `initialize` past it gets 503 + JSON-RPC error (`data.code` `BUSY`). Default 1 000. */
  maxSessions?: number;
  /** Bytes one SSE stream may leave unread by its client before it counts as backed up (see the README). Default 1 MiB. */
  maxStreamBufferBytes?: number;
  /** Notifications other than progress and logs one backed-up stream keeps; more are shed. Default 1 000. */
  maxHeldMessages?: number;
  /**
   * Event store factory for resumability of 2025-era streams (`Last-Event-ID`), called once per
   * session, before its id exists (event ids are unique per store; a shared store such as Redis
   * may return one instance for all sessions). Default: a bounded in-memory store
   * (`MemoryEventStore`, 1 000 events per session). `false` disables resumability (no priming
   * events; a dropped stream loses its messages).
   */
  eventStore?: (() => EventStore) | false;
  /** SSE `retry:` field sent to 2025-11-25 clients with the priming event, in ms. Default 1 000. */
  retryIntervalMs?: number;
  /** SSE keep-alive comment interval, in ms; 0 disables. Default 15 000 (the SDKs' default). */
  keepAliveMs?: number;
  /** How long {@link McpHttp.shutdown} lets running calls finish before it aborts them, in ms. Default 10 000. */
  shutdownGraceMs?: number;
  /**
   * Authenticate each request. Return the principal (or just its id as a string), or `undefined`
   * to refuse with 401. A throw is a 401 too (its message is not sent). The principal reaches the
   * SDK as `authInfo` and tether's `ctx.principal` (its `clientId`); a session belongs to the
   * principal that opened it, and is unknown (404) to any other.
   */
  authenticate?: (
    request: Request,
  ) => Principal | string | undefined | null | Promise<Principal | string | undefined | null>;
  /** Errors the front cannot answer (transport errors, a failing factory). Default: ignored. */
  onError?: (error: Error) => void;
  /** One line per session event (opened, closed and why). Default: nothing. */
  log?: (line: string) => void;
}

/** Hostnames a loopback server accepts in `Host` and `Origin`. */
export const LOOPBACK_HOSTNAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

export interface Resolved {
  path: string;
  allowedHosts: ReadonlySet<string> | '*';
  allowedOrigins: { hosts: ReadonlySet<string>; origins: ReadonlySet<string> } | '*';
  maxBodyBytes: number;
  sessionIdleMs: number;
  maxSessions: number;
  maxStreamBufferBytes: number;
  maxHeldMessages: number;
  retryIntervalMs: number;
  keepAliveMs: number;
  shutdownGraceMs: number;
}

function positive(name: string, v: unknown, fallback: number, allowZero = false): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0 || (!allowZero && v === 0)) {
    throw new TypeError(
      `@mcp-tether/http: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${String(v)}`,
    );
  }
  return v;
}

export function resolveOptions(o: McpHttpOptions): Resolved {
  if (!o.legacy && !o.modern)
    throw new TypeError(
      '@mcp-tether/http: give at least one server factory, legacy (2025-era sessions) or modern (2026-07-28)',
    );
  const path = o.path ?? '/mcp';
  if (!path.startsWith('/')) throw new TypeError(`@mcp-tether/http: path must start with "/", got ${path}`);
  const lower = (xs: readonly string[]) => new Set(xs.map((x) => x.toLowerCase()));
  let allowedOrigins: Resolved['allowedOrigins'];
  if (o.allowedOrigins === '*') allowedOrigins = '*';
  else {
    const list = o.allowedOrigins ?? LOOPBACK_HOSTNAMES;
    allowedOrigins = {
      hosts: lower(list.filter((x) => !x.includes('://'))),
      origins: lower(list.filter((x) => x.includes('://')).map((x) => x.replace(/\/+$/, ''))),
    };
  }
  return {
    path,
    allowedHosts: o.allowedHosts === '*' ? '*' : lower(o.allowedHosts ?? LOOPBACK_HOSTNAMES),
    allowedOrigins,
    maxBodyBytes: positive('maxBodyBytes', o.maxBodyBytes, 4 * 1024 * 1024),
    sessionIdleMs: positive('sessionIdleMs', o.sessionIdleMs, 300_000),
    maxSessions: positive('maxSessions', o.maxSessions, 1_000),
    maxStreamBufferBytes: positive('maxStreamBufferBytes', o.maxStreamBufferBytes, 1024 * 1024),
    maxHeldMessages: positive('maxHeldMessages', o.maxHeldMessages, 1_000),
    retryIntervalMs: positive('retryIntervalMs', o.retryIntervalMs, 1_000),
    keepAliveMs: positive('keepAliveMs', o.keepAliveMs, 15_000, true),
    shutdownGraceMs: positive('shutdownGraceMs', o.shutdownGraceMs, 10_000, true),
  };
}
