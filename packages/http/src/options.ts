/** Options of {@link createMcpHttp}, their defaults and their checks. */

import { hostnameOf } from './guard.js';

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
  /** Who the client is, for quotas: the principal's id, else the key {@link McpHttpOptions.clientKey} chose (e.g. `ip:203.0.113.7`). */
  readonly clientKey: string | undefined;
  /** The 2025-era session this server will serve (undefined on 2026-07-28: there is no session). */
  readonly sessionId: string | undefined;
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
   * case-insensitive). Default: loopback only, `localhost`, `127.0.0.1`, `[::1]`. `'*'` (or a list
   * holding `'*'`, e.g. `['*']`) accepts any (behind a proxy that checks it). An entry's port is
   * dropped (`example.com:8080` reads `example.com`). A TypeError at construction for: an entry with
   * a `*` inside (`*.example.com`: no patterns), a URL or path (`http://example.com`), an empty list.
   */
  allowedHosts?: readonly string[] | '*';
  /**
   * Origins accepted in the `Origin` header, when a request has one (browsers send it): full
   * origins (`https://app.example.com`) or bare host names (any scheme and port). Default: the
   * loopback host names. `'*'` (or a list holding `'*'`) accepts any. No patterns: an entry with a
   * `*` inside (`https://*.example.com`) throws a TypeError at construction. A request with a
   * foreign or `null` Origin gets 403.
   */
  allowedOrigins?: readonly string[] | '*';
  /**
   * Largest request body, in bytes. A larger one is read and discarded (up to `maxDiscardBytes`)
   * and answered 413, never parsed. Default 4 MiB.
   */
  maxBodyBytes?: number;
  /**
   * Deepest nesting of arrays and objects a request body may have; a deeper one gets 400 with
   * JSON-RPC `-32600` before anything walks it (recursive code further down, e.g. a canonical
   * JSON of the arguments, would otherwise overflow the stack). Default 1 000.
   */
  maxJsonDepth?: number;
  /**
   * How much of a refused body (over `maxBodyBytes`, or over a bytes-in-flight bound) the front
   * reads and discards before it answers, so that the client, still sending, reads the answer
   * (RFC 9112 §9.6); past it, the front answers and closes the connection. Default 4 × `maxBodyBytes`.
   */
  maxDiscardBytes?: number;
  /**
   * Request body bytes being read at once, all clients together: a body that would go past it is
   * refused with 503 (`data.code` `BUSY`, `retryAfterMs`), read and discarded. Bodies are read only
   * after the Host/Origin checks and `authenticate`. Default 64 MiB.
   */
  maxBodyBytesInFlight?: number;
  /**
   * Request body bytes being read at once for one client key: past it, 429 (`data.code` `BUSY`).
   * Default 4 × `maxBodyBytes` (at most `maxBodyBytesInFlight`).
   */
  maxClientBodyBytesInFlight?: number;
  /**
   * Requests one client key has in flight at once (calls running, their streams open, job calls
   * waiting inline), so that one client cannot hold the server's work for itself. Checked right after the
   * Host/Origin checks and `authenticate`, before a byte of the body is read: past it, 429 with a
   * JSON-RPC error (`-32603`, `data.code` `BUSY`, `reason: 'client-requests'`, `retryAfterMs`,
   * id null) and `Retry-After`, the body read and discarded, nothing else done for it.
   *
   * A request counts from then until its response ends: a POST's SSE stream (a call running, its
   * progress) counts until it closes, whichever way (answered, the client hung up, an error).
   * Standing streams that carry no call — the 2025-era GET stream (and its resumes) and a
   * 2026-07-28 `subscriptions/listen` — count only until they are open. A client at its bound
   * cannot send an answer to a server's request (elicitation, sampling, a session ping) either,
   * since that is a POST too: keep the bound above the calls one client runs at once.
   * Requests with no client key (see `clientKey`) are not counted.
   *
   * Default 32 (two SDK clients of one process running 20 calls at once on a lock stay under it).
   * A whole number ≥ 1;
   * `Infinity` turns the bound off (0 is refused: it would refuse every request).
   */
  maxClientRequestsInFlight?: number;
  /**
   * Fair turns per client key: requests one client key starts per turn of the event loop. Its
   * further requests of that turn — body read, the checks before the body passed, counted in flight
   * (so `maxClientRequestsInFlight` bounds them, and past it the 429 still comes before the body) —
   * wait in that client's queue, oldest first, and start on later turns, this many per client with
   * waiting requests per turn; the I/O between two turns lets the other clients' requests in. So a
   * client that floods the front with fast requests (each read, served and answered within the I/O
   * callback that read it) cannot make another client wait for its whole flood: that client's next
   * request starts within a turn or two. A lone client pays one `setImmediate` per turn it sends in;
   * several requests of its own that arrive together start one per turn, in order. A request that
   * waits while its client disconnects is dropped unstarted. Requests with no client key (see
   * `clientKey`) never wait. Queued requests are counted in `stats.queuedRequests`, every request that
   * waited in `stats.deferredRequests`. A client at `maxClientRequestsInFlight` has its 429s
   * answered on its turns too (at most that many waiting per client key, the rest at once): counted
   * in `stats.queuedRefusals` and `stats.deferredRefusals`.
   *
   * Default 1 (requests per client key per turn). A whole number ≥ 1; `Infinity` turns fair turns
   * off (every request starts as soon as it is read, in arrival order; 0 is refused).
   */
  fairShare?: number;
  /**
   * A request body that receives no byte for this long, in ms, is dropped: 408 and the connection
   * closes (Node's own request timeout is 300 s). Default 10 000.
   */
  bodyTimeoutMs?: number;
  /**
   * Who a client is when nobody authenticated (the principal always wins), for the per-client
   * bounds here and for `ctx.clientKey` (quotas and rate limits of other packages):
   * - `'address'` (default): the remote address, `ip:<address>` (see `trustProxy`);
   * - `'session'`: the 2025-era session, `session:<id>`; requests outside a session (`initialize`,
   *   2026-07-28) are keyed by their connection;
   * - `'connection'`: the TCP connection, `conn:<n>` (a client that opens many connections is many clients);
   * - a function of the request and its remote address (return undefined for "unknown").
   * On `front.fetch` the remote address is what you pass as its second argument (`{ remoteAddress }`).
   */
  clientKey?:
    | 'address'
    | 'session'
    | 'connection'
    | ((request: Request, remote: { readonly address: string | undefined }) => string | undefined);
  /**
   * Trust this many proxies in front of the server: the client's address is then the entry of
   * `X-Forwarded-For` that many hops from its right end (the address the outermost trusted proxy
   * saw). Default 0: `X-Forwarded-For` is ignored (anyone can write it). Set it only when every
   * request passes through those proxies.
   */
  trustProxy?: number;
  /**
   * A 2025-era session idle for this long, in ms, is closed: its calls abort with reason
   * `disconnect`, its server is closed. Idle means no request from the client, no call in flight,
   * and no message sent on its streams: an open GET stream that carries nothing but keep-alives
   * does not keep a session. Default 300 000 (5 min). The SDK 1.x client's `close()` sends no
   * DELETE, so this is what frees ordinary sessions.
   */
  sessionIdleMs?: number;
  /**
   * How long a call's response stream that carries nothing but keep-alives keeps its 2025-era
   * session from expiring, in ms (see `sessionIdleMs`). Default 3 600 000 (1 h).
   */
  maxQuietStreamMs?: number;
  /** Most 2025-era sessions open at once; an `initialize` past it gets 503 + JSON-RPC error (`data.code` `BUSY`). Default 1 000. */
  maxSessions?: number;
  /**
   * Most 2025-era sessions one client key holds at once, so one client cannot make `maxSessions`
   * unreachable for the others; an `initialize` past it gets 429 + JSON-RPC error (`data.code`
   * `BUSY`, `retryAfterMs`). Default `maxSessions / 10` (at least 1). Requests with no client key
   * (see `clientKey`) count only against `maxSessions`.
   */
  maxSessionsPerClient?: number;
  /** Bytes one SSE stream may leave unread by its client before it counts as backed up (see the README). Default 1 MiB. */
  maxStreamBufferBytes?: number;
  /** Notifications other than progress and logs one backed-up stream keeps; more are shed. Default 1 000. */
  maxHeldMessages?: number;
  /**
   * Event store factory for resumability of 2025-era streams (`Last-Event-ID`), called once per
   * session with the id the session will have (event ids are unique per store; a shared store such
   * as Redis may return one instance for all sessions, and should scope its ids by the session).
   * Default: a {@link MemoryEventStore} per session, bounded in events (1 000) and bytes (1 MiB per
   * session, `maxEventStoreBytes` across all sessions). `false` disables resumability (no priming
   * events; a dropped stream loses its messages).
   */
  eventStore?: ((info: { readonly sessionId: string }) => EventStore) | false;
  /** Bytes all default in-memory event stores hold together; past it the oldest events of the largest go first. Default 64 MiB. */
  maxEventStoreBytes?: number;
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
  /**
   * Errors the front cannot answer (transport errors, a failing factory). Default: ignored. Never
   * called for a client's mistake that was answered: a malformed body, a refused header, or a
   * 2026-07-28 request the SDK refused (headers that disagree with the body, a bad `_meta`
   * envelope, an unsupported revision), which `stats.invalidRequests` counts instead. What it
   * throws is ignored.
   */
  onError?: (error: Error) => void;
  /** One line per session event (opened, closed and why). Default: nothing. */
  log?: (line: string) => void;
}

