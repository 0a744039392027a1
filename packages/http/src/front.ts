/**
 * The front: one endpoint for both eras. Everything here works on web `Request`/`Response`; the
 * adapters (`adapters.ts`: Node `(req, res)` and Fetch `(Request) => Response`) only read bodies and
 * pump streams.
 */
import { randomUUID } from 'node:crypto';
import {
  Disconnected,
  ErrorCode,
  JsonRpcErrorCode,
  ShuttingDown,
  abortCalls,
  isRequestId,
  jsonRpcProblem,
} from '@mcp-tether/core';
import { MemoryEventStore } from './eventStore.js';
import { errorResponse, isRequest, isResponse, shuttingDownError, type Id, type Message } from './jsonrpc.js';
import {
  resolveOptions,
  type EventStore,
  type FactoryInfo,
  type McpHttpOptions,
  type Principal,
  type Resolved,
  type SessionServer,
} from './options.js';
import { Shaper, type StreamStats } from './shaper.js';

/** The SDK's `AuthInfo`. */
interface AuthInfo {
  token: string;
  clientId: string;
  scopes: string[];
  expiresAt?: number;
  extra?: Record<string, unknown>;
}

/** Structural view of the SDKs' `WebStandardStreamableHTTPServerTransport` (1.x and 2.x share its internals). */
interface WebTransport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (e: Error) => void;
  handleRequest(req: Request, options?: { parsedBody?: unknown; authInfo?: AuthInfo }): Promise<Response>;
  send(message: unknown, options?: unknown): Promise<void>;
  close(): Promise<void>;
  _requestToStreamMapping: Map<Id, string>;
  _streamMapping: Map<string, { cleanup(): void }>;
  _requestResponseMap?: Map<Id, unknown>;
  _resumableStreams?: Set<string>;
}

type TransportCtor = new (options: Record<string, unknown>) => WebTransport;

interface ModernHandler {
  fetch(request: Request, options?: { parsedBody?: unknown; authInfo?: AuthInfo }): Promise<Response>;
  close(): Promise<void>;
  /** SDK 2.x `ServerNotifier`: publishes onto the open `subscriptions/listen` streams. */
  notify?: Record<ModernNotice, (...args: string[]) => void>;
}

/** The `subscriptions/listen` notifications {@link Front.notifyModern} forwards. */
export type ModernNotice = 'toolsChanged' | 'promptsChanged' | 'resourcesChanged' | 'resourceUpdated';

type Encoder = { encode(text: string): Uint8Array };

/** What the SDK transport writes into one stream: its controller, encoder, message and event id. */
interface SourceEvent {
  controller: ReadableStreamDefaultController<Uint8Array>;
  encoder: Encoder;
  message: Record<string, unknown>;
  eventId: string | undefined;
}

type WriteSse = (
  controller: ReadableStreamDefaultController<Uint8Array>,
  encoder: Encoder,
  message: unknown,
  eventId?: string,
) => boolean;

/** Events one SDK stream may queue before the client has read them, past which shaping starts. */
const MAX_QUEUED_EVENTS = 32;

/** One 2025-era session. */
export class Session {
  /** Request ids of calls in flight (answered or cancelled ids leave). */
  readonly inflight = new Set<Id>();
  /** Open HTTP responses (SSE streams, pending JSON) of the session. */
  streams = 0;
  /** `Date.now()` of the last request or stream end, in ms. */
  lastActive = Date.now();
  /** Streams ended because their request was cancelled (a resume of one gets 405); bounded. */
  readonly endedStreams = new Set<string>();
  /** Shapers of this session's streams that hold events (see {@link Front.instrument}). */
  readonly holding = new Set<Shaper<SourceEvent>>();
  closing = false;

  /** The client read from a stream: move held events on, as far as the bounds allow. */
  flush(): void {
    if (this.holding.size === 0) return;
    for (const sh of [...this.holding]) {
      sh.flush();
      if (sh.drained) this.holding.delete(sh);
    }
  }

  constructor(
    readonly id: string,
    readonly transport: WebTransport,
    readonly server: SessionServer,
    readonly principal: string | undefined,
    readonly eventStore: EventStore | undefined,
  ) {}
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
  /** The 2025-era session the response belongs to (its stream keeps the session alive). */
  session?: Session;
  /** The 2026-07-28 exchange, while its response streams. */
  exchange?: ModernExchange;
}

