/**
 * 2025-era sessions: one server and one SDK transport per session, opened by `initialize`, found
 * by `Mcp-Session-Id` (and by the principal that opened it), closed by DELETE, idle expiry,
 * shutdown or its server. A duplicate in-flight request id is refused (fault 1).
 */
import { randomUUID } from 'node:crypto';
import {
  diagnostics,
  ErrorCode,
  JsonRpcErrorCode,
  isRequestId,
  SdkSeamError,
  SESSION_EVENT_BYTES,
} from '@mcp-tether/core';
import { EventStorePool, MemoryEventStore } from './eventStore.js';
import type { Admitted } from './guard.js';
import { errorResponse, type Id, type Message, shuttingDownResponse } from './jsonrpc.js';
import type { EventStore, FactoryInfo, SessionServer } from './options.js';
import { authInfoFor, type WebTransport } from './sdk.js';
import { lineOf, sessionTransport } from './seams.js';
import { SessionStreams } from './sessionStreams.js';
import { type FrontContext, type Served, Session } from './state.js';

const SESSION_ID = /^[\x21-\x7e]{1,256}$/;
/** Events one session's default event store keeps. */
const SESSION_EVENTS = 1_000;
/** How long a client refused for its session cap should wait, in ms. */
const SESSION_RETRY_MS = 1_000;

