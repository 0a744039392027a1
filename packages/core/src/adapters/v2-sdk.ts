/**
 * Structural views of the `@modelcontextprotocol/server` 2.x objects the v2 adapter touches, and the
 * helpers that read them: the `ServerContext` (`V2Ctx`), the protocol `Server` with the private
 * fields tether relies on (`V2Server`), `McpServer` and its registered tools; telling a v2 server
 * apart (`isV2McpServer`) and checking its internals; the negotiated version and the era; the
 * per-request transport; the request envelope (`_meta` keys the SDK lifts out, the client's
 * capabilities); McpServer's lazy handler installers; and what a request may carry (a task).
 * No SDK value is imported: these are shapes. The adapter itself is `v2.ts`.
 */
import type { Era, JsonObject, RequestId, ToolAnnotations } from '../types.js';
import type { AuthInfoLike } from '../clientKey.js';
import { TASKS_EXTENSION } from '../wire/jobs.js';
import { isObject } from './attach.js';

export type AnyFn = (...args: any[]) => any;
export type RawRequest = { method: string; params?: Record<string, unknown> };

/** The v2 `ServerContext` fields the adapter reads. */
export interface V2Ctx {
  sessionId?: string;
  mcpReq: {
    id: RequestId;
    method: string;
    _meta?: Record<string, unknown>;
    envelope?: Record<string, unknown>;
    inputResponses?: Record<string, unknown>;
    requestState: () => unknown;
    signal: AbortSignal;
    send: (...args: any[]) => Promise<unknown>;
    notify: (n: unknown) => Promise<void>;
  };
  http?: { authInfo?: AuthInfoLike; req?: { headers?: { get(name: string): string | null } } };
}

export type StoredHandler = (request: RawRequest, ctx: V2Ctx) => Promise<unknown>;

export interface V2Server {
  setRequestHandler: AnyFn;
  setNotificationHandler: AnyFn;
  removeRequestHandler(method: string): void;
  registerCapabilities(c: unknown): void;
  getClientCapabilities(): unknown;
  getNegotiatedProtocolVersion?(): string | undefined;
  notification(n: unknown, options?: unknown): Promise<void>;
  request(r: unknown, schemaOrOptions?: unknown, options?: unknown): Promise<unknown>;
  transport?: unknown;
  close(): Promise<void>;
  _requestHandlers: Map<string, StoredHandler>;
  /** Methods registered with explicit schemas (the era gate lets the Tasks extension's reused names through for them). */
  _customSchemaRequestMethods?: Set<string>;
  _requestHandlerAbortControllers: Map<RequestId, AbortController>;
  _requestMessageId: number;
  _negotiatedProtocolVersion?: string;
  _onclose: () => void;
  _onerror: (e: Error) => void;
  _wrapHandler: AnyFn;
}

/** Structural view of a v2 `McpServer`. */
export interface V2McpServerLike {
  server: unknown;
  registerTool: AnyFn;
}

export interface RegisteredToolLike {
  executor: unknown;
  update?: unknown;
  inputSchema?: unknown;
  annotations?: ToolAnnotations;
}

/** Methods whose results the SDK validates with its own schema when sent through `ctx.mcpReq.send`. */
export const SPEC_CLIENT_METHODS: ReadonlySet<string> = new Set([
  'elicitation/create',
  'sampling/createMessage',
  'roots/list',
  'ping',
]);
/** The first protocol revision of the modern (stateless) era; revisions are ISO dates, so they compare as strings. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
export const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
/** McpServer's lazy installers, re-run after attaching so existing entries get the chain. */
export const INSTALLERS = [
  { flag: '_toolHandlersInitialized', install: 'setToolRequestHandlers', methods: ['tools/list', 'tools/call'] },
  {
    flag: '_resourceHandlersInitialized',
    install: 'setResourceRequestHandlers',
    methods: ['resources/list', 'resources/templates/list', 'resources/read'],
  },
  { flag: '_promptHandlersInitialized', install: 'setPromptRequestHandlers', methods: ['prompts/list', 'prompts/get'] },
] as const;

/** A Standard Schema that accepts any value (for results of non-spec methods). */
export const PASSTHROUGH = {
  '~standard': { version: 1, vendor: 'mcp-tether', validate: (value: unknown) => ({ value }) },
};

/** True when `server` looks like a v2 `McpServer` (`@modelcontextprotocol/server`). */
export function isV2McpServer(server: unknown): server is V2McpServerLike {
  const s = (server as { server?: unknown })?.server as Partial<V2Server> | undefined;
  return (
    !!s &&
    s._requestHandlers instanceof Map &&
    typeof s._wrapHandler === 'function' &&
    typeof s.setRequestHandler === 'function' &&
    typeof (server as V2McpServerLike).registerTool === 'function'
  );
}

/** True for a 2026-07-28-or-later protocol revision. */
export function isModernVersion(version: unknown): boolean {
  return typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= MODERN_PROTOCOL_VERSION;
}

/**
 * @throws Error when McpServer lacks the internals the adapter patches (`_createRegisteredTool`,
 *   the protocol's `_requestHandlerAbortControllers`)
 */