/** Result of {@link McpHttp.shutdown}. */
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
}

const SESSION_ID = /^[\x21-\x7e]{1,256}$/;
const MAX_ENDED_STREAMS = 256;

export class Front {
  readonly opts: Resolved;
  readonly sessions = new Map<string, Session>();
  readonly stats: McpHttpStats = {
    sessions: 0,
    inflight: 0,
    streams: 0,
    expiredSessions: 0,
    duplicateIds: 0,
    cancelledStreams: 0,
    coalescedProgress: 0,
    droppedLogs: 0,
    droppedNotifications: 0,
    backedUpStreams: 0,
  };
  readonly exchanges = new Set<ModernExchange>();
  /** Node responses not yet closed (the listener waits for them at shutdown). */
  responses = 0;
  private readonly modernServers = new Set<SessionServer>();
  /** The shaper of each session stream, by the SDK's stream controller. */
  private readonly shapers = new WeakMap<object, Shaper<SourceEvent>>();
  /** Shapers of 2026-07-28 streams that hold events. */
  private readonly modernHolding = new Set<Shaper<Record<string, unknown>>>();
  /** The exchange of each inner request handed to the SDK's modern handler (its factory gets the request back). */
  private readonly byRequest = new WeakMap<Request, ModernExchange>();
  private initializing = 0;
  private modernStreams = 0;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private modern:
    | Promise<{ handler: ModernHandler; isLegacyRequest: (r: Request, body: unknown) => Promise<boolean> }>
    | undefined;
  private state: 'open' | 'draining' | 'closed' = 'open';
  private shutdownPromise: Promise<ShutdownResult> | undefined;

  constructor(readonly options: McpHttpOptions) {
    this.opts = resolveOptions(options);
  }

  get shuttingDown(): boolean {
    return this.state !== 'open';
  }

  report(err: unknown): void {
    try {
      this.options.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      /* a failing reporter must not break a request */
    }
  }

  private log(line: string): void {
    try {
      this.options.log?.(line);
    } catch {
      /* ignore */
    }
  }

  // ---------------------------------------------------------------- checks

  /** 403 for a Host or Origin that is not allowed (DNS rebinding), else undefined. */
  checkHostAndOrigin(headers: Headers, urlHost?: string): Response | undefined {
    const hosts = this.opts.allowedHosts;
    if (hosts !== '*') {
      // A Fetch API Request carries no Host header: its URL's host is what the client asked for.
      const host = headers.get('host') ?? urlHost ?? null;
      if (host === null || !hosts.has(hostnameOf(host)))
        return errorResponse(403, null, -32000, `Forbidden: Host ${JSON.stringify(host ?? '')} is not allowed`);
    }
    const origin = headers.get('origin');
    const origins = this.opts.allowedOrigins;
    if (origin !== null && origins !== '*') {
      let url: URL | undefined;
      try {
        url = new URL(origin);
      } catch {
        url = undefined;
      }
      const ok =
        url !== undefined &&
        url.origin !== 'null' &&
        (origins.origins.has(url.origin.toLowerCase()) || origins.hosts.has(hostnameOf(url.host)));
      if (!ok) return errorResponse(403, null, -32000, `Forbidden: Origin ${JSON.stringify(origin)} is not allowed`);
    }
    return undefined;
  }

  private async authenticate(request: Request): Promise<Principal | undefined | Response> {
    const auth = this.options.authenticate;
    if (!auth) return undefined;
    let p: Principal | string | undefined | null;
    try {
      p = await auth(request);
    } catch {
      p = undefined;
    }
    if (typeof p === 'string') p = { clientId: p };
    if (!p || typeof p.clientId !== 'string') {
      return errorResponse(401, null, -32000, 'Unauthorized', undefined, { 'www-authenticate': 'Bearer' });
    }
    return p;
  }

  // ---------------------------------------------------------------- entry

  /**
   * Serve one request. `bodyText` is the POST body as read (the adapter enforced the size limit);
   * `request.signal` aborts when the client's connection closes.
   */
  async serve(request: Request, bodyText: string | undefined): Promise<Served> {
    const refused = this.checkHostAndOrigin(request.headers, new URL(request.url).host);
    if (refused) return { response: refused };
    const principal = await this.authenticate(request);
    if (principal instanceof Response) return { response: principal };
    switch (request.method) {
      case 'POST':
        return this.post(request, bodyText ?? '', principal);
      case 'GET':
      case 'DELETE':
        return this.getOrDelete(request, principal);
      default:
        return {
          response: errorResponse(405, null, -32000, 'Method not allowed', undefined, { allow: 'GET, POST, DELETE' }),
        };
    }
  }

