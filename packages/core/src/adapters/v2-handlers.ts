/**
 * The SDK 2.x server's request-handler map, as one attached server sees it: the takeover of
 * `setRequestHandler` (the three call methods run the chain, their params checked first, a task
 * handle passed to the SDK verbatim) and the host's non-call handlers with the result transforms
 * around the handler-map entries. The per-call path that runs the chain is `callRunner` in v2.ts.
 */
import type { CallMethod, CallResult, RequestId, RequestInfo, ServerHost } from '../types.js';
import { CALL_METHODS, callParamsProblem, invalidCallParams, isObject, ResultTransforms } from './attach.js';
import {
  type AnyFn,
  asSent,
  mayReturnTask,
  PASSTHROUGH,
  type RawRequest,
  reinstallHandlers,
  type StoredHandler,
  type V2Ctx,
  type V2Server,
} from './v2-sdk.js';

/** Runs one `tools/call`, `prompts/get` or `resources/read` through the chain; `inner` is the SDK's handler. */
export type RunCall = (method: CallMethod, inner: StoredHandler, request: RawRequest, ctx: V2Ctx) => Promise<unknown>;

/**
 * Take over `server.setRequestHandler`: the handlers of the three call methods run the chain (with the
 * params checked first), a non-call handler the SDK installs gives way to the host's and gets the result
 * transforms; handlers McpServer installed before attaching are installed again through the patch.
 * @throws Error when a call handler was installed on `mcp.server` directly, before `tether()`
 */
export function takeOverRequestHandlers(
  mcp: object,
  server: V2Server,
  originalSetRequestHandler: AnyFn,
  runCall: RunCall,
  verbatim: Map<RequestId, CallResult>,
  handlers: NonCallHandlers,
): void {
  const wrapStored =
    (method: CallMethod, h: StoredHandler): StoredHandler =>
    (request, ctx) =>
      runCall(method, h, request, ctx);

  /** Handler-map entries (the SDK's `_wrapHandler` output) that run the chain. */
  const chained = new WeakSet<object>();
  server.setRequestHandler = (method: string, schemasOrHandler: unknown, maybeHandler?: AnyFn) => {
    if (CALL_METHODS.has(method)) {
      let r: unknown;
      if (typeof schemasOrHandler === 'function') {
        r = originalSetRequestHandler(method, wrapStored(method as CallMethod, schemasOrHandler as StoredHandler));
        checkParamsFirst(server, method, verbatim);
      } else if (typeof maybeHandler === 'function') {
        // 3-argument form: the handler gets the parsed params.
        const h = maybeHandler;
        const wrapped = wrapStored(method as CallMethod, (request, ctx) => h(request.params, ctx));
        r = originalSetRequestHandler(method, schemasOrHandler, (params: Record<string, unknown>, ctx: V2Ctx) =>
          wrapped({ method, params }, ctx),
        );
        checkParamsFirst(server, method, verbatim);
      } else {
        return originalSetRequestHandler(method, schemasOrHandler, maybeHandler);
      }
      const entry = server._requestHandlers.get(method);
      if (entry) chained.add(entry);
      return r;
    }
    const r = originalSetRequestHandler(method, schemasOrHandler, maybeHandler);
    handlers.installedBySdk(method);
    return r;
  };

  // Handlers McpServer installed before attaching: remove and re-install them through the patch.
  reinstallHandlers(mcp, server);
  for (const method of CALL_METHODS) {
    const entry = server._requestHandlers.get(method);
    if (entry && !chained.has(entry)) {
      throw new Error(
        `mcp-tether: a ${method} handler was installed on mcp.server before tether(); call tether() first`,
      );
    }
  }
}

/** Malformed params of `method`: -32602 with a short message, before the SDK's validation (and its zod dump). */
function checkParamsFirst(server: V2Server, method: string, verbatim: Map<RequestId, CallResult>): void {
  const entry = server._requestHandlers.get(method);
  if (!entry) return;
  server._requestHandlers.set(method, (request, ctx) => {
    const problem = callParamsProblem(method, request?.params);
    if (problem !== undefined) return Promise.reject(invalidCallParams(method, problem));
    if (method === 'tools/call' && mayReturnTask(request.params, ctx))
      return passVerbatim(verbatim, ctx.mcpReq.id, entry(request, ctx));
    return entry(request, ctx);
  });
}

