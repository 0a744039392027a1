/**
 * The front: one endpoint for both eras. It checks a request (`guard.ts`), sorts its body, and
 * hands it to the 2025-era sessions (`sessions.ts`) or the 2026-07-28 exchanges (`exchanges.ts`);
 * `shutdown.ts` ends it. Everything here works on web `Request`/`Response`; the adapters
 * (`adapters.ts`: Node `(req, res)` and Fetch `(Request) => Response`) only read bodies and pump streams.
 */
import { JsonRpcErrorCode, isRequestId, jsonRpcProblem } from '@mcp-tether/core';
import { type ModernEntry, ModernExchanges } from './exchanges.js';
import { BodyBudget } from './body.js';
import { FairTurns } from './fair.js';
import { type Admitted, Guard, type Remote } from './guard.js';
import { type Release, RequestSlots, tooManyRequests } from './inflight.js';
import {
  clientGone,
  errorResponse,
  type Id,
  isRequest,
  type Message,
  nestsDeeper,
  shuttingDownResponse,
  topLevelId,
} from './jsonrpc.js';
import { type McpHttpOptions, type Resolved, resolveOptions } from './options.js';
import type { ModernNotice } from './sdk.js';
import { checkSeams, type SdkLine } from './seams.js';
import { closeNow, drain } from './shutdown.js';
import { LegacySessions, sessionNotFound } from './sessions.js';
import type { FrontContext, McpHttpStats, ModernExchange, Served, Session, ShutdownResult } from './state.js';

export type { McpHttpStats, ModernExchange, Served, Session, ShutdownResult } from './state.js';

export class Front implements FrontContext {
  readonly opts: Resolved;
  readonly stats: McpHttpStats;
  private readonly counters = {
    sessions: 0,
    inflight: 0,
    streams: 0,
    expiredSessions: 0,
    duplicateIds: 0,
    cancelledStreams: 0,
    refusedSessions: 0,
    refusedBodies: 0,
    refusedRequests: 0,
    invalidRequests: 0,
    coalescedProgress: 0,
    droppedLogs: 0,
    droppedNotifications: 0,
    backedUpStreams: 0,
  };
  /** Node responses not yet closed (the listener waits for them at shutdown). */
  responses = 0;
  readonly guard: Guard;
  /** Bytes of request bodies being read (the adapters reserve them). */
  readonly bodies: BodyBudget;
  /** Requests in flight per client key (the adapters take a slot after the guard). */
  readonly slots: RequestSlots;
  /** Fair turns per client key (`fairShare`); undefined when off. */
  readonly fair: FairTurns | undefined;
  readonly legacy: LegacySessions;
  readonly modern: ModernExchanges;
  private state: 'open' | 'draining' | 'closed' = 'open';
  private shutdownPromise: Promise<ShutdownResult> | undefined;

  constructor(readonly options: McpHttpOptions) {
    this.opts = resolveOptions(options);
    this.guard = new Guard(options, this.opts);
    this.bodies = new BodyBudget(this.opts.maxBodyBytesInFlight, this.opts.maxClientBodyBytesInFlight);
    this.slots = new RequestSlots(this.opts.maxClientRequestsInFlight);
    this.fair = this.opts.fairShare === Number.POSITIVE_INFINITY ? undefined : new FairTurns(this.opts.fairShare);
    // The gauges read their owners; the counters are plain fields the parts add to.
    const bodies = this.bodies;
    const slots = this.slots;
    const fair = this.fair;
    let legacy: LegacySessions | undefined;
    this.stats = Object.defineProperties(this.counters as McpHttpStats, {
      bodyBytesInFlight: { get: () => bodies.total, enumerable: true },
      requestsInFlight: { get: () => slots.total, enumerable: true },
      queuedRequests: { get: () => fair?.waiting ?? 0, enumerable: true },
      deferredRequests: { get: () => fair?.deferred ?? 0, enumerable: true },
      queuedRefusals: { get: () => fair?.waitingRefusals ?? 0, enumerable: true },
      deferredRefusals: { get: () => fair?.deferredRefusals ?? 0, enumerable: true },
      eventStoreBytes: { get: () => legacy?.eventBytes.bytes ?? 0, enumerable: true },
    });
    this.legacy = new LegacySessions(this);
    legacy = this.legacy;
    this.modern = new ModernExchanges(this);
  }

  get open(): boolean {
    return this.state === 'open';
  }

  /** 2025-era sessions by id. */
  get sessions(): ReadonlyMap<string, Session> {
    return this.legacy.sessions;
  }

  report(err: unknown): void {
    try {
      this.options.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      /* a failing reporter must not break a request */
    }
  }

  log(line: string): void {
    try {
      this.options.log?.(line);
    } catch {
      /* ignore */
    }
  }

