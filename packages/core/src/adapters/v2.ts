/**
 * Adapter for `@modelcontextprotocol/server` 2.x (`McpServer` from `@modelcontextprotocol/server`),
 * serving both protocol eras: 2025-era sessions (`initialize`, in-memory, stdio, stateful HTTP) and
 * 2026-07-28 requests (stateless, one server instance per request through `createMcpHandler`).
 *
 * Seams used (v2 has no public middleware hook either; see the SDK notes §2.3):
 * - `server.setRequestHandler` is patched on the instance, so the chain of `tools/call`,
 *   `prompts/get` and `resources/read` sits INSIDE the SDK's `_wrapHandler`: the request is already
 *   validated when a middleware sees it, and what the chain returns still goes through the SDK's
 *   multi-round-trip seam (the at-least-one rule and the per-request capability check, `-32021`,
 *   on 2026-07-28) and its `tools/call` result validation. Handlers McpServer installed before
 *   attaching are re-installed through McpServer's own installers (`setToolRequestHandlers` & co.,
 *   guarded by `_toolHandlersInitialized` & co.);
 * - each registered tool's `executor` (what McpServer calls) is replaced by a wrapper (again after its `update()`), so callbacks
 *   registered before or after attaching, and `RegisteredTool.update({ callback })`, get the call
 *   context and generator driving (`_registeredTools`, `_createRegisteredTool`);
 * - the `notifications/cancelled` handler (public `setNotificationHandler`), to keep the client's
 *   reason and refuse cancelling `initialize`; the `initialize` entry of `server._requestHandlers`;
 * - `server._requestHandlerAbortControllers`, so an abort of the call suppresses the response;
 * - `server._requestMessageId` starts at 1 (an SDK 1.x *client* cannot cancel id 0, #2654);
 * - `server._onclose` for close hooks.
 * The era of a call is the SDK's own instance era: `server.getNegotiatedProtocolVersion()` is a
 * 2026-07-28-or-later revision on instances `createMcpHandler`/`serveStdio` bound to the modern
 * era, and the `initialize`-negotiated 2025 version otherwise.
 * No SDK value is imported: everything goes through the instance. The shapes of the SDK objects and
 * their accessors are `v2-sdk.ts`; the handler-map takeover and the host's non-call handlers are
 * `v2-handlers.ts`; what v1 does alike is `attach.ts`. SDK types never leave the adapter.
 */
import { type Call, callOf, NO_ANNOTATIONS, type CallPort, type CallSpec } from '../call.js';
import { Chain } from '../engine.js';
import type { Connection } from './connection.js';
import { NonCallHandlers, type RunCall, takeOverRequestHandlers } from './v2-handlers.js';
import { ErrorCode, JsonRpcErrorCode, ProtocolError, refuse } from '../errors.js';
import { settleHandlerOutput } from '../generator.js';
import { identityOf } from '../clientKey.js';
import type {
  CallMethod,
  CallResult,
  Era,
  JsonObject,
  Middleware,
  RequestId,
  RequestInfo,
  ServerHost,
} from '../types.js';
import {
  assertNotAttached,
  type AttachOptions,
  errorReporter,
  hookConnection,
  installToolWrapper,
  instrumentTools,
  isInputRequired,
  isObject,
  liveChannelOf,
  markAttached,
  openConnection,
  sharedHost,
  toolAnnotations,
  unservedInput,
} from './attach.js';
import {
  type AnyFn,
  assertV2Internals,
  clientCapabilitiesOf,
  envelopeOf,
  eraOf,
  isTaskHandle,
  mayReturnTask,
  negotiatedVersion,
  PASSTHROUGH,
  perRequestTransport,
  PROTOCOL_VERSION_KEY,
  type RawRequest,
  type RegisteredToolLike,
  SPEC_CLIENT_METHODS,
  type StoredHandler,
  type V2Ctx,
  type V2McpServerLike,
  type V2Server,
} from './v2-sdk.js';