const MiB = 1024 * 1024;

/** Hostnames a loopback server accepts in `Host` and `Origin`. */
export const LOOPBACK_HOSTNAMES: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

export interface Resolved {
  path: string;
  allowedHosts: ReadonlySet<string> | '*';
  allowedOrigins: { hosts: ReadonlySet<string>; origins: ReadonlySet<string> } | '*';
  maxBodyBytes: number;
  maxDiscardBytes: number;
  maxJsonDepth: number;
  maxBodyBytesInFlight: number;
  maxClientBodyBytesInFlight: number;
  maxClientRequestsInFlight: number;
  fairShare: number;
  bodyTimeoutMs: number;
  trustProxy: number;
  sessionIdleMs: number;
  maxQuietStreamMs: number;
  maxSessions: number;
  maxSessionsPerClient: number;
  maxEventStoreBytes: number;
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
      `@mcp-tether/http: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${shown(v)}`,
    );
  }
  return v;
}

/** An option's value in an error message: a string quoted, so that `'2'` does not read as `2`. */
function shown(v: unknown): string {
  return typeof v === 'string' ? `${JSON.stringify(v)} (a string)` : String(v);
}

/** A count ≥ 1, or `Infinity` for no bound. */
function wholeOrInfinity(name: string, v: unknown, fallback: number): number {
  if (
    v !== undefined &&
    (typeof v !== 'number' || !(v >= 1) || (v !== Number.POSITIVE_INFINITY && !Number.isInteger(v)))
  )
    throw new TypeError(
      `@mcp-tether/http: ${name} must be a whole number ≥ 1, or Infinity (no bound), got ${shown(v)}`,
    );
  return v === undefined ? fallback : v;
}

