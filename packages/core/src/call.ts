/**
 * The per-call context ({@link Call}) and what an adapter hands the engine about a call: its
 * {@link CallSpec} and the {@link CallPort} it sends through.
 */
import { type CallAbortReason, DeadlineExceeded, Disconnected, isCallAbortReason } from './abort.js';
import type { Chain } from './engine.js';
import { ErrorCode, JsonRpcErrorCode, ProtocolError, refuse } from './errors.js';
import { DETACHED_FLAG } from './generator.js';
import type {
  CallContext,
  CallMethod,
  CallRequestOptions,
  CallResult,
  Era,
  JsonObject,
  Middleware,
  OutboundEvent,
  ProgressToken,
  RequestId,
  SentProgress,
  ServerHost,
  ToolAnnotations,
} from './types.js';

/** What an adapter knows about a call before it starts. */
export interface CallSpec {
  method: CallMethod;
  name: string;
  args: JsonObject;
  annotations: ToolAnnotations;
  requestId: RequestId;
  sessionId: string | undefined;
  principal: string | undefined;
  clientKey: string | undefined;
  era: Era;
  protocolVersion: string | undefined;
  meta: JsonObject;
  /** `params.task` of a 2025-11-25 task-augmented request, when present. */
  task?: JsonObject | undefined;
  clientCapabilities: JsonObject;
  channel: boolean;
  inputResponses?: Record<string, JsonObject> | undefined;
  requestState?: unknown;
  /** The SDK's own per-request object, for escape hatches. */
  raw: unknown;
  /** The server host the call arrived on. */
  host: ServerHost;
}

/**
 * What an adapter does for the calls of one attached server. One object serves every call (no
 * per-call closures); the adapter finds its SDK objects through `call.raw`.
 */
export interface CallPort {
  /** Send a notification related to the request. Must not throw synchronously. */
  send(call: Call, notification: { method: string; params: JsonObject }): Promise<void>;
  /** Send a server→client request related to the request, bound to `signal`. */
  request(
    call: Call,
    method: string,
    params: JsonObject,
    options: { timeout?: number; signal: AbortSignal },
  ): Promise<JsonObject>;
  /** The call was aborted with this reason (adapters suppress the response unless `reason.respond`). */
  aborted(call: Call, reason: CallAbortReason): void;
}

const noop = () => {};

/**
 * Where a tool callback finds its call without AsyncLocalStorage: a property of the SDK's
 * per-request object (`call.raw`: v1 `RequestHandlerExtra`, v2 `ServerContext`, which the SDK hands
 * on to the callback), set when the call's context is made.
 */
const CALL_OF = Symbol('mcp-tether.call-of');

/** @internal The call whose SDK per-request object is `raw` (what the SDK passed to a tool callback), if any. */
export function callOf(raw: unknown): Call | undefined {
  return typeof raw === 'object' && raw !== null ? (raw as Record<symbol, Call | undefined>)[CALL_OF] : undefined;
}

/**
 * The context of the call whose SDK per-request object the SDK handed to a callback: the last
 * argument of a resource or prompt callback (v1 `RequestHandlerExtra`, v2 `ServerContext`). Works
 * without async context (where {@link currentCall} needs `asyncContext`); tool callbacks get the
 * context itself as their second argument.
 * @returns undefined for an object no tethered call made
 */
export function contextOf(raw: unknown): CallContext | undefined {
  return callOf(raw);
}

/** Shared, frozen `{}` for a call without annotations or `_meta` (no object per call). */
export const NO_ANNOTATIONS = Object.freeze({}) as ToolAnnotations;
export const NO_META = Object.freeze({}) as JsonObject;

export type FieldMaker = (ctx: CallContext) => unknown;

/**
 * Names a middleware field may not take: the context's own data properties (fields of {@link Call}
 * instances, which would hide a prototype accessor), its internals, and what the v2 adapter puts
 * on the tool callback's view. (Methods and accessors are found on `Call.prototype`.) A test checks
 * this list against a real context.
 */
export const RESERVED_FIELDS: ReadonlySet<string> = new Set([
  'constructor',
  'method',
  'name',
  'toolName',
  'args',
  'annotations',
  'requestId',
  'sessionId',
  'principal',
  'clientKey',
  'era',
  'protocolVersion',
  'meta',
  'progressToken',
  'task',
  'clientCapabilities',
  'channel',
  'startedAt',
  'raw',
  'host',
  'inputResponses',
  'requestState',
  'lastProgress',
  'completed',
  'ab',
  'chain',
  'port',
  'onError',
  'mcpReq',
  'http',
  // A context with a `then` would be a thenable: `await ctx` and promise resolution would call it.
  'then',
]);