  private async post(request: Request, text: string, principal: Principal | undefined): Promise<Served> {
    const type = request.headers.get('content-type') ?? '';
    if (!/^application\/json\b/i.test(type.trim())) {
      return {
        response: errorResponse(415, null, -32000, 'Unsupported Media Type: Content-Type must be application/json'),
      };
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { response: errorResponse(400, null, JsonRpcErrorCode.ParseError, 'Parse error: the body is not JSON') };
    }
    const messages = (Array.isArray(body) ? body : [body]) as Message[];
    if (messages.length === 0)
      return { response: errorResponse(400, null, JsonRpcErrorCode.InvalidRequest, 'Invalid Request: empty batch') };
    for (const m of messages) {
      const problem = jsonRpcProblem(m);
      if (problem !== undefined) {
        const id =
          typeof m === 'object' && m !== null && isRequestId((m as Message).id) ? ((m as Message).id as Id) : null;
        return { response: errorResponse(400, id, JsonRpcErrorCode.InvalidRequest, `Invalid Request: ${problem}`) };
      }
    }
    const requests = messages.filter(isRequest);
    if (this.state !== 'open' && requests.length > 0) {
      return { response: this.shuttingDownResponse(requests[0]!.id as Id) };
    }
    const sid = request.headers.get('mcp-session-id');
    if (this.options.modern) {
      // The SDK's own classifier (body first): a 2026-07-28 request ignores any Mcp-Session-Id.
      const modern = await this.loadModern();
      if (!(await modern.isLegacyRequest(request, body)))
        return this.postModern(modern.handler, request, text, body, requests, principal);
    }
    if (!this.options.legacy) {
      // Modern-only endpoint: the SDK's modern handler refuses 2025-era traffic itself.
      const modern = await this.loadModern();
      return this.postModern(modern.handler, request, text, body, requests, principal);
    }
    if (sid !== null) {
      const session = this.lookup(sid, principal);
      if (!session) return { response: sessionNotFound() };
      return this.postToSession(session, request, body, messages, requests, principal);
    }
    if (!messages.some((m) => m.method === 'initialize')) {
      return {
        response: errorResponse(
          400,
          requests[0] ? (requests[0].id as Id) : null,
          -32000,
          'Bad Request: Mcp-Session-Id header is required (or send initialize to open a session)',
        ),
      };
    }
    return this.openSession(request, body, principal);
  }

  private shuttingDownResponse(id: Id | null): Response {
    const e = shuttingDownError('The server is shutting down and takes no new sessions or calls. Try again later.');
    return errorResponse(503, id, e.code, e.message, e.data, { 'retry-after': '1', connection: 'close' });
  }

  private lookup(sid: string, principal: Principal | undefined): Session | undefined {
    if (!SESSION_ID.test(sid)) return undefined;
    const s = this.sessions.get(sid);
    if (!s || s.closing || s.principal !== principal?.clientId) return undefined;
    return s;
  }

  // ---------------------------------------------------------------- 2025 era

  private async transportClass(server: SessionServer): Promise<TransportCtor> {
    // SDK 2.x servers have `_wrapHandler`; SDK 1.x servers do not.
    const inner = (server as { server?: { _wrapHandler?: unknown } }).server;
    if (typeof inner?._wrapHandler === 'function') {
      const m = (await import('@modelcontextprotocol/server')) as unknown as {
        WebStandardStreamableHTTPServerTransport: TransportCtor;
      };
      return m.WebStandardStreamableHTTPServerTransport;
    }
    const m = (await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js')) as unknown as {
      WebStandardStreamableHTTPServerTransport: TransportCtor;
    };
    return m.WebStandardStreamableHTTPServerTransport;
  }

