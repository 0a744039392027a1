/**
 * Adapter for `@modelcontextprotocol/sdk` 1.x (`McpServer` from `@modelcontextprotocol/sdk/server/mcp.js`).
 *
 * Seams used (see the SDK notes: there is no public middleware hook in v1):
 * - the server's request-handler map (`server._requestHandlers`): `tools/call`, `prompts/get` and
 *   `resources/read` entries are wrapped, both those present at attach time and those installed
 *   later through `setRequestHandler` (McpServer installs them lazily on first registration);
 * - registered tools' `handler` is replaced by a wrapper (again after the tool's `update()`), so callbacks registered before or after
 *   attaching (and `RegisteredTool.update({ callback })`) get the call context and generator driving;
 * - the `notifications/cancelled` handler, to keep the client's reason, to refuse cancelling
 *   `initialize`, and to honour a cancel for request id `0` (ignored by SDK 1.32.2, #2654);
 * - the outbound request counter starts at 1, so a client on SDK 1.x can cancel our first
 *   elicitation (its own id-0 bug);
 * - the per-request abort controllers, so an abort of the call suppresses the response.
 * What v2 does alike is `attach.ts`. SDK types never leave this file.
 */
import { callOf, NO_ANNOTATIONS, NO_META, type CallPort, type CallSpec } from '../call.js';
import { Chain } from '../engine.js';
import type { Connection } from './connection.js';
import { JsonRpcErrorCode, ProtocolError } from '../errors.js';
import { driveGenerator, isAsyncGenerator } from '../generator.js';
import type {
  CallMethod,
  CallResult,
  JsonObject,
  Middleware,
  RequestInfo,
  ServerHost,
  ToolAnnotations,
} from '../types.js';
import {
  assertNotAttached,
  type AttachOptions,
  CALL_METHODS,
  callParamsProblem,
  errorReporter,
  hookConnection,
  installToolWrapper,
  instrumentTools,
  invalidCallParams,
  isInputRequired,
  isObject,
  liveChannelOf,
  markAttached,
  openConnection,
  ResultTransforms,
  sharedHost,
  toolAnnotations,
  unservedInput,
} from './attach.js';
import { identityOf, type AuthInfoLike } from '../clientKey.js';

type AnyFn = (...args: any[]) => any;
type RawRequest = { method: string; params?: unknown; id?: string | number };
type Extra = {
  signal: AbortSignal;
  requestId: string | number;
  sessionId?: string;
  _meta?: Record<string, unknown>;
  authInfo?: AuthInfoLike;
  requestInfo?: { headers?: Record<string, unknown> };
  sendNotification(n: unknown): Promise<void>;
  sendRequest(r: unknown, schema: unknown, options?: unknown): Promise<unknown>;
};

/** Structural view of the v1 `McpServer` internals the adapter touches. */
export interface V1McpServerLike {
  server: {
    setRequestHandler: AnyFn;
    registerCapabilities(c: unknown): void;
    getClientCapabilities(): unknown;
    notification(n: unknown, options?: unknown): Promise<void>;
    request(r: unknown, schema: unknown, options?: unknown): Promise<unknown>;
    transport?: unknown;
    onerror?: (e: Error) => void;
    close(): Promise<void>;
  };
  registerTool: AnyFn;
}

interface V1Internals {
  _requestHandlers: Map<string, (request: RawRequest, extra: Extra) => Promise<unknown>>;
  _notificationHandlers: Map<string, (notification: any) => Promise<void>>;
  _requestHandlerAbortControllers: Map<string | number, AbortController>;
  _requestMessageId: number;
  _onclose: () => void;
  _onerror: (e: Error) => void;
}

interface RegisteredToolLike {
  handler: unknown;
  update?: unknown;
  inputSchema?: unknown;
  annotations?: ToolAnnotations;
}

const WRAPPED = Symbol.for('mcp-tether.wrapped');
const TRANSFORMED = Symbol('mcp-tether.transformed');
let sdkTypes:
  | Promise<{
      ResultSchema: unknown;
      ElicitResultSchema: unknown;
      CreateMessageResultSchema: unknown;
      ListRootsResultSchema: unknown;
    }>
  | undefined;
function loadSdkTypes() {
  // Loaded lazily so that a v2-only install never needs the v1 package.
  sdkTypes ??= import('@modelcontextprotocol/sdk/types.js') as never;
  return sdkTypes;
}

/** The SDK result schema for a server→client request method (a loose `ResultSchema` for any other method). */
function resultSchemaFor(types: Awaited<ReturnType<typeof loadSdkTypes>>, method: string): unknown {
  return method === 'elicitation/create'
    ? types.ElicitResultSchema
    : method === 'sampling/createMessage'
      ? types.CreateMessageResultSchema
      : method === 'roots/list'
        ? types.ListRootsResultSchema
        : types.ResultSchema;
}

