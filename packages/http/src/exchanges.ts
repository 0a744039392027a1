/**
 * 2026-07-28 requests: served by the SDK 2.x `createMcpHandler` (a server from the `modern`
 * factory per request), each tracked as a {@link ModernExchange} while it runs so that shutdown
 * can answer and stop it, with its response stream bounded where the SDK writes it.
 */
import { assertSeams } from '@mcp-tether/core';
import { type Id, isResponse, type Message } from './jsonrpc.js';
import type { Admitted } from './guard.js';
import type { SessionServer } from './options.js';
import {
  type AuthInfo,
  authInfoFor,
  factoryIdentity,
  MAX_QUEUED_EVENTS,
  type ModernHandler,
  type ModernNotice,
} from './sdk.js';
import { Shaper } from './shaper.js';
import { isAnsweredRejection, type SdkRejectionClasses } from './rejections.js';
import { shareSchemaJson } from './schemaJson.js';
import type { FrontContext, ModernExchange, Served } from './state.js';

/** The SDK's modern handler and its request classifier, loaded on first use. */
export interface ModernEntry {
  handler: ModernHandler;
  isLegacyRequest: (r: Request, body: unknown) => Promise<boolean>;
}

export class ModernExchanges {
  /** Exchanges whose call is not answered yet. */
  readonly exchanges = new Set<ModernExchange>();
  /** Servers of 2026-07-28 requests not yet closed (shutdown aborts their calls). */
  readonly servers = new Set<SessionServer>();
  /** Shapers of 2026-07-28 streams that hold events. */
  private readonly holding = new Set<Shaper<Record<string, unknown>>>();
  /** The exchange of each inner request handed to the SDK's modern handler (its factory gets the request back). */
  private readonly byRequest = new WeakMap<Request, ModernExchange>();
  private entry: Promise<ModernEntry> | undefined;

  constructor(private readonly ctx: FrontContext) {}

  /** The SDK's `createMcpHandler` over the `modern` factory (made once). */
  load(): Promise<ModernEntry> {
    this.entry ??= (async () => {
      const m = (await import('@modelcontextprotocol/server')) as unknown as SdkRejectionClasses & {
        createMcpHandler(
          factory: (ctx: { authInfo?: AuthInfo; requestInfo?: Request }) => Promise<SessionServer>,
          options: Record<string, unknown>,
        ): ModernHandler;
        isLegacyRequest(r: Request, body: unknown): Promise<boolean>;
      };
      const factory = this.ctx.options.modern;
      const handler = m.createMcpHandler(
        async (c) => {
          if (!factory) throw new Error('no modern factory');
          const server = await factory({
            ...factoryIdentity(c.authInfo),
            sessionId: undefined,
            headers: c.requestInfo?.headers ?? new Headers(),
          });
          this.track(server, c.requestInfo ? this.byRequest.get(c.requestInfo) : undefined);
          return server;
        },
        {
          legacy: 'reject',
          keepAliveMs: this.ctx.opts.keepAliveMs,
          maxRequestBodySize: this.ctx.opts.maxBodyBytes,
          // A client mistake the SDK already answered (a header disagreeing with the body, …) is
          // counted, not reported: onError is for faults (`rejections.ts`).
          onerror: (e: Error) => {
            if (isAnsweredRejection(e, m)) this.ctx.stats.invalidRequests++;
            else this.ctx.report(e);
          },
        },
      );
      return { handler, isLegacyRequest: (r: Request, body: unknown) => m.isLegacyRequest(r, body) };
    })();
    return this.entry;
  }

  /**
   * Publish a list-changed or resource-updated notification to the 2026-07-28 `subscriptions/listen`
   * streams that opted in (SDK 2.x `createMcpHandler().notify`). Before the first 2026 request no
   * handler exists, so no stream does either: nothing to send.
   */
  notify(notice: ModernNotice, ...args: string[]): void {
    void this.entry?.then((m) => m.handler.notify?.[notice]?.(...args)).catch((e: unknown) => this.ctx.report(e));
  }

  /** The client read from a 2026-07-28 stream: move held events on. */
  flush(): void {
    if (this.holding.size === 0) return;
    for (const sh of [...this.holding]) {
      sh.flush();
      if (sh.drained) this.holding.delete(sh);
    }
  }

