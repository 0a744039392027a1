import type { CallAbortReason } from './abort.js';

/**
 * The middleware contract. Nothing in this file refers to SDK types: adapters translate the SDK
 * (v1 `@modelcontextprotocol/sdk`, later v2 `@modelcontextprotocol/server`) into these shapes.
 */

/** JSON-RPC request id (MCP `RequestId`). */
export type RequestId = string | number;
/** MCP `ProgressToken`: a string or an integer chosen by the client (`params._meta.progressToken`). */
export type ProgressToken = string | number;
/** A JSON object. */
export type JsonObject = Record<string, unknown>;

/**
 * Protocol era of one call.
 * - `legacy`: a 2025-era session (protocol ≤ 2025-11-25, with an `initialize` handshake).
 * - `modern`: a 2026-07-28 request (stateless, `_meta["io.modelcontextprotocol/protocolVersion"]`).
 */
export type Era = 'legacy' | 'modern';

/** The three request methods middlewares wrap (MRTR is defined on exactly these in 2026-07-28). */
export type CallMethod = 'tools/call' | 'prompts/get' | 'resources/read';

/** MCP `ToolAnnotations` (hints only; spec `server/tools#tool-annotations`). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

/** RFC 5424 severities as MCP spells them (spec `server/utilities/logging`), least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
/** One of the 8 RFC 5424 levels. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A JSON-RPC notification (no id). */
export interface Notification {
  method: string;
  params?: JsonObject;
}

/** A progress report travelling outward through the event tap (not yet throttled or sent). */
export interface ProgressEvent {
  readonly type: 'progress';
  /** Progress so far, in the unit of `total` (percent when made by `progress(percent)`). */
  readonly progress: number;
  /** Total amount of work, when known. */
  readonly total?: number;
  /** Human-readable status for the user. */
  readonly message?: string;
}

/** A log line travelling outward through the event tap. */
export interface LogEvent {
  readonly type: 'log';
  readonly level: LogLevel;
  /** Any JSON value (MCP `LoggingMessageNotification.params.data`). */
  readonly data: unknown;
  readonly logger?: string;
}

/** A wire notification related to the call. The core sink sends it on the call's own stream. */
export interface NotificationEvent {
  readonly type: 'notification';
  readonly notification: Notification;
}

/** An input request about to be put to the user (observation only: the sink drops it). */
export interface InputEvent {
  readonly type: 'input';
  readonly key: string;
  readonly request: InputRequest;
  /** 1-based round number. */
  readonly round: number;
}

/** Every outbound per-call event. */
export type OutboundEvent = ProgressEvent | LogEvent | NotificationEvent | InputEvent;

/** An embedded request the client must fulfil (MCP 2026-07-28 `InputRequest`). */
export interface InputRequest {
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list';
  params?: JsonObject;
}

/**
 * A handler's "input needed" outcome, in the shape of MCP 2026-07-28 `InputRequiredResult`.
 * `requestState` here is the handler's *unsealed* continuation payload (any JSON value); the mrtr
 * middleware seals it before anything crosses the client.
 */
export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests?: Record<string, InputRequest>;
  requestState?: unknown;
  [key: string]: unknown;
}

/** What a call produces: a tools/call, prompts/get or resources/read result, or input_required. */
export type CallResult = JsonObject;

/** Last progress notification the core put on the wire for a call. */
export interface SentProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
  /** `Date.now()` when it was sent, in ms. */
  readonly at: number;
}

/** Options for a server→client request made during a call. */
export interface CallRequestOptions {
  /** Give up after this many ms (default: the SDK's 60 000 ms). */
  timeout?: number;
}

/**
 * Everything about one call, in one object made for that call.
 *
 * Handlers get it as their second argument and free functions reach it through
 * {@link currentCall} (when the server runs its calls in async context: `AttachOptions.asyncContext`). Middlewares may add fields for handlers (e.g. `ctx.progress`, `ctx.log`):
 * declare them with module augmentation of this interface. Pass it along; do not copy it
 * (`{ ...ctx }` loses `signal`, `abortReason`, `state`, `abort`, `emit`, `request` and the
 * fields middlewares declare with {@link Middleware.fields}, which are accessors made on first use).
 */