  private async openSession(request: Request, body: unknown, principal: Principal | undefined): Promise<Served> {
    const initId = ((Array.isArray(body) ? body : [body]) as Message[]).find((m) => m.method === 'initialize')?.id as
      | Id
      | undefined;
    if (this.sessions.size + this.initializing >= this.opts.maxSessions) {
      return {
        response: errorResponse(
          503,
          initId ?? null,
          JsonRpcErrorCode.InternalError,
          `Server busy: the session limit (${this.opts.maxSessions}) is reached. Try again later.`,
          {
            code: ErrorCode.BUSY,
            maxSessions: this.opts.maxSessions,
          },
          { 'retry-after': '1' },
        ),
      };
    }
    this.initializing++;
    let server: SessionServer | undefined;
    let session: Session | undefined;
    try {
      const info: FactoryInfo = { principal, headers: request.headers };
      server = await this.options.legacy!(info);
      const Transport = await this.transportClass(server);
      const makeStore = this.options.eventStore;
      let store: EventStore | undefined;
      const transport: WebTransport = new Transport({
        sessionIdGenerator: () => randomUUID(),
        ...(makeStore !== false && { eventStore: (store = makeStore ? makeStore() : new MemoryEventStore(1_000)) }),
        retryInterval: this.opts.retryIntervalMs,
        keepAliveMs: this.opts.keepAliveMs,
        onsessioninitialized: (id: string) => {
          session = new Session(id, transport, server!, principal?.clientId, store);
          this.sessions.set(id, session);
          this.stats.sessions = this.sessions.size;
          this.startSweep();
          this.log(`session ${id} opened`);
        },
      });
      this.instrument(transport, () => session);
      await server.connect(transport);
      // Protocol.connect installed its own onclose: ours runs first (the session leaves the map).
      const sdkOnClose = transport.onclose;
      transport.onclose = () => {
        if (session) this.forget(session, 'closed');
        sdkOnClose?.();
      };
      const response = await transport.handleRequest(request, {
        parsedBody: body,
        ...(principal && { authInfo: authInfo(principal) }),
      });
      if (!session) {
        // initialize refused (bad params, a second initialize in the body): nothing to keep.
        void server.close().catch((e: unknown) => this.report(e));
        return { response };
      }
      session.lastActive = Date.now();
      return { response, session };
    } catch (err) {
      this.report(err);
      if (session) void this.closeSession(session, 'failed');
      else if (server) void server.close().catch(() => {});
      return {
        response: errorResponse(
          500,
          initId ?? null,
          JsonRpcErrorCode.InternalError,
          'Internal error: the session could not be opened',
        ),
      };
    } finally {
      this.initializing--;
    }
  }

  /**
   * Track responses (in-flight ids leave) on the session's transport, and bound its streams
   * (fault 5): the SDK writes each event into the stream's queue without looking at it, so the
   * front shapes events where the SDK writes them (`writeSSEEvent`, shared by SDK 1.x and 2.x):
   * past {@link MAX_QUEUED_EVENTS} unread events (the adapter reads a stream only while the
   * client takes what was written), progress coalesces and logs are shed (see `shaper.ts`).
   */
  private instrument(transport: WebTransport, session: () => Session | undefined): void {
    const t = transport as WebTransport & { writeSSEEvent?: WriteSse };
    if (typeof t.writeSSEEvent === 'function') {
      const write = t.writeSSEEvent.bind(t) as WriteSse;
      const shapers = this.shapers;
      const limits = { maxHeldMessages: this.opts.maxHeldMessages };
      t.writeSSEEvent = (controller, encoder, message, eventId) => {
        let sh = shapers.get(controller);
        if (sh === undefined) {
          sh = new Shaper<SourceEvent>(
            {
              write: (e) => void write(e.controller, e.encoder, e.message, e.eventId),
              writeNotice: (m) => void write(controller, encoder, m),
              backedUp: () => 1 - (controller.desiredSize ?? 1) >= MAX_QUEUED_EVENTS,
            },
            limits,
            this.stats,
            (e) => e.message,
          );
          shapers.set(controller, sh);
          // The SDK closes a stream right after its last response: what is still held goes first.
          const shaper = sh;
          const close = controller.close.bind(controller);
          controller.close = () => {
            if ((t as { _closed?: boolean })._closed) shaper.discard(); // the session is closing: nothing more will be read
            shaper.whenDrained(() => {
              try {
                close();
              } catch {
                /* already closed or cancelled */
              }
            });
          };
        }
        if (sh.drained && 1 - (controller.desiredSize ?? 1) < MAX_QUEUED_EVENTS)
          return write(controller, encoder, message, eventId);
        sh.push({ controller, encoder, message: message as Record<string, unknown>, eventId });
        if (!sh.drained) session()?.holding.add(sh);
        return true;
      };
    }
    const send = transport.send.bind(transport);
    transport.send = async (message: unknown, options?: unknown) => {
      try {
        return await send(message, options);
      } finally {
        const m = message as Message;
        if (isResponse(m)) {
          const s = session();
          if (s?.inflight.delete(m.id as Id)) this.stats.inflight--;
        }
      }
    };
  }