/**
 * Attach middlewares to a v2 `McpServer`. Use `tether()` instead; this is its v2 branch.
 * The parts, in order: the host's non-call handlers ({@link NonCallHandlers}), the {@link ServerHost}
 * ({@link v2Host}), the per-call path ({@link callRunner} through {@link callPort}), the takeover of
 * `setRequestHandler` ({@link takeOverRequestHandlers}), the tool executors ({@link instrumentTool}), the
 * `initialize`/cancel/close wiring ({@link wireConnection}), then each middleware's `setup`.
 */
export function attachV2<S extends V2McpServerLike>(mcp: S, middlewares: Middleware[], options: AttachOptions = {}): S {
  const server = mcp.server as V2Server;
  assertNotAttached(server);
  assertV2Internals(mcp, server);
  const chain = new Chain(middlewares, options.asyncContext); // checks the middlewares' fields: a refusal leaves the server unattached
  markAttached(server);
  const reportError = errorReporter(options.onError, server);
  const conn = openConnection(mcp, server, reportError);

  // 2026-07-28: servers never send requests.
  const liveChannel = (era: Era): boolean => era !== 'modern' && liveChannelOf(options.channel, server.transport);

  const originalSetRequestHandler = server.setRequestHandler.bind(server) as AnyFn;
  const handlers = new NonCallHandlers(server, originalSetRequestHandler, requestInfoOf(server, liveChannel));
  const host = v2Host(mcp, server, conn, handlers);
  /** Task handles the chain returned for `tools/call`, by request id (see {@link passVerbatim}). */
  const verbatim = new Map<RequestId, CallResult>();
  const port = callPort(server, conn, reportError);
  const runCall = callRunner(mcp, server, chain, conn, port, host, reportError, liveChannel, verbatim);

  takeOverRequestHandlers(mcp, server, originalSetRequestHandler, runCall, verbatim, handlers);
  // ---- tool callbacks: context as the handler's ctx, generator driving ----
  instrumentTools(mcp, instrumentTool); // `_createRegisteredTool` checked by assertV2Internals
  wireConnection(server, conn);

  for (const m of middlewares) m.setup?.(host);
  return mcp;
}

/**
 * The per-call path of one attached server: build the call from the SDK's request and context, run
 * it through the chain around the SDK's handler, and decide what an `input_required` outcome becomes.
 */
function callRunner(
  mcp: object,
  server: V2Server,
  chain: Chain,
  conn: Connection,
  port: CallPort,
  host: ServerHost,
  reportError: (err: unknown) => void,
  liveChannel: (era: Era) => boolean,
  verbatim: Map<RequestId, CallResult>,
): RunCall {
  return (method: CallMethod, inner: StoredHandler, request: RawRequest, ctx: V2Ctx): Promise<unknown> => {
    const p = request.params;
    if (typeof p !== 'object' || p === null) return inner(request, ctx);
    const name = method === 'resources/read' ? p.uri : p.name;
    if (typeof name !== 'string') return inner(request, ctx);
    const era = eraOf(server);
    const req = ctx.mcpReq;
    const envelope = envelopeOf(req);
    const args = method === 'resources/read' ? { uri: name } : isObject(p.arguments) ? p.arguments : {};
    const protocolVersion =
      era === 'modern'
        ? typeof envelope[PROTOCOL_VERSION_KEY] === 'string'
          ? (envelope[PROTOCOL_VERSION_KEY] as string)
          : negotiatedVersion(server)
        : (negotiatedVersion(server) ?? ctx.http?.req?.headers?.get('mcp-protocol-version') ?? undefined);
    const rawState = era === 'modern' ? req.requestState() : undefined;
    const who = identityOf(ctx.http?.authInfo);
    const spec: CallSpec = {
      method,
      name,
      args,
      annotations: method === 'tools/call' ? toolAnnotations(mcp, name) : NO_ANNOTATIONS,
      requestId: req.id,
      sessionId: ctx.sessionId,
      principal: who.principal,
      clientKey: who.clientKey,
      era,
      protocolVersion,
      // The wire's `_meta` as the client sent it: the SDK lifts the reserved envelope keys out; put them back.
      meta: { ...(isObject(req._meta) ? req._meta : {}), ...envelope },
      task: era === 'legacy' && isObject(p.task) ? p.task : undefined,
      clientCapabilities: clientCapabilitiesOf(server, era, envelope),
      channel: liveChannel(era),
      inputResponses:
        era === 'modern' && isObject(req.inputResponses)
          ? (req.inputResponses as Record<string, JsonObject>)
          : undefined,
      requestState: rawState,
      raw: ctx,
      host,
    };
    const call = chain.newCall(spec, port, reportError);
    const taskable = method === 'tools/call' && mayReturnTask(p, ctx);
    return conn.run(
      call,
      req.signal,
      chain,
      () => inner(request, ctx) as Promise<CallResult>,
      (result) => {
        // A task handle goes on the wire exactly as returned (see passVerbatim).
        if (taskable && isTaskHandle(result)) verbatim.set(call.requestId, result);
        if (!isInputRequired(result)) return result;
        if (era === 'legacy') {
          // Decision: on 2025-era connections the SDK's legacy shim is never used. @mcp-tether/mrtr
          // serves input through ctx.request (as on v1); what reaches this point was not served.
          return unservedInput(call);
        }
        if (result.requestState !== undefined && typeof result.requestState !== 'string') {
          return refuse(
            call,
            ErrorCode.INPUT_REQUIRED_UNHANDLED,
            'This call needs user input, but its requestState was not sealed into a string (install @mcp-tether/mrtr).',
          );
        }
        // 2026-07-28: hand it to the SDK as its InputRequiredResult (the SDK checks the
        // at-least-one rule and the request's declared capabilities, -32021).
        return result;
      },
    );
  };
}