export interface CallContext {
  /** `tools/call`, `prompts/get` or `resources/read`. */
  readonly method: CallMethod;
  /** Tool name, prompt name, or resource URI. */
  readonly name: string;
  /** The tool name for `tools/call`, else undefined. */
  readonly toolName: string | undefined;
  /** Arguments exactly as the client sent them (tools: `arguments`; prompts: `arguments`; resources: `{ uri }`). */
  readonly args: JsonObject;
  /** Tool annotations as registered (`destructiveHint`, `readOnlyHint`, ...); `{}` when none. */
  readonly annotations: ToolAnnotations;
  /** JSON-RPC id of this request. */
  readonly requestId: RequestId;
  /** Transport session id (stateful Streamable HTTP); undefined on stdio, in-memory and stateless HTTP. */
  readonly sessionId: string | undefined;
  /** Authenticated principal (OAuth client id) when the transport has one. */
  readonly principal: string | undefined;
  /**
   * Who the client is, for quotas and rate limits: the {@link CallContext.principal} when there is
   * one, else the key the transport conveyed (`@mcp-tether/http`: by default `ip:<remote address>`;
   * `session:<id>` or `conn:<n>` when the operator chose so), else undefined (stdio, in-memory, a
   * transport that conveys none). A transport conveys it in the SDK's `AuthInfo.extra` under
   * `CLIENT_KEY_EXTRA` (see `anonymousAuthInfo`). Count per this key, never per session alone.
   */
  readonly clientKey: string | undefined;
  /** Protocol era of this call. */
  readonly era: Era;
  /** Negotiated (legacy) or requested (modern) protocol version, when known. */
  readonly protocolVersion: string | undefined;
  /** `params._meta` of the request (`{}` when absent). */
  readonly meta: JsonObject;
  /** `params._meta.progressToken`, exactly as sent (string or number, `0` included). */
  readonly progressToken: ProgressToken | undefined;
  /**
   * `params.task` of a 2025-11-25 task-augmented request (`{ ttl?: number }`, ttl in ms), exactly as
   * sent; undefined when absent (and always on 2026-07-28, where the tasks extension has no request param).
   */
  readonly task: JsonObject | undefined;
  /** The client's capabilities (session capabilities on legacy, per-request on modern). */
  readonly clientCapabilities: JsonObject;
  /** True when server→client requests can reach the client during this call (stdio, stateful HTTP). */
  readonly channel: boolean;
  /**
   * The call's one signal. Aborts on client cancel, disconnect, deadline or shutdown; `signal.reason`
   * is a {@link CallAbortReason}. Created on first read (an `AbortSignal` costs several µs on
   * Node 20): middlewares on a hot path check {@link CallContext.abortReason} and subscribe with
   * {@link CallContext.onAbort} instead, so a call whose handler never reads it never makes one.
   */
  readonly signal: AbortSignal;
  /** Why the call was aborted, once it was (the same object as `signal.reason`); undefined before. */
  readonly abortReason: CallAbortReason | undefined;
  /**
   * Run `listener(reason, ctx)` once when the call aborts (`ctx` is this context, so one shared
   * function can serve every call): synchronously inside {@link CallContext.abort},
   * after the signal's own listeners; at once (synchronously) if the call already aborted. A
   * listener that throws is reported like a failing event hook and does not stop the others.
   * Listeners live as long as the call's context; there is no removal (they must be idempotent
   * and cheap).
   */
  onAbort(listener: (reason: CallAbortReason, ctx: CallContext) => void): void;
  /** `Date.now()` when the call entered the chain, in ms. */
  readonly startedAt: number;
  /** Last progress actually sent on the wire for this call. */
  readonly lastProgress: SentProgress | undefined;
  /** True once the call's result has been handed to the transport (nothing more may be sent). */
  readonly completed: boolean;
  /** `params.inputResponses` of a 2026-07-28 retry, or answers gathered in-process on legacy. */
  inputResponses: Record<string, JsonObject> | undefined;
  /** `params.requestState` of a 2026-07-28 retry (raw, untrusted), or the unsealed state on legacy re-entry. */
  requestState: unknown;
  /** The server (connection) this call arrived on; the same object a middleware's `setup` received. Use it as a WeakMap key for per-session state. */
  readonly host: ServerHost;
  /** The SDK's own per-request object (v1 `RequestHandlerExtra`), for escape hatches. */
  readonly raw: unknown;
  /** Scratch space for middlewares, per call. Key it with a symbol you own. */
  readonly state: Map<symbol, unknown>;
  /**
   * Abort the call. The first reason wins. Unless `reason.respond` is true, no response is sent
   * for the request (MCP cancellation semantics).
   */
  abort(reason: CallAbortReason): void;
  /**
   * Send an event outward through the event tap. Without `origin` it starts at the innermost
   * middleware (as the handler's events do); with `origin` it starts just outside that middleware.
   * Resolves once the event was sent or dropped; never rejects.
   */
  emit(event: OutboundEvent, origin?: Middleware): Promise<void>;
  /**
   * Send a server→client request related to this call (so on Streamable HTTP it rides the call's
   * POST stream), bound to the call's signal.
   * @throws when there is no live channel, the client lacks the capability, the call is aborted,
   *   the request times out, or the client answers with a JSON-RPC error.
   */
  request(method: string, params: JsonObject, options?: CallRequestOptions): Promise<JsonObject>;
}