  private async postToSession(
    session: Session,
    request: Request,
    body: unknown,
    messages: Message[],
    requests: Message[],
    principal: Principal | undefined,
  ): Promise<Served> {
    session.lastActive = Date.now();
    // Fault 1 (typescript-sdk #2433): an id already in flight would take over the first call's
    // stream (the SDK maps responses by id): refuse the newcomer on its own response.
    const seen = new Set<Id>();
    for (const r of requests) {
      const id = r.id as Id;
      if (session.inflight.has(id) || seen.has(id)) {
        this.stats.duplicateIds++;
        return {
          response: errorResponse(
            409,
            id,
            JsonRpcErrorCode.InvalidRequest,
            `Invalid Request: request id ${JSON.stringify(id)} is already used by a request in flight in this session`,
          ),
        };
      }
      seen.add(id);
    }
    for (const id of seen) session.inflight.add(id);
    this.stats.inflight += seen.size;
    let response: Response;
    try {
      response = await session.transport.handleRequest(request, {
        parsedBody: body,
        ...(principal && { authInfo: authInfo(principal) }),
      });
    } catch (err) {
      this.release(session, seen);
      throw err;
    }
    if (!response.ok) this.release(session, seen); // refused by the transport (e.g. a bad protocol version header)
    // Fault 2: a cancelled call's stream stays open (keep-alives) until the session ends. End it.
    for (const m of messages) {
      if (m.method !== 'notifications/cancelled') continue;
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      if (isRequestId(id)) this.endCancelledStream(session, id);
    }
    return { response, session };
  }

  private release(session: Session, ids: Iterable<Id>): void {
    for (const id of ids) if (session.inflight.delete(id)) this.stats.inflight--;
  }

  /** End the SSE stream of a cancelled request: no response will come for it (spec: none after a cancel). */
  private endCancelledStream(session: Session, id: Id): void {
    if (!session.inflight.delete(id)) return;
    this.stats.inflight--;
    const t = session.transport;
    const streamId = t._requestToStreamMapping?.get(id);
    if (streamId === undefined) return;
    t._requestToStreamMapping.delete(id);
    t._requestResponseMap?.delete(id);
    for (const other of t._requestToStreamMapping.values()) if (other === streamId) return; // a batch: the others' responses end it
    const stream = t._streamMapping.get(streamId) as { cleanup(): void; controller?: object } | undefined;
    // Nothing more goes out for a cancelled call: what its stream still holds is dropped.
    const shaper = stream?.controller ? this.shapers.get(stream.controller) : undefined;
    if (shaper) {
      shaper.discard();
      session.holding.delete(shaper);
    }
    stream?.cleanup();
    t._resumableStreams?.delete(streamId);
    if (session.endedStreams.size >= MAX_ENDED_STREAMS)
      session.endedStreams.delete(session.endedStreams.values().next().value as string);
    session.endedStreams.add(streamId);
    this.stats.cancelledStreams++;
  }

  private async getOrDelete(request: Request, principal: Principal | undefined): Promise<Served> {
    if (!this.options.legacy) {
      return {
        response: errorResponse(
          405,
          null,
          -32000,
          'Method not allowed: this endpoint serves 2026-07-28 requests only (POST)',
          undefined,
          { allow: 'POST' },
        ),
      };
    }
    const sid = request.headers.get('mcp-session-id');
    if (sid === null)
      return { response: errorResponse(400, null, -32000, 'Bad Request: Mcp-Session-Id header is required') };
    const session = this.lookup(sid, principal);
    if (!session) return { response: sessionNotFound() };
    session.lastActive = Date.now();
    if (request.method === 'GET') {
      if (this.state !== 'open') return { response: this.shuttingDownResponse(null) };
      const last = request.headers.get('last-event-id');
      if (last !== null && session.eventStore?.getStreamIdForEventId) {
        const streamId = await session.eventStore.getStreamIdForEventId(last).catch(() => undefined);
        if (streamId !== undefined && session.endedStreams.has(streamId)) {
          // Resuming a stream that ended with its cancelled request: there is nothing more to send
          // on it. 405 is what SDK clients take as "no stream here" without retrying.
          return {
            response: errorResponse(405, null, -32000, 'This stream ended: its request was cancelled', undefined, {
              allow: 'GET, POST, DELETE',
            }),
            session,
          };
        }
      }
    }
    const response = await session.transport.handleRequest(
      request,
      principal ? { authInfo: authInfo(principal) } : undefined,
    );
    if (request.method === 'DELETE' && response.ok) this.log(`session ${session.id} ended by the client (DELETE)`);
    return { response, session };
  }