export class LegacySessions {
  readonly sessions = new Map<string, Session>();
  private readonly streams: SessionStreams;
  private initializing = 0;
  /** Sessions open or opening, per client key. */
  private readonly perClient = new Map<string, number>();
  /** The bytes all default event stores share. */
  readonly eventBytes: EventStorePool;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly ctx: FrontContext) {
    this.streams = new SessionStreams(ctx);
    this.eventBytes = new EventStorePool(ctx.opts.maxEventStoreBytes);
  }

  /** The session `sid` names, if it is open and belongs to this principal. */
  lookup(sid: string, who: Admitted): Session | undefined {
    if (!SESSION_ID.test(sid)) return undefined;
    const s = this.sessions.get(sid);
    if (!s || s.closing || s.principal !== who.principal?.clientId) return undefined;
    return s;
  }

  /** Sessions open or opening for `key`. */
  held(key: string): number {
    return this.perClient.get(key) ?? 0;
  }

  private hold(key: string | undefined, delta: number): void {
    if (key === undefined) return;
    const n = (this.perClient.get(key) ?? 0) + delta;
    if (n > 0) this.perClient.set(key, n);
    else this.perClient.delete(key);
  }

  /** The 503 / 429 for an `initialize` past a session cap, or undefined. */
  private refuseOpen(initId: Id | undefined, key: string | undefined): Response | undefined {
    const { opts } = this.ctx;
    let refusal: Response | undefined;
    let reason = '';
    if (this.sessions.size + this.initializing >= opts.maxSessions) {
      reason = 'session-cap';
      refusal = errorResponse(
        503,
        initId ?? null,
        JsonRpcErrorCode.InternalError,
        `Server busy: the session limit (${opts.maxSessions}) is reached. Try again later.`,
        { ...busyData(reason, opts.maxSessions), maxSessions: opts.maxSessions },
        { 'retry-after': String(SESSION_RETRY_MS / 1_000) },
      );
    } else if (key !== undefined && this.held(key) >= opts.maxSessionsPerClient) {
      reason = 'client-session-cap';
      refusal = errorResponse(
        429,
        initId ?? null,
        JsonRpcErrorCode.InternalError,
        `Too many sessions: this client holds ${opts.maxSessionsPerClient}, its limit. End one (DELETE) or try again later.`,
        { ...busyData(reason, opts.maxSessionsPerClient), maxSessionsPerClient: opts.maxSessionsPerClient },
        { 'retry-after': String(SESSION_RETRY_MS / 1_000) },
      );
    }
    if (!refusal) return undefined;
    this.ctx.stats.refusedSessions++;
    if (diagnostics.httpSession.hasSubscribers)
      diagnostics.httpSession.publish({ kind: 'refused', sessionId: undefined, reason });
    return refusal;
  }

  /** `initialize` without a session id: a new server and transport, if the caps allow. */
  async open(request: Request, body: unknown, who: Admitted): Promise<Served> {
    const { opts } = this.ctx;
    const initId = ((Array.isArray(body) ? body : [body]) as Message[]).find((m) => m.method === 'initialize')?.id as
      | Id
      | undefined;
    const key = who.clientKey;
    const refused = this.refuseOpen(initId, key);
    if (refused) return { response: refused };
    this.initializing++;
    this.hold(key, 1);
    const id = randomUUID();
    let server: SessionServer | undefined;
    let session: Session | undefined;
    let store: EventStore | undefined;
    try {
      const info: FactoryInfo = { principal: who.principal, clientKey: key, sessionId: id, headers: request.headers };
      server = await this.ctx.options.legacy!(info);
      const Transport = await sessionTransport(lineOf(server));
      store = this.eventStore(id);
      const transport: WebTransport = new Transport({
        sessionIdGenerator: () => id,
        ...(store && { eventStore: store }),
        retryInterval: opts.retryIntervalMs,
        keepAliveMs: opts.keepAliveMs,
        onsessioninitialized: (sid: string) => {
          session = new Session(sid, transport, server!, who.principal?.clientId, key, store);
          this.sessions.set(sid, session);
          this.ctx.stats.sessions = this.sessions.size;
          this.startSweep();
          this.ctx.log(`session ${sid} opened`);
          if (diagnostics.httpSession.hasSubscribers)
            diagnostics.httpSession.publish({ kind: 'opened', sessionId: sid });
        },
      });
      this.streams.instrument(transport, () => session);
      await server.connect(transport);
      // Protocol.connect installed its own onclose: ours runs first (the session leaves the map).
      const sdkOnClose = transport.onclose;
      transport.onclose = () => {
        if (session) this.forget(session, 'closed');
        sdkOnClose?.();
      };
      const auth = authInfoFor(who);
      const response = await transport.handleRequest(request, { parsedBody: body, ...(auth && { authInfo: auth }) });
      if (!session) {
        // initialize refused (bad params, a second initialize in the body): nothing to keep.
        this.hold(key, -1);
        if (store instanceof MemoryEventStore) store.clear();
        void server.close().catch((e: unknown) => this.ctx.report(e));
        return { response };
      }
      session.lastActive = Date.now();
      return { response, session };
    } catch (err) {
      this.ctx.report(err);
      if (session) void this.close(session, 'failed');
      else {
        this.hold(key, -1);
        if (store instanceof MemoryEventStore) store.clear();
        if (server) void server.close().catch(() => {});
      }
      return {
        response: errorResponse(
          500,
          initId ?? null,
          JsonRpcErrorCode.InternalError,
          // An SDK the front cannot serve says so (its version, what is missing), on every attempt.
          err instanceof SdkSeamError ? err.message : 'Internal error: the session could not be opened',
        ),
      };
    } finally {
      this.initializing--;
    }
  }

  /** The session's event store: the user's (`eventStore` option), or a default one bounded in events and bytes. */
  private eventStore(sessionId: string): EventStore | undefined {
    const make = this.ctx.options.eventStore;
    if (make === false) return undefined;
    if (make) return make({ sessionId });
    return new MemoryEventStore({
      maxEvents: SESSION_EVENTS,
      maxBytes: Math.min(SESSION_EVENT_BYTES, this.eventBytes.maxBytes),
      pool: this.eventBytes,
    });
  }

  /** A POST to an open session. */
  async post(
    session: Session,
    request: Request,
    body: unknown,
    messages: Message[],
    requests: Message[],
    who: Admitted,
  ): Promise<Served> {
    session.lastActive = Date.now();
    // Fault 1 (typescript-sdk #2433): an id already in flight would take over the first call's
    // stream (the SDK maps responses by id): refuse the newcomer on its own response.
    const seen = new Set<Id>();
    for (const r of requests) {
      const id = r.id as Id;
      if (session.inflight.has(id) || seen.has(id)) {
        this.ctx.stats.duplicateIds++;
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
    this.ctx.stats.inflight += seen.size;
    let response: Response;
    const auth = authInfoFor(who);
    try {
      response = await session.transport.handleRequest(request, { parsedBody: body, ...(auth && { authInfo: auth }) });
    } catch (err) {
      this.release(session, seen);
      throw err;
    }
    if (!response.ok) this.release(session, seen); // refused by the transport (e.g. a bad protocol version header)
    // Fault 2: a cancelled call's stream stays open (keep-alives) until the session ends. End it.
    for (const m of messages) {
      if (m.method !== 'notifications/cancelled') continue;
      const id = (m.params as { requestId?: unknown } | undefined)?.requestId;
      if (isRequestId(id)) this.streams.endCancelledStream(session, id);
    }
    return { response, session, calls: true };
  }

  private release(session: Session, ids: Iterable<Id>): void {
    for (const id of ids) if (session.inflight.delete(id)) this.ctx.stats.inflight--;
  }

  /** GET (the standalone stream, or a resume with `Last-Event-ID`) or DELETE of a session. */
  async getOrDelete(request: Request, who: Admitted): Promise<Served> {
    const sid = request.headers.get('mcp-session-id');
    if (sid === null)
      return { response: errorResponse(400, null, -32000, 'Bad Request: Mcp-Session-Id header is required') };
    const session = this.lookup(sid, who);
    if (!session) return { response: sessionNotFound() };
    session.lastActive = Date.now();
    if (request.method === 'GET') {
      if (!this.ctx.open) return { response: shuttingDownResponse(null) };
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
    const auth = authInfoFor(who);
    const response = await session.transport.handleRequest(request, auth && { authInfo: auth });
    if (request.method === 'DELETE' && response.ok) this.ctx.log(`session ${session.id} ended by the client (DELETE)`);
    return { response, session };
  }

  /** The session left (closed by DELETE, expiry, shutdown or its server): drop it from the map. */
  private forget(session: Session, why: string, kind: 'closed' | 'expired' = 'closed'): void {
    if (this.sessions.get(session.id) !== session) return;
    this.sessions.delete(session.id);
    this.hold(session.clientKey, -1);
    if (session.eventStore instanceof MemoryEventStore) session.eventStore.clear();
    this.ctx.stats.sessions = this.sessions.size;
    this.ctx.stats.inflight -= session.inflight.size;
    session.inflight.clear();
    session.closing = true;
    this.ctx.log(`session ${session.id} ${why}`);
    if (diagnostics.httpSession.hasSubscribers)
      diagnostics.httpSession.publish({ kind, sessionId: session.id, durationMs: Date.now() - session.openedAt });
    if (this.sessions.size === 0) this.stopSweep();
  }

  /** Close a session: its calls abort (`Disconnected`, unless aborted before), its server closes. */
  async close(session: Session, why: string, kind: 'closed' | 'expired' = 'closed'): Promise<void> {
    this.forget(session, why, kind);
    session.closing = true;
    await session.transport.close().catch((e: unknown) => this.ctx.report(e));
    await session.server.close().catch((e: unknown) => this.ctx.report(e));
  }

  // ---------------------------------------------------------------- idle expiry (fault 6)

  private startSweep(): void {
    if (this.sweepTimer !== undefined) return;
    const every = Math.min(1_000, Math.max(10, Math.floor(this.ctx.opts.sessionIdleMs / 4)));
    this.sweepTimer = setInterval(() => this.sweep(), every);
    this.sweepTimer.unref?.();
  }

  stopSweep(): void {
    if (this.sweepTimer === undefined) return;
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  /**
   * Close the idle sessions. Activity is a request, a message sent on one of the session's streams,
   * or a stream ending. A session is idle after `sessionIdleMs` without activity, unless one of its
   * calls still has its response stream open; such a stream that carries nothing but keep-alives
   * keeps it at most `maxQuietStreamMs`. The standalone GET stream never keeps a session.
   */
  private sweep(): void {
    const now = Date.now();
    const { sessionIdleMs: idle, maxQuietStreamMs: quietMax } = this.ctx.opts;
    for (const s of [...this.sessions.values()]) {
      const quiet = now - s.lastActive;
      if (quiet >= idle && (s.callStreams === 0 || quiet >= quietMax)) {
        this.ctx.stats.expiredSessions++;
        const why = s.callStreams === 0 ? `idle for ${idle} ms` : `a call stream quiet for ${quietMax} ms`;
        void this.close(s, `expired (${why})`, 'expired');
      }
    }
  }
}

export function sessionNotFound(): Response {
  return errorResponse(404, null, -32001, 'Session not found');
}

function busyData(reason: string, limit: number): Record<string, unknown> {
  return {
    code: ErrorCode.BUSY,
    reason,
    limit,
    retryAfterMs: SESSION_RETRY_MS,
    retryAfterSeconds: SESSION_RETRY_MS / 1_000,
  };
}