/** What the engine does through the SDK, for every call (the SDK's per-request context is `call.raw`). */
function callPort(server: V2Server, conn: Connection, reportError: (err: unknown) => void): CallPort {
  return {
    send: (call, n) => (call.raw as V2Ctx).mcpReq.notify(n),
    request: async (call, m, reqParams, opts) => {
      if (!call.channel) {
        throw new ProtocolError(
          JsonRpcErrorCode.InternalError,
          call.era === 'modern'
            ? `cannot send ${m}: protocol 2026-07-28 has no server-to-client requests (return input_required instead)`
            : `cannot send ${m}: no live channel to the client (stateless HTTP)`,
        );
      }
      const requestOptions: Record<string, unknown> = { signal: opts.signal };
      if (opts.timeout !== undefined) requestOptions.timeout = opts.timeout;
      const r = { method: m, params: reqParams };
      const req = (call.raw as V2Ctx).mcpReq;
      const result = SPEC_CLIENT_METHODS.has(m)
        ? await req.send(r, requestOptions)
        : await req.send(r, PASSTHROUGH, requestOptions);
      return result as JsonObject;
    },
    aborted: (call, reason) => {
      if (reason.respond) return;
      // Suppress the response: the SDK drops it once its controller is aborted.
      conn.suppress(call, (call.raw as V2Ctx).mcpReq.signal, reason);
      // 2026-07-28 over HTTP: no response will come, so end the exchange (closes the response stream).
      const t = call.era === 'modern' ? perRequestTransport(server) : undefined;
      if (t) queueMicrotask(() => void t.close().catch(reportError));
    },
  };
}

/**
 * The connection's wiring: `initialize` (2025-era) can never be cancelled, `notifications/cancelled` keeps
 * the typed reason and ignores unknown ids (id 0 already works on v2); outbound ids from 1, `initialize`
 * marked on arrival, stdio hardened, close aborts the calls (see attach.ts).
 */
function wireConnection(server: V2Server, conn: Connection): void {
  const init = server._requestHandlers.get('initialize');
  if (init)
    server._requestHandlers.set('initialize', conn.guardInitialize(init, (ctx) => ctx.mcpReq.id) as StoredHandler);
  server.setNotificationHandler('notifications/cancelled', (notification: { params?: unknown }) =>
    conn.cancelled(notification),
  );
  hookConnection(server, conn);
}

