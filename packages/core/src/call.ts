/**
 * The per-call context: the {@link Call} every middleware and handler of one call shares, what an
 * adapter feeds it (a {@link CallSpec}, and the {@link CallPort} it sends through), the lazily made
 * parts (signal, state, middleware fields, bound `abort`/`emit`/`request`), the abort path, and the
 * wire sink's rules (what may go out, and when). It knows its chain only through {@link CallChain},
 * so this file imports nothing from the engine (`engine.ts` composes the middlewares and makes calls).
 */
import { type CallAbortReason, Disconnected, isCallAbortReason } from './abort.js';
import { diagnostics } from './diagnostics.js';
import { JsonRpcErrorCode, ProtocolError } from './errors.js';
import { DETACHED_FLAG } from './generator.js';
import type {
  CallContext,
  CallMethod,
  CallRequestOptions,
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

/** `tether:progress` from the wire sink (what actually went out, or was refused there). */
function publishProgress(ctx: CallContext, kind: 'sent' | 'dropped', progress: unknown, total: unknown): void {
  diagnostics.progress.publish({
    ctx,
    kind,
    progress: typeof progress === 'number' ? progress : Number.NaN,
    total: typeof total === 'number' ? total : undefined,
    source: 'core',
  });
}

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

/** A function that does nothing (a shared default: no closure per use). */
export const noop = () => {};

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

/** The maker of one middleware field's per-call value ({@link Middleware.fields}). */
export type FieldMaker = (ctx: CallContext) => unknown;

/** What a call needs of its chain (`Chain` in `engine.ts`): its middlewares, field makers and event tap. */
export interface CallChain {
  readonly middlewares: readonly Middleware[];
  /** Makers of the middlewares' per-call fields, by name. */
  readonly fieldMakers: ReadonlyMap<string, FieldMaker>;
  /** Pass an event outward from below tap position `below` (exclusive) to the sink. */
  dispatchEvent(call: Call, event: OutboundEvent, below: number): Promise<void>;
  indexOf(m: Middleware): number;
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
    private readonly chain: CallChain,
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
      if (
        typeof progress !== 'number' ||
        !Number.isFinite(progress) ||
        (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total) || progress > total)) ||
        (this.lastProgress !== undefined && progress <= this.lastProgress.progress)
      ) {
        if (diagnostics.progress.hasSubscribers) publishProgress(this, 'dropped', progress, total);
        return Promise.resolve();
      }
      const message = typeof params.message === 'string' ? params.message : undefined;
      params = { ...params, progressToken: this.progressToken };
      this.lastProgress = { progress, total: total as number | undefined, message, at: Date.now() };
      if (diagnostics.progress.hasSubscribers) publishProgress(this, 'sent', progress, total);
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