/** Middleware field names defined (as accessors) on `Call.prototype` so far. */
const definedFields = new Set<string>();

/**
 * Define the accessors of middleware fields on `Call.prototype` (once per name, whatever the chain):
 * every call is then a plain `Call`, one class and one object shape for every server of the process
 * (a subclass per set of names made the contexts of different servers polymorphic). A name read on
 * a call whose chain has no maker for it reads `undefined`.
 */
export function defineFields(names: string[]): void {
  for (const name of names) {
    if (definedFields.has(name)) continue;
    if (name in Call.prototype || RESERVED_FIELDS.has(name)) {
      throw new TypeError(
        `mcp-tether: a middleware field may not be named ${JSON.stringify(name)} (the context already has it)`,
      );
    }
  }
  for (const name of names) {
    if (definedFields.has(name)) continue;
    Object.defineProperty(Call.prototype, name, {
      configurable: true,
      enumerable: false,
      get(this: Call) {
        return this.field(name);
      },
      set(this: Call, value: unknown) {
        this.setField(name, value);
      },
    });
    definedFields.add(name);
  }
}

/** What a call aborted with a reason that still answers ({@link CallAbortReason.respond}) answers. */
function abortAnswer(call: Call, reason: CallAbortReason): CallResult {
  return refuse(
    call,
    ErrorCode.TIMEOUT,
    reason instanceof DeadlineExceeded
      ? `The call did not finish within its deadline of ${String(reason.timeoutMs)} ms and was stopped.`
      : `The call was stopped: ${reason.message}.`,
    reason instanceof DeadlineExceeded ? { timeoutMs: reason.timeoutMs } : undefined,
  );
}

/**
 * Lazily made parts of one call, kept in their own object: a view of the context made with
 * `Object.create(call)` (the v2 adapter hands one to tool callbacks) reads and updates the same ones.
 */
interface Lazy {
  /** Created on the first read of `signal` (an `AbortSignal` costs several µs on Node 20). */
  controller: AbortController | undefined;
  reason: CallAbortReason | undefined;
  listeners: Array<(reason: CallAbortReason, ctx: CallContext) => void> | undefined;
  /** Created on the first read of `state`. */
  state: Map<symbol, unknown> | undefined;
  /** Values of middleware fields read (or assigned) so far. */
  fields: Map<string, unknown> | undefined;
  /** The call itself (a view's `this` is the view). */
  readonly self: Call;
  /** `abort`, `emit`, `request` bound to the call, made on first read (they are handed around detached). */
  abort: ((reason: CallAbortReason) => void) | undefined;
  emit: ((event: OutboundEvent, origin?: Middleware) => Promise<void>) | undefined;
  request: ((method: string, params: JsonObject, options?: CallRequestOptions) => Promise<JsonObject>) | undefined;
  /** Settle the outcome promise {@link Chain.run} returned; undefined once the call ended. */
  resolve: ((value: unknown) => void) | undefined;
  reject: ((reason: unknown) => void) | undefined;
  onFulfilled: ((result: CallResult) => unknown) | undefined;
  onRejected: ((err: unknown) => unknown) | undefined;
}

/** The per-call context. One instance per call; never shared. */
export class Call implements CallContext {
  readonly method: CallMethod;
  readonly name: string;
  readonly toolName: string | undefined;
  readonly args: JsonObject;
  readonly annotations: ToolAnnotations;
  readonly requestId: RequestId;
  readonly sessionId: string | undefined;
  readonly principal: string | undefined;
  readonly clientKey: string | undefined;
  readonly era: Era;
  readonly protocolVersion: string | undefined;
  readonly meta: JsonObject;
  readonly progressToken: ProgressToken | undefined;
  readonly task: JsonObject | undefined;
  readonly clientCapabilities: JsonObject;
  readonly channel: boolean;
  readonly startedAt: number;
  readonly raw: unknown;
  readonly host: ServerHost;
  inputResponses: Record<string, JsonObject> | undefined;
  requestState: unknown;
  lastProgress: SentProgress | undefined = undefined;
  completed = false;

  private readonly ab: Lazy;