export function assertV2Internals(mcp: object, server: V2Server): void {
  const mcpInternals = mcp as Record<string, unknown>;
  if (
    typeof mcpInternals._createRegisteredTool !== 'function' ||
    !(server._requestHandlerAbortControllers instanceof Map)
  ) {
    throw new Error(
      'mcp-tether: unsupported @modelcontextprotocol/server version (McpServer internals not found); supported: ^2.4',
    );
  }
}

/** The protocol version of the SDK instance (its `initialize`-negotiated one, or the era it was bound to). */
export function negotiatedVersion(server: V2Server): string | undefined {
  return typeof server.getNegotiatedProtocolVersion === 'function'
    ? server.getNegotiatedProtocolVersion()
    : server._negotiatedProtocolVersion;
}

/** The SDK's instance era (createMcpHandler/serveStdio bind an instance to 2026-07-28; initialize binds it to 2025). */
export function eraOf(server: V2Server): Era {
  return isModernVersion(negotiatedVersion(server)) ? 'modern' : 'legacy';
}

/** The per-request transport createMcpHandler uses for 2026-07-28 exchanges (one request, one response stream). */
export function perRequestTransport(server: V2Server): { close(): Promise<void> } | undefined {
  const t = server.transport as { handleMessage?: unknown; close?: () => Promise<void> } | undefined;
  return t && typeof t.handleMessage === 'function' && typeof t.close === 'function'
    ? (t as { close(): Promise<void> })
    : undefined;
}

/** The reserved `_meta` keys of a request (its envelope), which the SDK lifts out of `_meta`. */
export function envelopeOf(req: V2Ctx['mcpReq']): Record<string, unknown> {
  return isObject(req.envelope) ? req.envelope : {};
}

/** The client's capabilities for a request: on 2026-07-28 from its envelope, on 2025 the session's (`initialize`). */
export function clientCapabilitiesOf(server: V2Server, era: Era, envelope: Record<string, unknown>): JsonObject {
  return era === 'modern'
    ? isObject(envelope[CLIENT_CAPABILITIES_KEY])
      ? (envelope[CLIENT_CAPABILITIES_KEY] as JsonObject)
      : {}
    : ((server.getClientCapabilities() as JsonObject | undefined) ?? {});
}

/**
 * Handlers McpServer installed before attaching: remove them and re-run McpServer's own installers
 * (`setToolRequestHandlers` & co., guarded by `_toolHandlersInitialized` & co.), so they go through
 * the patched `setRequestHandler` again.
 * @throws Error when an installer is missing (an unsupported SDK version)
 */
export function reinstallHandlers(mcp: object, server: V2Server): void {
  const mcpInternals = mcp as Record<string, unknown>;
  for (const { flag, install, methods } of INSTALLERS) {
    if (!mcpInternals[flag]) continue;
    const installer = mcpInternals[install];
    if (typeof installer !== 'function') {
      throw new Error(
        `mcp-tether: unsupported @modelcontextprotocol/server version (McpServer.${install} not found); supported: ^2.4`,
      );
    }
    for (const m of methods) server.removeRequestHandler(m);
    mcpInternals[flag] = false;
    // The capabilities are already declared; do not re-declare them (that throws once connected).
    const own = Object.getOwnPropertyDescriptor(server, 'registerCapabilities');
    server.registerCapabilities = () => {};
    try {
      (installer as AnyFn).call(mcp);
    } finally {
      if (own) Object.defineProperty(server, 'registerCapabilities', own);
      else delete (server as unknown as Record<string, unknown>).registerCapabilities;
    }
  }
}

/**
 * Whether a `tools/call` may be answered with a task handle: a 2025-11-25 request carrying
 * `params.task`, or a 2026-07-28 request whose capabilities (in `_meta`) declare the tasks extension.
 */
export function mayReturnTask(params: Record<string, unknown> | undefined, ctx: V2Ctx): boolean {
  if (params === undefined) return false;
  if (isObject(params.task)) return true;
  const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return isObject(caps?.extensions?.[TASKS_EXTENSION]);
}

/**
 * The params of a non-call request as the client sent them: on 2026-07-28 the SDK lifts
 * `inputResponses` and `requestState` out of every request's params (into `ctx.mcpReq`), also for
 * methods it does not know, such as the tasks extension's `tasks/update`; put them back. (The SDK
 * keeps only object entries of `inputResponses` that are not embedded requests or results.)
 */
export function asSent(params: JsonObject, ctx: V2Ctx): JsonObject {
  const req = ctx.mcpReq;
  const lifted = req.inputResponses;
  const state = typeof req.requestState === 'function' ? req.requestState() : undefined;
  if (lifted === undefined && state === undefined) return params;
  const out: JsonObject = { ...params };
  if (lifted !== undefined && out.inputResponses === undefined) out.inputResponses = lifted;
  if (state !== undefined && out.requestState === undefined) out.requestState = state;
  return out;
}

/** A task handle: a 2026 `CreateTaskResult` (`resultType: "task"`) or a 2025 one (`{ task: {...} }` without `content`). */
export function isTaskHandle(result: unknown): boolean {
  if (!isObject(result)) return false;
  return result.resultType === 'task' || (isObject(result.task) && result.content === undefined);
}