  /** A session's stream opened / closed (the adapters call these). */
  streamOpened(session: Session | undefined): void {
    this.stats.streams++;
    if (session) session.streams++;
    else this.modernStreams++;
  }

  streamClosed(session: Session | undefined): void {
    this.stats.streams--;
    if (session) {
      session.streams--;
      session.lastActive = Date.now();
    } else this.modernStreams--;
  }

  /** The session left (closed by DELETE, expiry, shutdown or its server): drop it from the map. */
  private forget(session: Session, why: string): void {
    if (this.sessions.get(session.id) !== session) return;
    this.sessions.delete(session.id);
    this.stats.sessions = this.sessions.size;
    this.stats.inflight -= session.inflight.size;
    session.inflight.clear();
    session.closing = true;
    this.log(`session ${session.id} ${why}`);
    if (this.sessions.size === 0) this.stopSweep();
  }

  /** Close a session: its calls abort (`Disconnected`, unless aborted before), its server closes. */
  async closeSession(session: Session, why: string): Promise<void> {
    this.forget(session, why);
    session.closing = true;
    await session.transport.close().catch((e: unknown) => this.report(e));
    await session.server.close().catch((e: unknown) => this.report(e));
  }

  // ---------------------------------------------------------------- idle expiry (fault 6)

  private startSweep(): void {
    if (this.sweepTimer !== undefined) return;
    const every = Math.min(1_000, Math.max(10, Math.floor(this.opts.sessionIdleMs / 4)));
    this.sweepTimer = setInterval(() => this.sweep(), every);
    this.sweepTimer.unref?.();
  }

