/**
 * What the parts of the front share: a 2025-era {@link Session}, a 2026-07-28
 * {@link ModernExchange}, the outcome of one request ({@link Served}), the counters, and the
 * {@link FrontContext} every part gets (options, stats, reporting, whether the front is open).
 */
import type { Id } from './jsonrpc.js';
import type { EventStore, McpHttpOptions, Resolved, SessionServer } from './options.js';
import type { SourceEvent, WebTransport } from './sdk.js';
import type { Shaper, StreamStats } from './shaper.js';

/** One 2025-era session. */
export class Session {
  /** Request ids of calls in flight (answered or cancelled ids leave). */
  readonly inflight = new Set<Id>();
  /** Open HTTP responses (SSE streams, pending JSON) of the session. */
  streams = 0;
  /** Open responses of its calls (POST streams): the standalone GET stream is not one. */
  callStreams = 0;
  /** `Date.now()` of the last activity (a request, a message sent, a stream end), in ms. */
  lastActive = Date.now();
  /** `Date.now()` when it opened, in ms. */
  readonly openedAt = Date.now();
  /** Streams ended because their request was cancelled (a resume of one gets 405); bounded. */
  readonly endedStreams = new Set<string>();
  /** Shapers of this session's streams that hold events (see `LegacySessions.instrument`). */
  readonly holding = new Set<Shaper<SourceEvent>>();
  closing = false;

  constructor(
    readonly id: string,
    readonly transport: WebTransport,
    readonly server: SessionServer,
    readonly principal: string | undefined,
    /** The client key it counts against (see `McpHttpOptions.maxSessionsPerClient`). */
    readonly clientKey: string | undefined,
    readonly eventStore: EventStore | undefined,
  ) {}

  /** The client read from a stream: move held events on, as far as the bounds allow. */
  flush(): void {
    if (this.holding.size === 0) return;
    for (const sh of [...this.holding]) {
      sh.flush();
      if (sh.drained) this.holding.delete(sh);
    }
  }
}

/** A 2026-07-28 request being answered. */
export interface ModernExchange {
  /** Request ids in its body. */
  readonly ids: Id[];
  /** Abort the exchange (the client's connection closed, or shutdown). */
  readonly abort: AbortController;
  /** Set when shutdown stopped it: the JSON-RPC error to answer with. */
  failure: Record<string, unknown> | undefined;
  /** Resolves when shutdown stopped it before a response existed. */
  failed: Promise<void>;
  fail(error: Record<string, unknown>): void;
  /** The adapter writes the failure into a stream already started. */
  onFail?: (error: Record<string, unknown>) => void;
}

/** Outcome of one request through the front. */
export interface Served {
  response: Response;
  /** The 2025-era session the response belongs to. */
  session?: Session;
  /** The response carries calls (a POST): while it streams, it keeps its session (the GET stream does not). */
  calls?: boolean;
  /** The 2026-07-28 exchange, while its response streams. */
  exchange?: ModernExchange;
  /**
   * A standing stream that carries no call (the 2025-era GET stream, a 2026-07-28
   * `subscriptions/listen`): it gives its request slot back once open (`maxClientRequestsInFlight`).
   */
  standing?: boolean;
}

/** Result of `McpHttp.shutdown`. */
export interface ShutdownResult {
  /** Calls that finished by themselves inside the grace period. */
  finished: number;
  /** Calls still running when the grace period ended, answered with a `SHUTTING_DOWN` error and aborted. */
  aborted: number;
  /** Sessions closed. */
  sessions: number;
}

/** Counters and gauges of a front (for health checks and tests). */
export interface McpHttpStats extends StreamStats {
  /** 2025-era sessions open. */
  sessions: number;
  /** Calls in flight across sessions and 2026-07-28 requests. */
  inflight: number;
  /** Open responses (streams) across sessions and 2026-07-28 requests. */
  streams: number;
  /** Sessions closed because they were idle. */
  expiredSessions: number;
  /** Duplicate in-flight request ids refused. */
  duplicateIds: number;
  /** Streams ended because their request was cancelled. */
  cancelledStreams: number;
  /** `initialize` refused by `maxSessions` or `maxSessionsPerClient`. */
  refusedSessions: number;
  /** Request bodies refused: over `maxBodyBytes`, over a bytes-in-flight bound, or stopped arriving (`bodyTimeoutMs`). */
  refusedBodies: number;
  /** Requests refused because their client had `maxClientRequestsInFlight` in flight. */
  refusedRequests: number;
  /**
   * POSTs answered as the client's mistake, never reported to `onError`: a body that is not JSON or
   * not JSON-RPC 2.0 or nested past `maxJsonDepth` (`-32700`/`-32600`), a `Content-Type` other than
   * JSON (415), and what the SDK's 2026-07-28 handler refused (HTTP 400/405: headers that disagree
   * with the body, a missing or invalid `_meta` envelope, an unsupported protocol version, 2025-era
   * traffic on a modern-only endpoint).
   */
  invalidRequests: number;
  /** Requests in flight now, all client keys (each bounded by `maxClientRequestsInFlight`). */
  readonly requestsInFlight: number;
  /** Requests read and waiting for their client's turn now (`fairShare`; counted in `requestsInFlight` too). */
  readonly queuedRequests: number;
  /** Requests that waited for their client's turn (`fairShare`), since the front began. */
  readonly deferredRequests: number;
  /**
   * Refusals (429 `client-requests`) waiting for their client's turn now (`fairShare`): at most
   * `maxClientRequestsInFlight` per client key; they hold no slot in `requestsInFlight`.
   */
  readonly queuedRefusals: number;
  /** Refusals (429 `client-requests`) that waited for their client's turn, since the front began (counted in `refusedRequests` too). */
  readonly deferredRefusals: number;
  /** Bytes of request bodies being read now (bounded by `maxBodyBytesInFlight`). */
  readonly bodyBytesInFlight: number;
  /** Bytes the default in-memory event stores hold now (bounded by `maxEventStoreBytes`). */
  readonly eventStoreBytes: number;
}

/** What every part of the front reads: options, counters, reporting, state. */
export interface FrontContext {
  readonly options: McpHttpOptions;
  readonly opts: Resolved;
  readonly stats: McpHttpStats;
  /** False once shutdown or close began: no new sessions, calls or streams. */
  readonly open: boolean;
  /** Hand an error to `options.onError` (never throws). */
  report(err: unknown): void;
  /** One line to `options.log` (never throws). */
  log(line: string): void;
}