  constructor(
    spec: CallSpec,
    private readonly chain: Chain,
    private readonly port: CallPort,
    private readonly onError: (err: unknown) => void = noop,
  ) {
    this.method = spec.method;
    this.name = spec.name;
    this.toolName = spec.method === 'tools/call' ? spec.name : undefined;
    this.args = spec.args;
    this.annotations = spec.annotations;
    this.requestId = spec.requestId;
    this.sessionId = spec.sessionId;
    this.principal = spec.principal;
    this.clientKey = spec.clientKey;
    this.era = spec.era;
    this.protocolVersion = spec.protocolVersion;
    this.meta = spec.meta;
    const token = spec.meta.progressToken;
    this.progressToken =
      typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token)) ? token : undefined;
    this.task = spec.task;
    this.clientCapabilities = spec.clientCapabilities;
    this.channel = spec.channel;
    this.inputResponses = spec.inputResponses;
    this.requestState = spec.requestState;
    this.raw = spec.raw;
    if (typeof spec.raw === 'object' && spec.raw !== null) (spec.raw as Record<symbol, unknown>)[CALL_OF] = this;
    this.host = spec.host;
    this.startedAt = Date.now();
    this.ab = {
      controller: undefined,
      reason: undefined,
      listeners: undefined,
      state: undefined,
      fields: undefined,
      self: this,
      abort: undefined,
      emit: undefined,
      request: undefined,
      resolve: undefined,
      reject: undefined,
      onFulfilled: undefined,
      onRejected: undefined,
    };
  }

  // `abort`, `emit` and `request` are handed around detached (`const { emit } = ctx`): each is
  // bound to the call once, on first read.

  get abort(): (reason: CallAbortReason) => void {
    const ab = this.ab;
    ab.abort ??= ab.self.abortCall.bind(ab.self);
    return ab.abort;
  }

  get emit(): (event: OutboundEvent, origin?: Middleware) => Promise<void> {
    const ab = this.ab;
    ab.emit ??= ab.self.emitEvent.bind(ab.self);
    return ab.emit;
  }

  get request(): (method: string, params: JsonObject, options?: CallRequestOptions) => Promise<JsonObject> {
    const ab = this.ab;
    ab.request ??= ab.self.requestClient.bind(ab.self);
    return ab.request;
  }

  /** The call's signal, created on first read (already aborted if the call was). */
  get signal(): AbortSignal {
    const ab = this.ab;
    let c = ab.controller;
    if (c === undefined) {
      c = new AbortController();
      ab.controller = c;
      if (ab.reason !== undefined) c.abort(ab.reason);
    }
    return c.signal;
  }

  /** Scratch space for middlewares, made on first read. */
  get state(): Map<symbol, unknown> {
    this.ab.state ??= new Map();
    return this.ab.state;
  }

  /** @internal A middleware field ({@link Middleware.fields}): made on first read, then kept. */
  field(name: string): unknown {
    const ab = this.ab;
    const fields = ab.fields;
    if (fields !== undefined && fields.has(name)) return fields.get(name);
    const make = ab.self.chain.fieldMakers.get(name);
    if (make === undefined) return undefined; // a field of another server's chain
    const value = make(ab.self);
    if (value !== undefined) {
      ab.fields ??= new Map();
      ab.fields.set(name, value);
    }
    return value;
  }

  /** @internal */
  setField(name: string, value: unknown): void {
    this.ab.fields ??= new Map();
    this.ab.fields.set(name, value);
  }

  get abortReason(): CallAbortReason | undefined {
    return this.ab.reason;
  }

  onAbort(listener: (reason: CallAbortReason, ctx: CallContext) => void): void {
    const ab = this.ab;
    if (ab.reason !== undefined) {
      this.runListener(listener, ab.reason);
      return;
    }
    // An exact-size array for the usual single listener (`[]` grows to 17 slots on its first push).
    if (ab.listeners === undefined) ab.listeners = [listener];
    else ab.listeners.push(listener);
  }

  private abortCall(reason: CallAbortReason): void {
    const ab = this.ab;
    if (ab.reason !== undefined) return;
    const r = isCallAbortReason(reason) ? reason : new Disconnected(String(reason));
    ab.reason = r;
    ab.controller?.abort(r);
    const listeners = ab.listeners;
    ab.listeners = undefined;
    if (listeners !== undefined) for (const l of listeners) this.runListener(l, r);
    try {
      this.port.aborted(this, r);
    } catch (err) {
      this.reportError(err);
    }
    // The call ends at its abort. The chain and the handler may run on: the connection counts the
    // call in flight until the chain settled (ServerHost.inFlight); inner layers keep what they hold.
    if (ab.resolve === undefined) return;
    if (!r.respond) {
      this.endWith(true, r);
      return;
    }
    let answer: CallResult;
    try {
      answer = abortAnswer(this, r);
    } catch (err) {
      this.endWith(true, err); // prompts and resources: a JSON-RPC error
      return;
    }
    this.endWith(false, answer);
  }

  /** @internal {@link Chain.run} made the call's outcome promise: these settle it. */
  ending(
    resolve: (value: unknown) => void,
    reject: (reason: unknown) => void,
    onFulfilled: (result: CallResult) => unknown,
    onRejected: (err: unknown) => unknown,
  ): void {
    const ab = this.ab;
    ab.resolve = resolve;
    ab.reject = reject;
    ab.onFulfilled = onFulfilled;
    ab.onRejected = onRejected;
  }

  /** @internal Whether the call's outcome is decided (or it never ran through {@link Chain.run}). */
  get ended(): boolean {
    return this.ab.resolve === undefined;
  }

  /** @internal End the call (once): its outcome through `onFulfilled`/`onRejected` to the SDK. */
  endWith(failed: boolean, value: unknown): void {
    const ab = this.ab;
    const resolve = ab.resolve;
    if (resolve === undefined) return;
    const reject = ab.reject!;
    const settle = failed ? ab.onRejected! : ab.onFulfilled!;
    ab.resolve = ab.reject = ab.onFulfilled = ab.onRejected = undefined;
    let out: unknown;
    try {
      out = settle(value as CallResult);
    } catch (err) {
      reject(err);
      return;
    }
    resolve(out);
  }

  private runListener(listener: (reason: CallAbortReason, ctx: CallContext) => void, reason: CallAbortReason): void {
    try {
      listener(reason, this.ab.self);
    } catch (err) {
      this.reportError(err);
    }
  }

  private emitEvent(event: OutboundEvent, origin?: Middleware): Promise<void> {
    // A detached call's events still pass the taps after the response (the jobs layer turns them
    // into job status); the sink sends nothing once the call completed.
    if (
      (this.completed && (this as unknown as Record<symbol, unknown>)[DETACHED_FLAG] !== true) ||
      this.ab.reason !== undefined
    )
      return Promise.resolve();
    let below = this.chain.middlewares.length;
    if (origin) {
      const i = this.chain.indexOf(origin);
      if (i >= 0) below = i;
    }
    return this.chain.dispatchEvent(this, event, below);
  }

  private requestClient(method: string, params: JsonObject, options: CallRequestOptions = {}): Promise<JsonObject> {
    const aborted = this.ab.reason;
    if (aborted !== undefined) return Promise.reject(aborted);
    // Nothing may ride the request's stream after its response (a detached job's handler asking).
    // (Without a channel the adapter's own refusal says why.)
    if (this.completed && this.channel)
      return Promise.reject(
        new ProtocolError(
          JsonRpcErrorCode.InternalError,
          `cannot send ${method}: the request this call arrived on was already answered`,
        ),
      );
    return this.port.request(this, method, params, { timeout: options.timeout, signal: this.signal });
  }

  /**
   * @internal The wire sink: the last stop of every event. Only `notification` events are sent;
   * progress notifications obey the spec (token present and echoed exactly, finite, strictly
   * increasing, never above `total`); nothing is sent after completion or abort.
   */
  sink(event: OutboundEvent): Promise<void> {
    if (event.type !== 'notification') return Promise.resolve();
    if (this.completed || this.ab.reason !== undefined) return Promise.resolve();
    const n = event.notification;
    let params: JsonObject = n.params ?? {};
    if (n.method === 'notifications/progress') {
      if (this.progressToken === undefined) return Promise.resolve();
      const progress = params.progress;
      const total = params.total;
      if (typeof progress !== 'number' || !Number.isFinite(progress)) return Promise.resolve();
      if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total) || progress > total))
        return Promise.resolve();
      const last = this.lastProgress;
      if (last && progress <= last.progress) return Promise.resolve();
      const message = typeof params.message === 'string' ? params.message : undefined;
      params = { ...params, progressToken: this.progressToken };
      this.lastProgress = { progress, total: total as number | undefined, message, at: Date.now() };
    }
    return this.port.send(this, { method: n.method, params }).catch((err) => this.reportError(err));
  }

  /** @internal */
  complete(): void {
    this.completed = true;
  }

  /** @internal */
  reportError(err: unknown): void {
    try {
      this.onError(err);
    } catch {
      // never let error reporting take a call down
    }
  }
}
