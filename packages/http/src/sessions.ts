/**
 * 2025-era sessions: one server and one SDK transport per session, opened by `initialize`, found
 * by `Mcp-Session-Id` (and by the principal that opened it), closed by DELETE, idle expiry,
 * shutdown or its server. A duplicate in-flight request id is refused (fault 1).
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, JsonRpcErrorCode, isRequestId } from '@mcp-tether/core';
import { MemoryEventStore } from './eventStore.js';
import { errorResponse, type Id, type Message, shuttingDownResponse } from './jsonrpc.js';
import type { EventStore, FactoryInfo, Principal, SessionServer } from './options.js';
import { authInfo, type TransportCtor, type WebTransport } from './sdk.js';
import { SessionStreams } from './sessionStreams.js';
import { type FrontContext, type Served, Session } from './state.js';

const SESSION_ID = /^[\x21-\x7e]{1,256}$/;

export class LegacySessions {
  readonly sessions = new Map<string, Session>();
  private readonly streams: SessionStreams;
  private initializing = 0;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly ctx: FrontContext) {
    this.streams = new SessionStreams(ctx);
  }

  /** The session `sid` names, if it is open and belongs to `principal`. */
  lookup(sid: string, principal: Principal | undefined): Session | undefined {
    if (!SESSION_ID.test(sid)) return undefined;
    const s = this.sessions.get(sid);
    if (!s || s.closing || s.principal !== principal?.clientId) return undefined;
    return s;
  }

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

  /** `initialize` without a session id: a new server and transport, if the cap allows. */
  async open(request: Request, body: unknown, principal: Principal | undefined): Promise<Served> {
    const { opts } = this.ctx;
    const initId = ((Array.isArray(body) ? body : [body]) as Message[]).find((m) => m.method === 'initialize')?.id as
      | Id
      | undefined;
    if (this.sessions.size + this.initializing >= opts.maxSessions) {
      return {
        response: errorResponse(
          503,
          initId ?? null,
          JsonRpcErrorCode.InternalError,
          `Server busy: the session limit (${opts.maxSessions}) is reached. Try again later.`,
          { code: ErrorCode.BUSY, maxSessions: opts.maxSessions },
          { 'retry-after': '1' },
        ),
      };
    }
    this.initializing++;
    let server: SessionServer | undefined;
    let session: Session | undefined;
    try {
      const info: FactoryInfo = { principal, headers: request.headers };
      server = await this.ctx.options.legacy!(info);
      const Transport = await this.transportClass(server);
      const makeStore = this.ctx.options.eventStore;
      const store: EventStore | undefined =
        makeStore === false ? undefined : makeStore ? makeStore() : new MemoryEventStore(1_000);
      const transport: WebTransport = new Transport({
        sessionIdGenerator: () => randomUUID(),
        ...(store && { eventStore: store }),
        retryInterval: opts.retryIntervalMs,
        keepAliveMs: opts.keepAliveMs,
        onsessioninitialized: (id: string) => {
          session = new Session(id, transport, server!, principal?.clientId, store);
          this.sessions.set(id, session);
          this.ctx.stats.sessions = this.sessions.size;
          this.startSweep();
          this.ctx.log(`session ${id} opened`);
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
      const response = await transport.handleRequest(request, {
        parsedBody: body,
        ...(principal && { authInfo: authInfo(principal) }),
      });
      if (!session) {
        // initialize refused (bad params, a second initialize in the body): nothing to keep.
        void server.close().catch((e: unknown) => this.ctx.report(e));
        return { response };
      }
      session.lastActive = Date.now();
      return { response, session };
    } catch (err) {
      this.ctx.report(err);
      if (session) void this.close(session, 'failed');
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

  /** A POST to an open session. */
  async post(
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
      if (isRequestId(id)) this.streams.endCancelledStream(session, id);
    }
    return { response, session };
  }

  private release(session: Session, ids: Iterable<Id>): void {
    for (const id of ids) if (session.inflight.delete(id)) this.ctx.stats.inflight--;
  }

  /** GET (the standalone stream, or a resume with `Last-Event-ID`) or DELETE of a session. */
  async getOrDelete(request: Request, principal: Principal | undefined): Promise<Served> {
    const sid = request.headers.get('mcp-session-id');
    if (sid === null)
      return { response: errorResponse(400, null, -32000, 'Bad Request: Mcp-Session-Id header is required') };
    const session = this.lookup(sid, principal);
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
    const response = await session.transport.handleRequest(
      request,
      principal ? { authInfo: authInfo(principal) } : undefined,
    );
    if (request.method === 'DELETE' && response.ok) this.ctx.log(`session ${session.id} ended by the client (DELETE)`);
    return { response, session };
  }

  /** The session left (closed by DELETE, expiry, shutdown or its server): drop it from the map. */
  private forget(session: Session, why: string): void {
    if (this.sessions.get(session.id) !== session) return;
    this.sessions.delete(session.id);
    this.ctx.stats.sessions = this.sessions.size;
    this.ctx.stats.inflight -= session.inflight.size;
    session.inflight.clear();
    session.closing = true;
    this.ctx.log(`session ${session.id} ${why}`);
    if (this.sessions.size === 0) this.stopSweep();
  }

  /** Close a session: its calls abort (`Disconnected`, unless aborted before), its server closes. */
  async close(session: Session, why: string): Promise<void> {
    this.forget(session, why);
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

  private sweep(): void {
    const now = Date.now();
    const idle = this.ctx.opts.sessionIdleMs;
    for (const s of [...this.sessions.values()]) {
      if (s.streams === 0 && now - s.lastActive >= idle) {
        this.ctx.stats.expiredSessions++;
        void this.close(s, `expired (idle for ${idle} ms)`);
      }
    }
  }
}

export function sessionNotFound(): Response {
  return errorResponse(404, null, -32001, 'Session not found');
}