/**
 * An `allowedHosts` / `allowedOrigins` value checked (once, at construction): `'*'` for any name
 * (`'*'`, or a list holding `'*'`: `['*']` reads the same), else the list (`fallback` when unset).
 * @throws TypeError for a value that is neither `'*'` nor an array of strings, and for an entry
 *   with a `*` inside (`*.example.com`): patterns are not supported, and such an entry would
 *   silently match nothing
 */
function nameList(
  name: string,
  value: readonly string[] | '*' | undefined,
  fallback: readonly string[],
): readonly string[] | '*' {
  if (value === undefined) return fallback;
  if (value === '*') return '*';
  if (!Array.isArray(value) || value.some((x) => typeof x !== 'string'))
    throw new TypeError(`@mcp-tether/http: ${name} must be '*' or an array of strings, got ${JSON.stringify(value)}`);
  for (const x of value)
    if (x !== '*' && x.includes('*'))
      throw new TypeError(
        `@mcp-tether/http: ${name} entry ${JSON.stringify(x)}: patterns are not supported; list each name, or give '*' for any`,
      );
  return value.includes('*') ? '*' : value;
}

/**
 * `allowedHosts` entries as the guard compares them: host names, a port dropped (`example.com:8080`
 * reads `example.com`, as the port of the `Host` header is ignored).
 * @throws TypeError for an empty list (it would refuse every request) and for an entry that is a
 *   URL or has a path (`http://example.com`, `example.com/mcp`): it would match nothing
 */