/**
 * The handler-map entry's outcome, or the task handle the chain returned for request `id` (kept in
 * `verbatim` until the entry hands it to the SDK): the SDK's tools/call result normalization would add
 * `content: []` to a 2026 task handle (`resultType: "task"`) and its 2025 validation refuses `{ task }`
 * without `content`, so the entry answers with the chain's own object instead. Only requests that may
 * yield a task (a 2025 `params.task`, or the 2026 tasks extension in the request's capabilities) pay the
 * extra reaction.
 */
function passVerbatim(
  verbatim: Map<RequestId, CallResult>,
  id: RequestId,
  pending: Promise<unknown>,
): Promise<unknown> {
  return pending.then(
    (r) => {
      const v = verbatim.get(id);
      if (v === undefined) return r;
      verbatim.delete(id);
      return v;
    },
    (err: unknown) => {
      const v = verbatim.get(id);
      if (v === undefined) throw err;
      verbatim.delete(id);
      return v;
    },
  );
}

/**
 * The non-call request handlers of one attached server: those installed through the host
 * ({@link ServerHost.handleRequest}), which stay when the SDK installs its own for the same method,
 * and the result transforms ({@link ServerHost.transformResult}) around the handler-map entries.
 */
export class NonCallHandlers {
  /** Non-call handlers installed through the host, re-applied if the SDK overwrites them. */
  private readonly own = new Map<string, StoredHandler>();
  /** Result transforms by method. */
  readonly transforms = new ResultTransforms();
  /** The handler-map entries that already apply their method's transforms. */
  private readonly transformed = new WeakSet<object>();
  private readonly server: V2Server;
  /** The SDK's own `setRequestHandler` (not the takeover). */
  private readonly originalSetRequestHandler: AnyFn;
  private readonly requestInfo: (ctx: V2Ctx) => RequestInfo;

  constructor(server: V2Server, originalSetRequestHandler: AnyFn, requestInfo: (ctx: V2Ctx) => RequestInfo) {
    this.server = server;
    this.originalSetRequestHandler = originalSetRequestHandler;
    this.requestInfo = requestInfo;
  }

  /** After the SDK installed its handler for `method`: a host handler stays, the transforms wrap it. */
  installedBySdk(method: string): void {
    // e.g. declaring `logging` makes the SDK install its own logging/setLevel: a host handler stays.
    const own = this.own.get(method);
    if (own) {
      this.server._requestHandlers.set(method, own);
      this.server._customSchemaRequestMethods?.add(method);
    }
    this.wrapTransforms(method);
  }

  /** Result transforms by method ({@link ServerHost.transformResult}), applied around the method's handler-map entry. */
  wrapTransforms(method: string): void {
    const server = this.server;
    const list = this.transforms.get(method);
    const entry = server._requestHandlers.get(method);
    if (!list || !entry || this.transformed.has(entry)) return;
    const wrapped = ResultTransforms.around(entry, list, this.requestInfo) as StoredHandler;
    this.transformed.add(wrapped);
    server._requestHandlers.set(method, wrapped);
    if (this.own.has(method)) this.own.set(method, wrapped);
  }

  /** {@link ServerHost.handleRequest}. @throws TypeError for a call method (a middleware wraps those) */
  handleRequest(method: string, handler: Parameters<ServerHost['handleRequest']>[1]): void {
    if (CALL_METHODS.has(method))
      throw new TypeError(`mcp-tether: handleRequest does not apply to ${method} (wrap it with a middleware)`);
    const server = this.server;
    const requestInfo = this.requestInfo;
    // The SDK's 3-argument form with pass-through schemas: the method is marked as registered with an
    // explicit schema, so the era gate lets the Tasks extension's reused names (`tasks/get`,
    // `tasks/cancel`) through on 2026-07-28 instances; other non-spec methods are era-blind anyway.
    const run = (params: unknown, ctx: V2Ctx) => handler(asSent(isObject(params) ? params : {}, ctx), requestInfo(ctx));
    try {
      this.originalSetRequestHandler(method, { params: PASSTHROUGH, result: PASSTHROUGH }, run);
    } catch {
      // The SDK refuses a spec method whose capability is not declared yet (e.g. logging/setLevel
      // before `logging`): install the same entry the 3-argument form would, by hand.
      server._requestHandlers.set(
        method,
        server._wrapHandler(method, (request: RawRequest, ctx: V2Ctx) => run({ ...request.params }, ctx)),
      );
      server._customSchemaRequestMethods?.add(method);
    }
    const stored = server._requestHandlers.get(method);
    if (stored) this.own.set(method, stored);
    this.wrapTransforms(method);
  }
}