/** True when `server` looks like a v1 `McpServer`. */
export function isV1McpServer(server: unknown): server is V1McpServerLike {
  const s = (server as { server?: unknown })?.server as Partial<V1Internals> | undefined;
  return (
    !!s &&
    s._requestHandlers instanceof Map &&
    s._requestHandlerAbortControllers instanceof Map &&
    typeof (server as V1McpServerLike).registerTool === 'function'
  );
}

/**
 * Attach middlewares to a v1 `McpServer`. Use `tether()` instead; this is its v1 branch.
 * The parts, in order: the {@link ServerHost} ({@link v1Host}, with the result transforms of
 * {@link transformWrapper}), the per-call path ({@link callRunner} through {@link callPort}), the takeover
 * of the call handlers ({@link takeOverCallHandlers}), the tool callbacks ({@link instrumentTool}), the
 * `initialize`/cancel/close wiring ({@link wireConnection}), then each middleware's `setup`.
 */
export function attachV1<S extends V1McpServerLike>(mcp: S, middlewares: Middleware[], options: AttachOptions = {}): S {
  const server = mcp.server;
  const internals = server as V1Server;
  assertNotAttached(server);
  const chain = new Chain(middlewares, options.asyncContext); // checks the middlewares' fields: a refusal leaves the server unattached
  markAttached(server);
  const session: Session = { negotiatedVersion: undefined };
  const reportError = errorReporter(options.onError, internals);
  const conn = openConnection(mcp, internals, reportError);

  const liveChannel = (): boolean => liveChannelOf(options.channel, server.transport);

  // ---- non-call requests: the info their host handlers and result transforms get ----
  const requestInfo = requestInfoOf(server, liveChannel, session);
  /** Result transforms by method ({@link ServerHost.transformResult}). */
  const transforms = new ResultTransforms();
  const wrapTransforms = transformWrapper(internals, transforms, requestInfo);
  const host = v1Host(mcp, internals, conn, transforms, wrapTransforms, requestInfo);
  const port = callPort(conn);
  const runCall = callRunner(mcp, chain, conn, port, host, reportError, liveChannel, session);

  takeOverCallHandlers(internals, runCall, transforms, wrapTransforms);
  // ---- tool callbacks: context as 2nd argument, generator driving, input_required outcome ----
  if (!instrumentTools(mcp, instrumentTool)) {
    throw new Error(
      'mcp-tether: unsupported @modelcontextprotocol/sdk version (McpServer._createRegisteredTool not found); supported: ^1.30',
    );
  }
  wireConnection(internals, conn, session);

  for (const m of middlewares) m.setup?.(host);
  return mcp;
}

/** The SDK `Server` of a v1 `McpServer`, with the internals the adapter touches. */
type V1Server = V1McpServerLike['server'] & V1Internals;

/** What the adapter remembers of the connection: the protocol version `initialize` negotiated. */
interface Session {
  negotiatedVersion: string | undefined;
}

type SdkHandler = (request: RawRequest, extra: Extra) => Promise<unknown>;
/** Runs one `tools/call`, `prompts/get` or `resources/read` through the chain; `original` is the SDK's handler. */
type RunCall = (method: CallMethod, original: SdkHandler, request: RawRequest, extra: Extra) => Promise<unknown>;

/**
 * The per-call path of one attached server: check the params, build the call from the SDK's request
 * and `extra`, and run it through the chain around the SDK's handler.
 */
