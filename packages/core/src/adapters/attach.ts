/**
 * The attach recipe both adapters follow, written once: what `attachV1` (SDK 1.x) and `attachV2`
 * (SDK 2.x) do alike, whatever the SDK major — the attach options and the one-attach rule, where
 * errors go, telling a live channel from stateless HTTP, the call-param checks before any
 * middleware, wrapping registered tools (now and later), the connection hooks (outbound ids from 1,
 * `initialize` marked on arrival, stdio hardening, close), result transforms, and the part of the
 * {@link ServerHost} that does not depend on the SDK. The adapters keep only what differs between
 * the majors; the bookkeeping of the calls in flight is `connection.ts`.
 */
import { NO_ANNOTATIONS, type Call } from '../call.js';
import { ErrorCode, JsonRpcErrorCode, ProtocolError, refuse } from '../errors.js';
import type {
  CallMethod,
  CallResult,
  InputRequiredResult,
  JsonObject,
  RequestInfo,
  ServerHost,
  ToolAnnotations,
} from '../types.js';
import { Connection, registerConnection } from './connection.js';
import { hardenStdioOnConnect } from './stdio.js';

type OnRequest = (request: { method?: unknown; id?: unknown }, extra: unknown) => void;

/** Options of `tether()` (both adapters). */
export interface AttachOptions {
  /**
   * Whether server→client requests can reach the client. `auto` (default): yes, except on a
   * Streamable HTTP transport without a session id (stateless mode).
   */
  channel?: 'auto' | 'live' | 'none';
  /** Called with errors from middlewares' event hooks and from sending. Default: the server's `onerror`. */
  onError?: (error: unknown) => void;
  /**
   * Run each call in AsyncLocalStorage, so that the free functions (`currentCall()`, `requireCall()`,
   * mrtr's `readInput()`, log-channel's `callLogger()`, ...) find it from anywhere in the handler.
   * Default: on when a middleware declares {@link Middleware.asyncContext}, else off. Off, a call
   * costs no AsyncLocalStorage (on Node 20 and 22 its promise hooks slow every promise of the process
   * down, ~30 % of a trivial call), handlers get the context as an argument as always, and a free
   * function called without its context argument throws an error naming this option. `false` turns
   * it off even when a middleware asks (your handlers pass the context explicitly).
   */
  asyncContext?: boolean;
}

const ATTACHED = Symbol.for('mcp-tether.attached');
const INSTRUMENTED = Symbol.for('mcp-tether.instrumented-tool');

/** @throws Error when `tether()` already ran on this SDK server (`mcp.server`) */
export function assertNotAttached(server: object): void {
  if ((server as Record<symbol, unknown>)[ATTACHED]) {
    throw new Error('mcp-tether: tether() was already called on this server; pass every middleware in one list');
  }
}

/** Mark the SDK server (`mcp.server`) as attached (see {@link assertNotAttached}). */
export function markAttached(server: object): void {
  (server as Record<symbol, unknown>)[ATTACHED] = true;
}

/** Where errors from middlewares' hooks and from sending go: `onError`, else the SDK server's `_onerror`. */
export function errorReporter(
  onError: AttachOptions['onError'],
  server: { _onerror: (e: Error) => void },
): (err: unknown) => void {
  return (err: unknown) => {
    if (onError) return onError(err);
    const e = err instanceof Error ? err : new Error(String(err));
    try {
      server._onerror(e);
    } catch {
      /* ignore */
    }
  };
}

/** The {@link Connection} of an attached server, registered for `abortCalls()`. */
export function openConnection(
  mcp: object,
  server: { _requestHandlerAbortControllers: Map<string | number, AbortController> },
  reportError: (err: unknown) => void,
): Connection {
  // Read each time: SDK 2.x replaces the map on close.
  const conn = new Connection(() => server._requestHandlerAbortControllers, reportError);
  registerConnection(mcp, conn);
  return conn;
}

/**
 * Whether server→client requests of a 2025-era call can reach the client ({@link AttachOptions.channel}):
 * `auto` says no only for a Streamable HTTP transport without a session id (stateless mode).
 */
export function liveChannelOf(channel: AttachOptions['channel'], transport: unknown): boolean {
  if (channel === 'live') return true;
  if (channel === 'none') return false;
  // Stateless Streamable HTTP (no session id): the answer would reach another instance.
  const t = transport as { handleRequest?: unknown; sessionId?: string } | undefined;
  return !(t && typeof t.handleRequest === 'function' && t.sessionId === undefined);
}

/**
 * Have `instrument` wrap each tool McpServer registered (`_registeredTools`) and each it registers
 * later (`_createRegisteredTool`), once per tool.
 * @returns false when McpServer has no `_createRegisteredTool` (later tools would go unwrapped)
 */