  /**
   * The guard, before any body is read: Host/Origin, `authenticate`, the client key. Returns who the
   * client is, or the answer (400, 403, 401).
   */
  admit(request: Request, remote: Remote): Promise<Admitted | Response> {
    return this.guard.admit(request, remote, new URL(request.url).host);
  }

  /**
   * A slot for one admitted request among its client's requests in flight
   * (`maxClientRequestsInFlight`): its release (call it once the response ended), or the 429 to
   * answer, before the body is read.
   */
  takeSlot(who: Admitted): Release | Response {
    const release = this.slots.take(who.clientKey);
    if (release) return release;
    this.stats.refusedRequests++;
    return tooManyRequests(this.opts.maxClientRequestsInFlight);
  }

  /**
   * When to write a refusal {@link takeSlot} returned. With fair turns on, the 429 of a client at
   * its bound takes that client's turns as its requests do (same FIFO, one of its share a turn), so
   * a client that sends its next request only once answered cannot have dozens refused per turn
   * (DESIGN.md, "Refusals take fair turns too"). `true`: write it now (fair turns off, the client's
   * share of this turn not used yet, or `maxClientRequestsInFlight` of its refusals already
   * waiting); else a promise of true on its turn, or false when `signal` aborted first (the client
   * left: write nothing). A waiting refusal holds no slot.
   */
  refusalTurn(who: Admitted, signal: AbortSignal): true | Promise<boolean> {
    const fair = this.fair;
    if (fair === undefined || fair.pass(who.clientKey)) return true;
    return fair.waitRefusal(who.clientKey!, signal, this.opts.maxClientRequestsInFlight) ?? true;
  }

  /**
   * Serve one admitted request. `bodyText` is the POST body as read (the adapter enforced the
   * bounds); `request.signal` aborts when the client's connection closes. Past its client's share of
   * this event-loop turn (`fairShare`) it first waits for its client's turn (`fair.ts`); a client
   * that leaves meanwhile gets nothing started.
   */
  async serve(request: Request, bodyText: string | undefined, who: Admitted): Promise<Served> {
    const fair = this.fair;
    if (fair !== undefined && !fair.pass(who.clientKey) && !(await fair.wait(who.clientKey!, request.signal))) {
      return { response: clientGone() };
    }
    switch (request.method) {
      case 'POST':
        return this.post(request, bodyText ?? '', who);
      case 'GET':
      case 'DELETE':
        if (!this.options.legacy) return { response: modernOnly() };
        // The GET stream carries no call: it holds no request slot once open.
        return { ...(await this.legacy.getOrDelete(request, who)), standing: request.method === 'GET' };
      default:
        return {
          response: errorResponse(405, null, -32000, 'Method not allowed', undefined, { allow: 'GET, POST, DELETE' }),
        };
    }
  }