function callRunner(
  mcp: V1McpServerLike,
  chain: Chain,
  conn: Connection,
  port: CallPort,
  host: ServerHost,
  reportError: (err: unknown) => void,
  liveChannel: () => boolean,
  session: Session,
): RunCall {
  const server = mcp.server;
  return (method: CallMethod, original: SdkHandler, request: RawRequest, extra: Extra): Promise<unknown> => {
    const params = request.params;
    // Malformed params: -32602 with a short message (SDK 1.x would answer -32603 with a zod dump).
    const problem = callParamsProblem(method, params);
    if (problem !== undefined) return Promise.reject(invalidCallParams(method, problem));
    const p = params as Record<string, unknown>;
    const name = (method === 'resources/read' ? p.uri : p.name) as string;
    const args = method === 'resources/read' ? { uri: name } : isObject(p.arguments) ? p.arguments : {};
    const who = identityOf(extra.authInfo);
    const spec: CallSpec = {
      method,
      name,
      args,
      annotations: method === 'tools/call' ? toolAnnotations(mcp, name) : NO_ANNOTATIONS,
      requestId: extra.requestId,
      sessionId: extra.sessionId,
      principal: who.principal,
      clientKey: who.clientKey,
      era: 'legacy',
      protocolVersion: session.negotiatedVersion,
      meta: isObject(extra._meta) ? extra._meta : NO_META,
      task: isObject(p.task) ? p.task : undefined,
      clientCapabilities: (server.getClientCapabilities() as JsonObject | undefined) ?? {},
      channel: liveChannel(),
      raw: extra,
      host,
    };
    const call = chain.newCall(spec, port, reportError);
    // A task-augmented call (2025-11-25 `params.task`) of a tool registered with `registerTool` (not
    // the SDK's own `registerToolTask`) reaches McpServer as a plain call: the SDK would validate the
    // tool's result as a CreateTaskResult and refuse it. A task front middleware answers the task itself.
    const sdkRequest =
      spec.task !== undefined && method === 'tools/call' && plainTool(mcp, name)
        ? { ...request, params: withoutTask(p) }
        : request;
    // An input_required outcome comes back through McpServer as it was, plus `content: []`
    // (its output validation skips results without `content`; the Server's result schema is loose).
    return conn.run(
      call,
      extra.signal,
      chain,
      () => original(sdkRequest, extra) as Promise<CallResult>,
      // v1 has no input_required on the wire; an mrtr middleware would have served it in-process.
      (result) => (isInputRequired(result) ? unservedInput(call) : result),
    );
  };
}

/** What the engine does through the SDK, for every call (the SDK's per-request object is `call.raw`). */
function callPort(conn: Connection): CallPort {
  return {
    send: (call, n) => (call.raw as Extra).sendNotification(n),
    request: async (call, m, reqParams, opts) => {
      if (!call.channel) {
        throw new ProtocolError(
          JsonRpcErrorCode.InternalError,
          `cannot send ${m}: no live channel to the client (stateless HTTP)`,
        );
      }
      const types = await loadSdkTypes();
      const schema = resultSchemaFor(types, m);
      const requestOptions: Record<string, unknown> = { signal: opts.signal };
      if (opts.timeout !== undefined) requestOptions.timeout = opts.timeout;
      return (await (call.raw as Extra).sendRequest(
        { method: m, params: reqParams },
        schema,
        requestOptions,
      )) as JsonObject;
    },
    aborted: (call, reason) => {
      // Suppress the response unless the reason asks for one (a server deadline answers with a TIMEOUT refusal).
      if (!reason.respond) conn.suppress(call, (call.raw as Extra).signal, reason);
    },
  };
}

/**
 * Take over the call handlers: the handler-map entries of tools/call, prompts/get and resources/read run
 * the chain, those present now and those McpServer installs later through `setRequestHandler` (lazily, on
 * first registration), which also re-applies the result transforms.
 */
function takeOverCallHandlers(
  internals: V1Server,
  runCall: RunCall,
  transforms: ResultTransforms,
  wrapTransforms: (method: string) => void,
): void {
  const wrapEntry = (method: string) => {
    const original = internals._requestHandlers.get(method);
    if (!original || (original as unknown as Record<symbol, unknown>)[WRAPPED]) return;
    const wrapped = (request: RawRequest, extra: Extra) => runCall(method as CallMethod, original, request, extra);
    (wrapped as unknown as Record<symbol, unknown>)[WRAPPED] = true;
    internals._requestHandlers.set(method, wrapped);
  };

  for (const method of CALL_METHODS) wrapEntry(method);
  const originalSetRequestHandler = internals.setRequestHandler.bind(internals);
  internals.setRequestHandler = (schema: unknown, handler: AnyFn) => {
    const r = originalSetRequestHandler(schema, handler);
    for (const method of CALL_METHODS) wrapEntry(method);
    for (const method of transforms.methods()) wrapTransforms(method);
    return r;
  };
}

/** Applies the result transforms of `method` ({@link ServerHost.transformResult}) around its handler-map entry. */
function transformWrapper(
  internals: V1Internals,
  transforms: ResultTransforms,
  requestInfo: (extra: Extra) => RequestInfo,
): (method: string) => void {
  return (method: string) => {
    const list = transforms.get(method);
    const entry = internals._requestHandlers.get(method);
    if (!list || !entry || (entry as unknown as Record<symbol, unknown>)[TRANSFORMED]) return;
    const wrapped = ResultTransforms.around(entry, list, requestInfo);
    (wrapped as unknown as Record<symbol, unknown>)[TRANSFORMED] = true;
    internals._requestHandlers.set(method, wrapped);
  };
}

/**
 * The connection's wiring: `initialize` remembers the negotiated version and can never be cancelled;
 * `notifications/cancelled` keeps the typed reason and honours id 0, refuses `initialize`, ignores unknown
 * ids; outbound ids from 1, `initialize` marked on arrival, stdio hardened, close aborts the calls (see attach.ts).
 */