  /**
   * Bound a 2026-07-28 exchange's stream where the SDK writes it (`PerRequestHTTPServerTransport`:
   * `writeMessageFrame`, `finalizeStream`), as `SessionStreams.instrument` does for sessions.
   */
  private instrument(transport: unknown, exchange: ModernExchange | undefined): void {
    const t = transport as {
      writeMessageFrame?: (m: unknown) => void;
      finalizeStream?: () => void;
      close?: () => Promise<void>;
      _sse?: { controller?: ReadableStreamDefaultController<Uint8Array> };
    };
    // Core's SDK_SEAMS `perRequestTransportV2`: a renamed field fails this request loudly (SdkSeamError,
    // naming the SDK version) instead of leaving the stream unbounded.
    assertSeams('perRequestTransportV2', t);
    const write = (t.writeMessageFrame as (m: unknown) => void).bind(t);
    const finalize = (t.finalizeStream as () => void).bind(t);
    const close = (t.close as () => Promise<void>).bind(t);
    const queued = () => {
      const c = t._sse?.controller;
      return c ? 1 - (c.desiredSize ?? 1) : 0;
    };
    const sh = new Shaper<Record<string, unknown>>(
      { write: (m) => write(m), writeNotice: (m) => write(m), backedUp: () => queued() >= MAX_QUEUED_EVENTS },
      { maxHeldMessages: this.ctx.opts.maxHeldMessages },
      this.ctx.stats,
      (m) => m,
    );
    t.writeMessageFrame = (m) => {
      const message = m as Record<string, unknown>;
      // The call is answered once its response is handed over, read or not (as on sessions).
      if (exchange && isResponse(message)) this.end(exchange);
      if (sh.drained && queued() < MAX_QUEUED_EVENTS) return write(m);
      sh.push(message);
      if (!sh.drained) this.holding.add(sh);
    };
    // The SDK closes the stream right after the response: what is still held goes first.
    t.finalizeStream = () => sh.whenDrained(finalize);
    t.close = () => {
      this.holding.delete(sh);
      sh.discard();
      return close();
    };
  }

  private track(server: SessionServer, exchange: ModernExchange | undefined): void {
    this.servers.add(server);
    shareSchemaJson(server);
    const connect = server.connect.bind(server);
    server.connect = (transport: unknown) => {
      this.instrument(transport, exchange);
      return connect(transport);
    };

    const inner = (server as { server?: { onclose?: () => void } }).server;
    if (!inner) return;
    const prev = inner.onclose;
    inner.onclose = () => {
      this.servers.delete(server);
      prev?.();
    };
  }

  /** Serve one 2026-07-28 POST (its body already parsed and checked). */
  async post(
    handler: ModernHandler,
    request: Request,
    text: string,
    body: unknown,
    requests: Message[],
    who: Admitted,
  ): Promise<Served> {
    const abort = new AbortController();
    const onClientGone = () => abort.abort();
    if (request.signal.aborted) abort.abort();
    else request.signal.addEventListener('abort', onClientGone, { once: true });
    const exchange = newExchange(
      requests.map((r) => r.id as Id),
      abort,
    );
    if (requests.length > 0) {
      this.exchanges.add(exchange);
      this.ctx.stats.inflight += requests.length;
    }
    const inner = new Request(request.url, {
      method: 'POST',
      headers: request.headers,
      body: text,
      signal: abort.signal,
    });
    this.byRequest.set(inner, exchange);
    const auth = authInfoFor(who);
    const pending = handler.fetch(inner, { parsedBody: body, ...(auth && { authInfo: auth }) });
    const response = await Promise.race([pending, exchange.failed.then(() => undefined)]);
    if (response === undefined) {
      // Shutdown stopped the call before any response existed.
      void pending.then((r) => r.body?.cancel()).catch(() => {});
      this.end(exchange);
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
      this.end(exchange);
      request.signal.removeEventListener('abort', onClientGone);
      return { response };
    }
    return { response, exchange };
  }

  /** The exchange's call was answered, or its response ended (idempotent). */
  end(exchange: ModernExchange): void {
    if (this.exchanges.delete(exchange)) this.ctx.stats.inflight -= exchange.ids.length;
  }

  /** Close the SDK's handler (at close). */
  async closeHandler(): Promise<void> {
    const m = this.entry;
    if (m) await (await m).handler.close().catch(() => {});
  }
}

function newExchange(ids: Id[], abort: AbortController): ModernExchange {
  let fail!: () => void;
  const exchange: ModernExchange = {
    ids,
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
  return exchange;
}