  private async post(request: Request, text: string, who: Admitted): Promise<Served> {
    const type = request.headers.get('content-type') ?? '';
    if (!/^application\/json\b/i.test(type.trim())) {
      this.stats.invalidRequests++;
      return {
        response: errorResponse(415, null, -32000, 'Unsupported Media Type: Content-Type must be application/json'),
      };
    }
    const parsed = parseBody(text, this.opts.maxJsonDepth);
    if (parsed instanceof Response) {
      this.stats.invalidRequests++; // not JSON, not JSON-RPC 2.0, nested too deep
      return { response: parsed };
    }
    const { body, messages } = parsed;
    const requests = messages.filter(isRequest);
    if (this.state !== 'open' && requests.length > 0) {
      return { response: shuttingDownResponse(requests[0]!.id as Id) };
    }
    const sid = request.headers.get('mcp-session-id');
    if (this.options.modern && !(sid !== null && this.options.legacy && plainLegacy(request, body))) {
      // The SDK's own classifier (body first): a 2026-07-28 request ignores any Mcp-Session-Id.
      const modern: ModernEntry = await this.modern.load();
      if (!(await modern.isLegacyRequest(request, body))) {
        const served = await this.modern.post(modern.handler, request, text, body, requests, who);
        // `subscriptions/listen` stays open for notifications: it holds no request slot once open.
        if (requests.some((r) => r.method === 'subscriptions/listen')) served.standing = true;
        return served;
      }
    }
    if (!this.options.legacy) {
      // Modern-only endpoint: the SDK's modern handler refuses 2025-era traffic itself.
      const modern = await this.modern.load();
      return this.modern.post(modern.handler, request, text, body, requests, who);
    }
    if (sid !== null) {
      const session = this.legacy.lookup(sid, who);
      if (!session) return { response: sessionNotFound() };
      return this.legacy.post(session, request, body, messages, requests, who);
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
    return this.legacy.open(request, body, who);
  }

  // ---------------------------------------------------------------- what the adapters call

  /** A response stream opened / closed (the adapters call these). */
  streamOpened({ session, calls }: Served): void {
    this.stats.streams++;
    if (!session) return;
    session.streams++;
    if (calls) session.callStreams++;
  }

  streamClosed({ session, calls }: Served): void {
    this.stats.streams--;
    if (!session) return;
    session.streams--;
    if (calls) session.callStreams--;
    session.lastActive = Date.now();
  }

  /** The exchange's call was answered, or its response ended (idempotent). */
  endExchange(exchange: ModernExchange): void {
    this.modern.end(exchange);
  }

  /** The client read from a 2026-07-28 stream: move held events on. */
  flushModern(): void {
    this.modern.flush();
  }

  /** See `ModernExchanges.notify`. */
  notifyModern(notice: ModernNotice, ...args: string[]): void {
    this.modern.notify(notice, ...args);
  }

  /**
   * Check the private SDK fields the front relies on against core's seam table, for every SDK line
   * installed that the options can use (`listen()` runs it; `handle`/`fetch` check each line on
   * its first session or request).
   * @throws SdkSeamError naming the installed SDK version and the missing fields
   */
  checkSeams(): Promise<void> {
    const lines: SdkLine[] = this.options.legacy ? ['v1', 'v2'] : ['v2'];
    return checkSeams(lines);
  }

  // ---------------------------------------------------------------- shutdown (fault 10)

  /**
   * Graceful shutdown: new sessions and calls are refused at once (HTTP 503, JSON-RPC error with
   * `data.code` `SHUTTING_DOWN`); running calls get `graceMs` to finish; those still running then
   * are answered with a `SHUTTING_DOWN` JSON-RPC error and aborted (`signal.reason.kind` is
   * `shutdown` on tethered servers); then every session closes. Calling it again returns the same promise.
   */
  shutdown(graceMs = this.opts.shutdownGraceMs): Promise<ShutdownResult> {
    this.shutdownPromise ??= (async () => {
      this.state = 'draining';
      const result = await drain(this.legacy, this.modern, graceMs);
      this.state = 'closed';
      return result;
    })();
    return this.shutdownPromise;
  }

  /** Close at once: calls abort with `Disconnected`, sessions close. */
  async close(): Promise<void> {
    this.state = 'closed';
    await closeNow(this.legacy, this.modern);
  }
}

/** The POST body as JSON-RPC messages, or the 400 to answer. */
function parseBody(text: string, maxDepth: number): { body: unknown; messages: Message[] } | Response {
  if (nestsDeeper(text, maxDepth)) {
    // Refused before anything parses or walks it: a recursive walk would overflow the stack (-32603),
    // and V8's JSON.parse takes seconds on a few MiB of nesting, holding every other client up.
    return errorResponse(
      400,
      topLevelId(text),
      JsonRpcErrorCode.InvalidRequest,
      `Invalid Request: the message nests deeper than ${maxDepth} levels`,
      { maxJsonDepth: maxDepth },
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return errorResponse(400, null, JsonRpcErrorCode.ParseError, 'Parse error: the body is not JSON');
  }
  const messages = (Array.isArray(body) ? body : [body]) as Message[];
  if (messages.length === 0)
    return errorResponse(400, null, JsonRpcErrorCode.InvalidRequest, 'Invalid Request: empty batch');
  for (const m of messages) {
    const problem = jsonRpcProblem(m);
    if (problem !== undefined) {
      const id =
        typeof m === 'object' && m !== null && isRequestId((m as Message).id) ? ((m as Message).id as Id) : null;
      return errorResponse(400, id, JsonRpcErrorCode.InvalidRequest, `Invalid Request: ${problem}`);
    }
  }
  return { body, messages };
}

/** The reserved `_meta` key of a 2026-07-28 request's envelope (the SDK's `PROTOCOL_VERSION_META_KEY`). */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The first 2026-era revision: the SDK names a revision modern when it sorts at or after it. */
const FIRST_MODERN_REVISION = '2026-07-28';

/**
 * A 2025-era session message, known without the SDK's classifier (its zod guards cost ~26 000
 * instructions a request on Node 20): one message (not a batch; the front checked its JSON-RPC
 * shape), no envelope claim in its params, and an `MCP-Protocol-Version` header that is absent or
 * names a revision before 2026-07-28. The SDK classifies every such message as legacy (requests,
 * notifications, responses alike); anything else still goes through it.
 */
function plainLegacy(request: Request, body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const version = request.headers.get('mcp-protocol-version');
  if (version !== null && !(version.trim() < FIRST_MODERN_REVISION)) return false;
  const params = (body as Message).params as Record<string, unknown> | undefined;
  if (params === undefined) return true;
  if (typeof params !== 'object' || params === null) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) && !(PROTOCOL_VERSION_META_KEY in meta);
}

function modernOnly(): Response {
  return errorResponse(
    405,
    null,
    -32000,
    'Method not allowed: this endpoint serves 2026-07-28 requests only (POST)',
    undefined,
    { allow: 'POST' },
  );
}