export function instrumentTools<T extends object>(mcp: object, instrument: (tool: T) => void): boolean {
  const m = mcp as { _registeredTools?: Record<string, T>; _createRegisteredTool?: (...args: unknown[]) => unknown };
  const once = (tool: T) => {
    if (!tool || (tool as Record<symbol, unknown>)[INSTRUMENTED]) return;
    instrument(tool);
    (tool as Record<symbol, unknown>)[INSTRUMENTED] = true;
  };
  const registry = m._registeredTools;
  if (registry) for (const tool of Object.values(registry)) once(tool);
  if (typeof m._createRegisteredTool !== 'function') return false;
  const create = m._createRegisteredTool.bind(mcp);
  m._createRegisteredTool = (...args: unknown[]) => {
    const tool = create(...args) as T;
    once(tool);
    return tool;
  };
  return true;
}

/**
 * Hook an SDK server's connection (the fields both majors share): outbound request ids start at 1,
 * an `initialize` is marked on arrival, stdio is hardened at `connect()`, and a close aborts the
 * calls in flight, then runs the close hooks.
 */
export function hookConnection(
  server: { _requestMessageId: number; _onclose: () => void; transport?: unknown },
  conn: Connection,
): void {
  // Start outbound request ids at 1: SDK 1.x clients ignore a cancel for id 0.
  if (server._requestMessageId === 0) server._requestMessageId = 1;

  // An initialize is marked on arrival (see Connection.wrapOnRequest).
  const sdkOnRequest = (server as { _onrequest?: OnRequest })._onrequest;
  if (typeof sdkOnRequest === 'function') {
    (server as { _onrequest?: OnRequest })._onrequest = conn.wrapOnRequest(sdkOnRequest.bind(server));
  }

  // ---- stdio: invalid lines answered, oversized lines refused, end of stdin closes (see stdio.ts) ----
  hardenStdioOnConnect(server);

  // ---- close: calls abort, then hooks ----
  server._onclose = conn.wrapClose(server._onclose.bind(server), () => server.transport !== undefined);
}

/** What both SDK majors' `Server` offer the host alike. */
interface SdkServerLike {
  transport?: unknown;
  getClientCapabilities(): unknown;
  registerCapabilities(c: unknown): void;
  notification(n: unknown, options?: unknown): Promise<void>;
  close(): Promise<void>;
}

/** The part of the {@link ServerHost} (for middleware setup) that is the same on both SDK majors. */
export function sharedHost(
  mcp: object,
  server: SdkServerLike,
  conn: Connection,
  transforms: ResultTransforms,
  wrapTransforms: (method: string) => void,
): Omit<ServerHost, 'sdk' | 'handleRequest' | 'request'> {
  return {
    sessionId: () => (server.transport as { sessionId?: string } | undefined)?.sessionId,
    clientCapabilities: () => server.getClientCapabilities() as JsonObject | undefined,
    transformResult: (method, transform) => {
      transforms.add(method, transform);
      wrapTransforms(method);
    },
    registerCapabilities: (caps) => {
      try {
        server.registerCapabilities(caps);
      } catch (err) {
        throw new Error(
          `mcp-tether: cannot declare capabilities ${JSON.stringify(caps)}: attach tether() before connect() (${(err as Error).message})`,
        );
      }
    },
    notify: (n) => server.notification(n),
    reachable: () => standaloneReachable(server.transport),
    validateToolInput: (name, args) => toolInputProblem(mcp, name, args),
    onClose: (fn) => conn.onClose(fn),
    close: () => server.close(),
  };
}

/** The refusal for an `input_required` outcome no middleware served (no `@mcp-tether/mrtr`). */
export function unservedInput(call: Call): CallResult {
  return refuse(
    call,
    ErrorCode.INPUT_REQUIRED_UNHANDLED,
    'This call needs user input, but the server has no way to ask for it (install @mcp-tether/mrtr).',
  );
}

/**
 * What is wrong with the `params` of a `tools/call`, `prompts/get` or `resources/read`, in a few
 * words; `undefined` when their shape is right. Both adapters refuse such a call with `-32602`
 * (invalid params) before any middleware runs, instead of the SDKs' raw validation dump (SDK 1.x
 * answered `-32603`). Only the shape is checked; the values are the tool's input schema's business.
 */
export function callParamsProblem(method: string, params: unknown): string | undefined {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return 'params must be an object';
  const p = params as Record<string, unknown>;
  if (method === 'resources/read') {
    if (typeof p.uri !== 'string') return 'uri must be a string';
  } else {
    if (typeof p.name !== 'string') return 'name must be a string';
    const args = p.arguments;
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args)))
      return 'arguments must be an object';
    if (method === 'prompts/get' && args !== undefined) {
      for (const v of Object.values(args)) if (typeof v !== 'string') return 'prompt arguments must be strings';
    }
  }
  return undefined;
}

/**
 * What McpServer's own input validation says of `args` for its tool `name` (both SDK lines have
 * `validateToolInput(tool, args, name)` on the instance): `undefined` when valid, else the problem.
 * Used by `ServerHost.validateToolInput`.
 */