  private stopSweep(): void {
    if (this.sweepTimer === undefined) return;
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  private sweep(): void {
    const now = Date.now();
    for (const s of [...this.sessions.values()]) {
      if (s.streams === 0 && now - s.lastActive >= this.opts.sessionIdleMs) {
        this.stats.expiredSessions++;
        void this.closeSession(s, `expired (idle for ${this.opts.sessionIdleMs} ms)`);
      }
    }
  }

  // ---------------------------------------------------------------- 2026-07-28

  private loadModern() {
    this.modern ??= (async () => {
      const m = (await import('@modelcontextprotocol/server')) as unknown as {
        createMcpHandler(
          factory: (ctx: { authInfo?: AuthInfo; requestInfo?: Request }) => Promise<SessionServer>,
          options: Record<string, unknown>,
        ): ModernHandler;
        isLegacyRequest(r: Request, body: unknown): Promise<boolean>;
      };
      const factory = this.options.modern;
      const handler = m.createMcpHandler(
        async (ctx) => {
          if (!factory) throw new Error('no modern factory');
          const server = await factory({
            principal: principalOf(ctx.authInfo),
            headers: ctx.requestInfo?.headers ?? new Headers(),
          });
          this.trackModernServer(server, ctx.requestInfo ? this.byRequest.get(ctx.requestInfo) : undefined);
          return server;
        },
        {
          legacy: 'reject',
          keepAliveMs: this.opts.keepAliveMs,
          maxRequestBodySize: this.opts.maxBodyBytes,
          onerror: (e: Error) => this.report(e),
        },
      );
      return { handler, isLegacyRequest: (r: Request, body: unknown) => m.isLegacyRequest(r, body) };
    })();
    return this.modern;
  }

  /**
   * Publish a list-changed or resource-updated notification to the 2026-07-28 `subscriptions/listen`
   * streams that opted in (SDK 2.x `createMcpHandler().notify`). Before the first 2026 request no
   * handler exists, so no stream does either: nothing to send.
   */
  notifyModern(notice: ModernNotice, ...args: string[]): void {
    void this.modern?.then((m) => m.handler.notify?.[notice]?.(...args)).catch((e: unknown) => this.report(e as Error));
  }

  /** The client read from a 2026-07-28 stream: move held events on. */
  flushModern(): void {
    if (this.modernHolding.size === 0) return;
    for (const sh of [...this.modernHolding]) {
      sh.flush();
      if (sh.drained) this.modernHolding.delete(sh);
    }
  }

  /**
   * Bound a 2026-07-28 exchange's stream where the SDK writes it (`PerRequestHTTPServerTransport`:
   * `writeMessageFrame`, `finalizeStream`), as {@link Front.instrument} does for sessions.
   */
  private instrumentModern(transport: unknown, exchange: ModernExchange | undefined): void {
    const t = transport as {
      writeMessageFrame?: (m: unknown) => void;
      finalizeStream?: () => void;
      close?: () => Promise<void>;
      _sse?: { controller?: ReadableStreamDefaultController<Uint8Array> };
    };
    if (
      typeof t.writeMessageFrame !== 'function' ||
      typeof t.finalizeStream !== 'function' ||
      typeof t.close !== 'function'
    )
      return;
    const write = t.writeMessageFrame.bind(t);
    const finalize = t.finalizeStream.bind(t);
    const close = t.close.bind(t);
    const queued = () => {
      const c = t._sse?.controller;
      return c ? 1 - (c.desiredSize ?? 1) : 0;
    };
    const sh = new Shaper<Record<string, unknown>>(
      { write: (m) => write(m), writeNotice: (m) => write(m), backedUp: () => queued() >= MAX_QUEUED_EVENTS },
      { maxHeldMessages: this.opts.maxHeldMessages },
      this.stats,
      (m) => m,
    );
    t.writeMessageFrame = (m) => {
      const message = m as Record<string, unknown>;
      // The call is answered once its response is handed over, read or not (as on sessions).
      if (exchange && isResponse(message)) this.endExchange(exchange);
      if (sh.drained && queued() < MAX_QUEUED_EVENTS) return write(m);
      sh.push(message);
      if (!sh.drained) this.modernHolding.add(sh);
    };
    // The SDK closes the stream right after the response: what is still held goes first.
    t.finalizeStream = () => sh.whenDrained(finalize);
    t.close = () => {
      this.modernHolding.delete(sh);
      sh.discard();
      return close();
    };
  }

  private trackModernServer(server: SessionServer, exchange: ModernExchange | undefined): void {
    this.modernServers.add(server);
    const connect = server.connect.bind(server);
    server.connect = (transport: unknown) => {
      this.instrumentModern(transport, exchange);
      return connect(transport);
    };

    const inner = (server as { server?: { onclose?: () => void } }).server;
    if (!inner) return;
    const prev = inner.onclose;
    inner.onclose = () => {
      this.modernServers.delete(server);
      prev?.();
    };
  }

  private async postModern(
    handler: ModernHandler,
    request: Request,
    text: string,
    body: unknown,
    requests: Message[],
    principal: Principal | undefined,
  ): Promise<Served> {
    const abort = new AbortController();
    const onClientGone = () => abort.abort();
    if (request.signal.aborted) abort.abort();
    else request.signal.addEventListener('abort', onClientGone, { once: true });
    let fail!: () => void;
    const exchange: ModernExchange = {
      ids: requests.map((r) => r.id as Id),
      abort,
      failure: undefined,
      failed: new Promise<void>((r) => (fail = r)),
      fail(error) {
        if (exchange.failure) return;
        exchange.failure = error;
        fail();
        exchange.onFail?.(error);
      },
    };
    if (requests.length > 0) {
      this.exchanges.add(exchange);
      this.stats.inflight += requests.length;
    }
    const inner = new Request(request.url, {
      method: 'POST',
      headers: request.headers,
      body: text,
      signal: abort.signal,
    });
    this.byRequest.set(inner, exchange);
    const pending = handler.fetch(inner, { parsedBody: body, ...(principal && { authInfo: authInfo(principal) }) });
    const response = await Promise.race([pending, exchange.failed.then(() => undefined)]);
    if (response === undefined) {
      // Shutdown stopped the call before any response existed.
      void pending.then((r) => r.body?.cancel()).catch(() => {});
      this.endExchange(exchange);
      request.signal.removeEventListener('abort', onClientGone);
      const id = exchange.ids[0] ?? null;
      return {
        response: new Response(JSON.stringify({ jsonrpc: '2.0', id, error: exchange.failure }), {
          status: 503,
          headers: { 'content-type': 'application/json', connection: 'close' },
        }),
      };
    }
    if (!response.body || !(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      this.endExchange(exchange);
      request.signal.removeEventListener('abort', onClientGone);
      return { response };
    }
    return { response, exchange };
  }

  /** The exchange's call was answered, or its response ended (idempotent). */
  endExchange(exchange: ModernExchange): void {
    if (this.exchanges.delete(exchange)) this.stats.inflight -= exchange.ids.length;
  }

  // ---------------------------------------------------------------- shutdown (fault 10)

  /**
   * Graceful shutdown: new sessions and calls are refused at once (HTTP 503, JSON-RPC error with
   * `data.code` `SHUTTING_DOWN`); running calls get `graceMs` to finish; those still running then
   * are answered with a `SHUTTING_DOWN` JSON-RPC error and aborted (`signal.reason.kind` is
   * `shutdown` on tethered servers); then every session closes. Calling it again returns the same promise.
   */
  shutdown(graceMs = this.opts.shutdownGraceMs): Promise<ShutdownResult> {
    this.shutdownPromise ??= this.doShutdown(graceMs);
    return this.shutdownPromise;
  }

  private inflightCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) n += s.inflight.size;
    for (const e of this.exchanges) n += e.ids.length;
    return n;
  }