function hostList(hosts: readonly string[] | '*'): readonly string[] | '*' {
  if (hosts === '*') return hosts;
  if (hosts.length === 0)
    throw new TypeError(
      "@mcp-tether/http: allowedHosts is empty, so every request would get 403; omit it for the loopback names, or give '*' for any",
    );
  for (const x of hosts)
    if (x.includes('/'))
      throw new TypeError(
        `@mcp-tether/http: allowedHosts entry ${JSON.stringify(x)}: give a host name (example.com), not a URL or a path`,
      );
  return hosts.map(hostnameOf);
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
  const origins = nameList('allowedOrigins', o.allowedOrigins, LOOPBACK_HOSTNAMES);
  if (origins === '*') allowedOrigins = '*';
  else {
    allowedOrigins = {
      hosts: lower(origins.filter((x) => !x.includes('://'))),
      origins: lower(origins.filter((x) => x.includes('://')).map((x) => x.replace(/\/+$/, ''))),
    };
  }
  const hosts = hostList(nameList('allowedHosts', o.allowedHosts, LOOPBACK_HOSTNAMES));
  const key = o.clientKey ?? 'address';
  if (typeof key !== 'function' && key !== 'address' && key !== 'session' && key !== 'connection')
    throw new TypeError(
      `@mcp-tether/http: clientKey must be 'address', 'session', 'connection' or a function, got ${String(key)}`,
    );
  const maxBodyBytes = positive('maxBodyBytes', o.maxBodyBytes, 4 * MiB);
  const maxBodyBytesInFlight = positive('maxBodyBytesInFlight', o.maxBodyBytesInFlight, 64 * MiB);
  const maxSessions = positive('maxSessions', o.maxSessions, 1_000);
  const trustProxy = positive('trustProxy', o.trustProxy, 0, true);
  if (!Number.isInteger(trustProxy))
    throw new TypeError(`@mcp-tether/http: trustProxy must be a whole number of proxies, got ${trustProxy}`);
  return {
    path,
    allowedHosts: hosts === '*' ? '*' : lower(hosts),
    allowedOrigins,
    maxBodyBytes,
    maxDiscardBytes: positive('maxDiscardBytes', o.maxDiscardBytes, 4 * maxBodyBytes, true),
    maxJsonDepth: positive('maxJsonDepth', o.maxJsonDepth, 1_000),
    maxBodyBytesInFlight,
    maxClientBodyBytesInFlight: positive(
      'maxClientBodyBytesInFlight',
      o.maxClientBodyBytesInFlight,
      Math.min(maxBodyBytesInFlight, 4 * maxBodyBytes),
    ),
    maxClientRequestsInFlight: wholeOrInfinity('maxClientRequestsInFlight', o.maxClientRequestsInFlight, 32),
    fairShare: wholeOrInfinity('fairShare', o.fairShare, 1),
    bodyTimeoutMs: positive('bodyTimeoutMs', o.bodyTimeoutMs, 10_000),
    trustProxy,
    sessionIdleMs: positive('sessionIdleMs', o.sessionIdleMs, 300_000),
    maxQuietStreamMs: positive('maxQuietStreamMs', o.maxQuietStreamMs, 3_600_000),
    maxSessions,
    maxSessionsPerClient: positive(
      'maxSessionsPerClient',
      o.maxSessionsPerClient,
      Math.max(1, Math.floor(maxSessions / 10)),
    ),
    maxEventStoreBytes: positive('maxEventStoreBytes', o.maxEventStoreBytes, 64 * MiB),
    maxStreamBufferBytes: positive('maxStreamBufferBytes', o.maxStreamBufferBytes, MiB),
    maxHeldMessages: positive('maxHeldMessages', o.maxHeldMessages, 1_000),
    retryIntervalMs: positive('retryIntervalMs', o.retryIntervalMs, 1_000),
    keepAliveMs: positive('keepAliveMs', o.keepAliveMs, 15_000, true),
    shutdownGraceMs: positive('shutdownGraceMs', o.shutdownGraceMs, 10_000, true),
  };
}