/** The info the host's non-call handlers and the result transforms get about their request. */
function requestInfoOf(server: V2Server, liveChannel: (era: Era) => boolean): (ctx: V2Ctx) => RequestInfo {
  return function requestInfo(ctx: V2Ctx): RequestInfo {
    const req = ctx.mcpReq;
    const envelope = envelopeOf(req);
    const era = eraOf(server);
    return {
      requestId: req.id,
      sessionId: ctx.sessionId,
      era,
      meta: { ...(isObject(req._meta) ? req._meta : {}), ...envelope },
      signal: req.signal,
      ...identityOf(ctx.http?.authInfo),
      clientCapabilities: clientCapabilitiesOf(server, era, envelope),
      protocolVersion:
        era === 'modern' && typeof envelope[PROTOCOL_VERSION_KEY] === 'string'
          ? (envelope[PROTOCOL_VERSION_KEY] as string)
          : negotiatedVersion(server),
      channel: liveChannel(era),
      notify: (n) => req.notify(n),
      request: async (m, reqParams, opts = {}) => {
        if (era === 'modern') {
          throw new ProtocolError(
            JsonRpcErrorCode.InternalError,
            `cannot send ${m}: protocol 2026-07-28 has no server-to-client requests`,
          );
        }
        const o: Record<string, unknown> = {};
        if (opts.signal) o.signal = opts.signal;
        if (opts.timeout !== undefined) o.timeout = opts.timeout;
        const r = { method: m, params: reqParams };
        return (SPEC_CLIENT_METHODS.has(m) ? await req.send(r, o) : await req.send(r, PASSTHROUGH, o)) as JsonObject;
      },
    };
  };
}

/** The {@link ServerHost} middlewares get at setup on a v2 server. */
function v2Host(mcp: object, server: V2Server, conn: Connection, handlers: NonCallHandlers): ServerHost {
  return {
    sdk: 'v2',
    ...sharedHost(mcp, server, conn, handlers.transforms, (method) => handlers.wrapTransforms(method)),
    handleRequest: (method, handler) => handlers.handleRequest(method, handler),
    request: async (method, params, opts) => {
      const r = params === undefined ? { method } : { method, params };
      const o: Record<string, unknown> = {};
      if (opts?.timeout !== undefined) o.timeout = opts.timeout;
      if (opts?.signal) o.signal = opts.signal;
      return (
        SPEC_CLIENT_METHODS.has(method) ? await server.request(r, o) : await server.request(r, PASSTHROUGH, o)
      ) as JsonObject;
    },
  };
}

/** Wrap one registered tool's executor (once per tool: see `instrumentTools`). */
function instrumentTool(tool: RegisteredToolLike): void {
  let current: unknown;
  const wrapper = function tetherToolExecutor(args: unknown, sdkCtx: V2Ctx) {
    const call = callOf(sdkCtx); // linked when the call entered the chain
    const exec = current as AnyFn;
    if (!call || call.raw !== sdkCtx) return exec(args, sdkCtx); // not reached through the chain
    // The chain gate ran before McpServer's own (async) input validation: check again at the callback.
    const aborted = call.abortReason;
    if (aborted !== undefined) return Promise.reject(aborted);
    // McpServer's executor is an async function: it resolves with whatever the callback returned (a generator included).
    return Promise.resolve(exec(args, handlerContext(call, sdkCtx))).then((out) => settleHandlerOutput(out, call));
  };
  installToolWrapper(tool, 'executor', wrapper, (v) => {
    current = v;
  });
}

/**
 * What a tool callback receives on v2: the call context, plus the SDK's own `mcpReq` and `http`
 * (with `mcpReq.signal` replaced by the call's signal) so that callbacks written for the v2 SDK
 * (`ctx.mcpReq.log(...)`, `ctx.http?.authInfo`) keep working under tether.
 */
function handlerContext(call: Call, sdkCtx: V2Ctx): Call {
  const view = Object.create(call) as Call;
  const mcpReq = { ...sdkCtx.mcpReq };
  // The call's signal, made only if the callback reads it.
  Object.defineProperty(mcpReq, 'signal', { get: () => call.signal, enumerable: true, configurable: true });
  Object.defineProperty(view, 'mcpReq', { value: mcpReq, enumerable: true });
  Object.defineProperty(view, 'http', { value: sdkCtx.http, enumerable: true });
  return view;
}