/** Continue the chain. May be called again to re-enter the inner chain (mrtr rounds). */
export type Next = () => Promise<CallResult>;

/** Server-level facilities given to a middleware's {@link Middleware.setup}. */
export interface ServerHost {
  /** Which SDK line the server is on. */
  readonly sdk: 'v1' | 'v2';
  /** Transport session id, once connected (undefined on stdio and stateless HTTP). */
  sessionId(): string | undefined;
  /** Client capabilities, once initialized. */
  clientCapabilities(): JsonObject | undefined;
  /**
   * Install (or replace) the handler of a non-call request method such as `logging/setLevel`.
   * The handler gets the raw `params` (`{}` when absent); a thrown {@link ProtocolError} becomes a
   * JSON-RPC error with its code.
   */
  handleRequest(
    method: string,
    handler: (params: JsonObject, info: RequestInfo) => JsonObject | Promise<JsonObject>,
  ): void;
  /**
   * Post-process the result of a request method the SDK (or another handler) answers, e.g. add
   * `execution.taskSupport` to the tools of a `tools/list` result. Transforms run in the order they
   * were added, on the result before the SDK encodes it; one that throws turns the answer into a
   * JSON-RPC error (its {@link ProtocolError} code, else `-32603`). Works for handlers installed
   * before or after this call. Optional: adapters that cannot do it omit it.
   */
  transformResult?(
    method: string,
    transform: (result: JsonObject, info: RequestInfo) => JsonObject | Promise<JsonObject>,
  ): void;
  /** Declare server capabilities. Must run before the server connects. */
  registerCapabilities(capabilities: JsonObject): void;
  /** A notification not tied to any request (goes on the standalone stream on HTTP). */
  notify(notification: Notification): Promise<void>;
  /** A server→client request not tied to any call (e.g. `ping`). */
  request(
    method: string,
    params: JsonObject | undefined,
    options?: { timeout?: number; signal?: AbortSignal },
  ): Promise<JsonObject>;
  /**
   * Whether a message not tied to any call ({@link ServerHost.notify}, {@link ServerHost.request})
   * can reach the client now. `false` on a stateful Streamable HTTP session whose client has no
   * standalone GET SSE stream open: the SDK transports drop such a message (or only store it in an
   * event store), so a request sent then can only time out. `true` otherwise (stdio, in-memory, other
   * transports). Optional: a host that omits it is taken as reachable.
   */
  reachable?(): boolean;
  /**
   * What the SDK's own input validation (`McpServer.validateToolInput`: the tool's input schema, and
   * the server's element bound) says of `args` for the tool `name`: `undefined` when they are valid,
   * else the problem in words (an unknown or disabled tool is a problem too). The SDK validates
   * again when the call reaches it and answers the problem itself; a middleware calls this to avoid
   * taking a resource (a lock, a Redis key) for a call that will fail validation. Optional: adapters
   * that cannot do it omit it.
   */
  validateToolInput?(name: string, args: JsonObject): Promise<string | undefined>;
  /** Run `fn` when the connection closes. */
  onClose(fn: () => void): void;
  /**
   * Close this server's connection (its transport; on stateful HTTP, the session). In-flight calls
   * abort with `Disconnected`, and `onClose` hooks run. Optional: adapters that cannot close omit it.
   */
  close?(): Promise<void>;
}

/** Request info for {@link ServerHost.handleRequest} handlers. */
export interface RequestInfo {
  readonly requestId: RequestId;
  readonly sessionId: string | undefined;
  readonly era: Era;
  readonly meta: JsonObject;
  readonly signal: AbortSignal;
  /** Authenticated principal (OAuth client id) when the transport has one (as {@link CallContext.principal}). */
  readonly principal?: string | undefined;
  /** Who the client is, for quotas and rate limits (as {@link CallContext.clientKey}). */
  readonly clientKey: string | undefined;
  /** The client's capabilities: the session's on legacy, the request's `_meta` ones on modern (`{}` when none). */
  readonly clientCapabilities?: JsonObject;
  /** Negotiated (legacy) or requested (modern) protocol version, when known. */
  readonly protocolVersion?: string | undefined;
  /**
   * Whether server→client requests can reach the client (as {@link CallContext.channel}): `false` on
   * 2026-07-28 and on stateless 2025 HTTP (a fresh server per request, no connection to bind to).
   */
  readonly channel?: boolean;
  /**
   * Send a notification related to this request (on Streamable HTTP it rides this request's response
   * stream). Resolves once sent; rejects when it cannot be sent.
   */
  notify?(notification: Notification): Promise<void>;
  /**
   * Send a server→client request related to this request (on Streamable HTTP it rides this request's
   * response stream), e.g. the elicitation of a 2025-11-25 task delivered while `tasks/result` waits.
   * @throws on the modern era (2026-07-28 has no server→client requests), when the client answers
   *   with a JSON-RPC error, on timeout or abort of `options.signal`.
   */
  request?(
    method: string,
    params: JsonObject,
    options?: { timeout?: number; signal?: AbortSignal },
  ): Promise<JsonObject>;
}