  private async doShutdown(graceMs: number): Promise<ShutdownResult> {
    this.state = 'draining';
    const before = this.inflightCount();
    const end = Date.now() + graceMs;
    while (this.inflightCount() > 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, Math.min(20, Math.max(1, end - Date.now()))));
    }
    const error = shuttingDownError(`The server shut down before this call finished (grace period ${graceMs} ms).`, {
      graceMs,
    });
    let aborted = 0;
    const sessions = [...this.sessions.values()];
    for (const s of sessions) {
      for (const id of [...s.inflight]) {
        aborted++;
        await s.transport.send({ jsonrpc: '2.0', id, error }).catch(() => {});
      }
      abortCalls(s.server, new ShuttingDown());
    }
    for (const e of [...this.exchanges]) {
      aborted += e.ids.length;
      e.fail(error);
    }
    for (const server of this.modernServers) abortCalls(server, new ShuttingDown());
    for (const e of [...this.exchanges]) e.abort.abort();
    await Promise.all(sessions.map((s) => this.closeSession(s, 'closed (shutdown)')));
    this.state = 'closed';
    this.stopSweep();
    return { finished: Math.max(0, before - aborted), aborted, sessions: sessions.length };
  }

  /** Close at once: calls abort with `Disconnected`, sessions close. */
  async close(): Promise<void> {
    this.state = 'closed';
    const error = shuttingDownError('The server closed before this call finished.');
    for (const e of [...this.exchanges]) {
      e.fail(error); // a JSON-RPC error body, not the SDK's empty 499
      e.abort.abort(new Disconnected('server closed'));
    }
    await Promise.all([...this.sessions.values()].map((s) => this.closeSession(s, 'closed (server closed)')));
    this.stopSweep();
    const m = this.modern;
    if (m) await (await m).handler.close().catch(() => {});
  }
}

function sessionNotFound(): Response {
  return errorResponse(404, null, -32001, 'Session not found');
}

function authInfo(p: Principal): AuthInfo {
  const a: AuthInfo = { token: p.token ?? '', clientId: p.clientId, scopes: p.scopes ?? [] };
  if (p.expiresAt !== undefined) a.expiresAt = p.expiresAt;
  if (p.extra !== undefined) a.extra = p.extra;
  return a;
}

function principalOf(a: AuthInfo | undefined): Principal | undefined {
  if (!a) return undefined;
  const p: Principal = { clientId: a.clientId, token: a.token, scopes: a.scopes };
  if (a.expiresAt !== undefined) p.expiresAt = a.expiresAt;
  if (a.extra !== undefined) p.extra = a.extra;
  return p;
}

/** `host[:port]` → lower-case hostname (IPv6 kept in brackets). */
export function hostnameOf(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}