function wireConnection(internals: V1Internals, conn: Connection, session: Session): void {
  const init = internals._requestHandlers.get('initialize');
  if (init) {
    internals._requestHandlers.set(
      'initialize',
      conn.guardInitialize(
        async (request: RawRequest, extra: Extra) => {
          const result = (await init(request, extra)) as { protocolVersion?: string };
          session.negotiatedVersion = typeof result?.protocolVersion === 'string' ? result.protocolVersion : undefined;
          return result;
        },
        (extra) => extra.requestId,
      ),
    );
  }
  internals._notificationHandlers.set('notifications/cancelled', async (notification: { params?: unknown }) =>
    conn.cancelled(notification),
  );
  hookConnection(internals, conn);
}

/** The info the host's non-call handlers and the result transforms get about their request. */
function requestInfoOf(
  server: V1McpServerLike['server'],
  liveChannel: () => boolean,
  session: Session,
): (extra: Extra) => RequestInfo {
  return (extra: Extra): RequestInfo => ({
    requestId: extra.requestId,
    sessionId: extra.sessionId,
    era: 'legacy',
    meta: isObject(extra._meta) ? extra._meta : {},
    signal: extra.signal,
    ...identityOf(extra.authInfo),
    clientCapabilities: (server.getClientCapabilities() as JsonObject | undefined) ?? {},
    protocolVersion: session.negotiatedVersion,
    channel: liveChannel(),
    notify: (n) => extra.sendNotification(n),
    request: async (m, reqParams, opts = {}) => {
      const types = await loadSdkTypes();
      const requestOptions: Record<string, unknown> = {};
      if (opts.signal) requestOptions.signal = opts.signal;
      if (opts.timeout !== undefined) requestOptions.timeout = opts.timeout;
      return (await extra.sendRequest(
        { method: m, params: reqParams },
        resultSchemaFor(types, m),
        requestOptions,
      )) as JsonObject;
    },
  });
}

/** The {@link ServerHost} middlewares get at setup on a v1 server. */
function v1Host(
  mcp: V1McpServerLike,
  internals: V1Internals,
  conn: Connection,
  transforms: ResultTransforms,
  wrapTransforms: (method: string) => void,
  requestInfo: (extra: Extra) => RequestInfo,
): ServerHost {
  const server = mcp.server;
  return {
    sdk: 'v1',
    ...sharedHost(mcp, server, conn, transforms, wrapTransforms),
    handleRequest: (method, handler) => {
      internals._requestHandlers.set(method, async (request, extra) => {
        const params = isObject(request.params) ? request.params : {};
        return handler(params, requestInfo(extra));
      });
      wrapTransforms(method);
    },
    request: async (method, params, opts) => {
      const types = await loadSdkTypes();
      return (await server.request({ method, params }, types.ResultSchema, opts)) as JsonObject;
    },
  };
}

/** Wrap one registered tool's callback (once per tool: see `instrumentTools`). */
function instrumentTool(tool: RegisteredToolLike): void {
  let original: unknown;
  // McpServer calls handler(args, extra), or handler(extra) for a tool without an input schema.
  const wrapper = function tetherToolHandler(this: unknown, x: unknown, y: unknown) {
    const fn = original as AnyFn;
    const hasSchema = tool.inputSchema !== undefined;
    // McpServer passes the request's `extra` on: the call was linked to it when it entered the chain.
    const call = callOf(hasSchema ? y : x);
    // eslint-disable-next-line prefer-rest-params
    if (!call) return fn.apply(this, arguments as unknown as unknown[]); // not reached through the chain (should not happen)
    // McpServer's input validation is async and sits between the chain gate and this callback.
    const aborted = call.abortReason;
    if (aborted !== undefined) return Promise.reject(aborted);
    const out = hasSchema ? fn(x, call) : fn(call);
    // McpServer awaits what this returns: a plain handler's promise passes as it is (no extra promise).
    return isAsyncGenerator(out) ? driveGenerator(out, call) : out;
  };
  // Task handlers (objects with createTask) are left alone.
  installToolWrapper(tool, 'handler', wrapper, (v) => {
    original = v;
  });
}

/** True for a tool registered with `registerTool` (a callback), not with `experimental.tasks.registerToolTask` (a task handler object). */
function plainTool(mcp: unknown, name: string): boolean {
  const tools = (mcp as { _registeredTools?: Record<string, RegisteredToolLike> })._registeredTools;
  return typeof tools?.[name]?.handler === 'function';
}

function withoutTask(params: Record<string, unknown>): Record<string, unknown> {
  const { task: _task, ...rest } = params;
  return rest;
}