/**
 * A middleware: one concern, onion order (the first in the list is the outermost).
 *
 * All hooks are optional. `handle` wraps every call (`tools/call`, `prompts/get`, `resources/read`);
 * `onEvent` sees every outbound event of a call (handler's events reach inner middlewares first);
 * `setup` runs once per server instance when attached.
 */
export interface Middleware {
  /** Short name for diagnostics. */
  readonly name: string;
  /** Runs once for each server the middleware is attached to. */
  setup?(host: ServerHost): void;
  /**
   * `true` when this middleware's hooks, or free functions its package offers to handlers, need
   * `currentCall()`: the server's calls then run in AsyncLocalStorage (one `run` per call, however
   * many middlewares ask). Unless one asks, or `tether()` gets `{ asyncContext: true }`, calls run
   * without it (see `AttachOptions.asyncContext`).
   */
  readonly asyncContext?: boolean;
  /** Wrap one call. Call `next()` to run the rest of the chain and the handler. */
  handle?(ctx: CallContext, next: Next): Promise<CallResult>;
  /**
   * Whether `handle` runs for this call (e.g. only destructive tools, only calls with a progress
   * token). When it returns false the call passes this layer as if `handle` were absent, at no cost;
   * `onEvent`, `fields` and `onEnd` still apply. Called each time the chain reaches this layer, just
   * before it: once per call, and once more per re-entry when an outer middleware calls `next()`
   * again (an mrtr round). Truthy runs the layer; the answer must be synchronous (a promise fails
   * the call with a TypeError); a throw fails the call like a throw in `handle`. Code that calls
   * `handle` by hand must ask `when` first.
   */
  when?(ctx: CallContext): boolean;
  /**
   * Per-call context fields this middleware adds (declare them on `CallContext` by module
   * augmentation): `ctx[name]` runs `make(ctx)` on its first read in a call and keeps the value
   * for that call, so a call that never reads a field pays nothing for it. `make` may return
   * `undefined` for "not available yet" (it runs again on the next read). The outermost
   * middleware providing a name wins. Readable at any position in the chain (also before this
   * middleware's `handle` ran: `make` decides what that means), from the handler and from views
   * made with `Object.create(ctx)`; assigning `ctx[name] = value` replaces the value for that
   * call. A name the context already has (`name`, `args`, `signal`, …) is refused by `tether()`
   * with a TypeError. Like `signal`, fields are accessors: `{ ...ctx }` does not copy them.
   */
  fields?: Readonly<Record<string, (ctx: CallContext) => unknown>>;
  /**
   * The call's outcome is decided (the outermost layer settled with a result or an error), before
   * the response goes to the SDK: flush what must reach the client before it. Runs once for every
   * call of the server, also calls an outer middleware refused; hooks start innermost first and
   * run concurrently; a call a hook has nothing to do for costs no promise (return `undefined`).
   * It runs in the call's async context when the server has one (`currentCall()` works). A returned promise is awaited
   * before the response (keep it short: nothing bounds it); its rejection, like a throw, goes to
   * the server's `onError`, never to the client.
   *
   * Not a `finally` of your layer: when `cancel()` ends a call at an abort or a deadline, `onEnd`
   * runs then, while inner layers and the handler may still be running; release what `handle`
   * holds in `handle`. Sends from it reach the client only if the call was not aborted (after a
   * cancel, a disconnect or a deadline nothing more is sent for the call).
   */
  onEnd?(ctx: CallContext): void | Promise<void>;
  /** Observe, transform or drop an outbound event. Call `next(event)` to pass it on. */
  onEvent?(ctx: CallContext, event: OutboundEvent, next: (event: OutboundEvent) => Promise<void>): void | Promise<void>;
}

/** A plain function is accepted as a middleware with only a `handle` hook. */
export type MiddlewareLike = Middleware | ((ctx: CallContext, next: Next) => Promise<CallResult>);