export async function toolInputProblem(mcp: unknown, name: string, args: JsonObject): Promise<string | undefined> {
  const m = mcp as {
    _registeredTools?: Record<string, { enabled?: boolean } | undefined>;
    validateToolInput?: (tool: unknown, args: unknown, name: string) => Promise<unknown>;
  };
  const tool = m._registeredTools?.[name];
  if (!tool) return `Tool ${name} not found`;
  if (tool.enabled === false) return `Tool ${name} disabled`;
  if (typeof m.validateToolInput !== 'function') return undefined;
  try {
    await m.validateToolInput.call(mcp, tool, args, name);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** The `-32602` refusal of a call whose params have the wrong shape (see {@link callParamsProblem}). */
export function invalidCallParams(method: string, problem: string): ProtocolError {
  return new ProtocolError(JsonRpcErrorCode.InvalidParams, `Invalid params for ${method}: ${problem}`);
}

/**
 * `false` when `transport` is an SDK Streamable HTTP server transport (1.x wraps a web-standard one
 * in `_webStandardTransport`; 2.x's has the same internals) with no standalone GET SSE stream open,
 * so that a message not tied to a request cannot be delivered; `true` for anything else.
 */
export function standaloneReachable(transport: unknown): boolean {
  const outer = transport as { _webStandardTransport?: unknown } | undefined;
  const t = (outer?._webStandardTransport ?? outer) as
    | { _streamMapping?: unknown; _standaloneSseStreamId?: unknown }
    | undefined;
  if (!t || !(t._streamMapping instanceof Map) || typeof t._standaloneSseStreamId !== 'string') return true;
  return t._streamMapping.has(t._standaloneSseStreamId);
}

/**
 * Make `wrapper` what the SDK calls for a registered tool: `tool[key]` (v1 `handler`, v2
 * `executor`) is set to it, and set again after the tool's own `update()` replaced it (a new
 * callback or schema). `setCurrent` gets what the SDK put there (the callback or executor the
 * wrapper calls). A data property, not an accessor: redefining the SDK's data property as an
 * accessor turns the tool object into dictionary mode, and then every property McpServer reads
 * from it on each call goes through a slow lookup (~1 000 instructions per call on Node 24).
 * Anything not a function (v1 task handlers: objects with `createTask`) is left in place.
 */
export function installToolWrapper<K extends string>(
  tool: { [P in K]: unknown } & { update?: unknown },
  key: K,
  wrapper: (...args: any[]) => unknown,
  setCurrent: (value: unknown) => void,
): void {
  const install = () => {
    const current = tool[key];
    if (current === wrapper) return;
    setCurrent(current);
    if (typeof current === 'function') (tool as Record<string, unknown>)[key] = wrapper;
  };
  install();
  const update = tool.update;
  if (typeof update === 'function') {
    tool.update = function (this: unknown, ...args: unknown[]) {
      const r: unknown = update.apply(this, args);
      install();
      return r;
    };
  }
}

/** The three request methods calls go through the chain for (MRTR's methods in 2026-07-28). */
export const CALL_METHODS: ReadonlySet<string> = new Set<CallMethod>(['tools/call', 'prompts/get', 'resources/read']);

/** A {@link ServerHost.transformResult} transform. */
export type ResultTransform = (result: JsonObject, info: RequestInfo) => JsonObject | Promise<JsonObject>;

/** The transforms of {@link ServerHost.transformResult}, by method, for both adapters. */
export class ResultTransforms {
  private readonly byMethod = new Map<string, ResultTransform[]>();

  /** @throws TypeError for a call method (a middleware wraps those) */
  add(method: string, transform: ResultTransform): void {
    if (CALL_METHODS.has(method))
      throw new TypeError(`mcp-tether: transformResult does not apply to ${method} (wrap it with a middleware)`);
    const list = this.byMethod.get(method);
    if (list) list.push(transform);
    else this.byMethod.set(method, [transform]);
  }

  get(method: string): readonly ResultTransform[] | undefined {
    return this.byMethod.get(method);
  }

  methods(): IterableIterator<string> {
    return this.byMethod.keys();
  }

  /** A handler-map entry whose result goes through `list` (the SDK's per-request object gives the info). */
  static around<R, X>(
    entry: (request: R, x: X) => unknown,
    list: readonly ResultTransform[],
    info: (x: X) => RequestInfo,
  ) {
    return async (request: R, x: X): Promise<JsonObject> => {
      let result = (await entry(request, x)) as JsonObject;
      const i = info(x);
      for (const t of list) result = await t(result, i);
      return result;
    };
  }
}

/** The annotations of McpServer's registered tool `name` (shared frozen `{}` when it has none). */
export function toolAnnotations(mcp: unknown, name: string): ToolAnnotations {
  const tools = (mcp as { _registeredTools?: Record<string, { annotations?: ToolAnnotations }> })._registeredTools;
  return tools?.[name]?.annotations ?? NO_ANNOTATIONS;
}

/** A plain object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** True for an `input_required` outcome. */
export function isInputRequired(value: unknown): value is InputRequiredResult {
  return isObject(value) && value.resultType === 'input_required';
}
