/**
 * The era- and SDK-neutral engine: the per-call context, onion composition with the chain gate,
 * the event tap, and the wire sink's rules. Adapters feed it a {@link CallSpec} and a {@link CallPort}.
 */
import { type CallAbortReason, Disconnected, isCallAbortReason } from './abort.js';
import { runInCall } from './als.js';
import { JsonRpcErrorCode, ProtocolError } from './errors.js';
import { DETACHED_FLAG } from './generator.js';
import type {
  CallContext,
  CallMethod,
  CallRequestOptions,
  CallResult,
  Era,
  JsonObject,
  Middleware,
  MiddlewareLike,
  Next,
  OutboundEvent,
  ProgressToken,
  RequestId,
  SentProgress,
  ServerHost,
  ToolAnnotations,
} from './types.js';
import { markWithoutAsyncContext } from './als.js';
import { diagnostics } from './diagnostics.js';

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

/** Normalize a middleware list. */
export function normalizeMiddlewares(list: ReadonlyArray<MiddlewareLike>): Middleware[] {
  return list.map((m, i) => {
    if (typeof m === 'function') return { name: m.name || `middleware#${i}`, handle: m };
    if (typeof m !== 'object' || m === null)
      throw new TypeError(`mcp-tether: middleware #${i} is not a middleware object or function`);
    return m;
  });
}

type FieldMaker = (ctx: CallContext) => unknown;

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
function defineFields(names: string[]): void {
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

/** Start the chain and follow its outcome (a module function: no closure per call). */
function settleWith<T>(
  dispatch: (i: number) => Promise<CallResult>,
  onFulfilled: (r: CallResult) => T,
  onRejected: (e: unknown) => T,
): Promise<T> {
  return dispatch(0).then(onFulfilled, onRejected);
}

/** A layer's `when`, truthy or falsy; a promise is a programming error (an async `when` would always pass). */
function wants(m: Middleware, call: Call): boolean {
  const answer: unknown = m.when!(call);
  if (answer === true || answer === false) return answer;
  if (typeof (answer as PromiseLike<unknown> | null | undefined)?.then === 'function') {
    // Its eventual rejection must not become an unhandled rejection (that ends a Node process).
    (answer as PromiseLike<unknown>).then(undefined, noop);
    throw new TypeError(`mcp-tether: middleware ${m.name}: when(ctx) returned a promise; it must answer synchronously`);
  }
  return Boolean(answer);
}

/** A composed middleware list, shared by every call of one attached server. */
export class Chain {
  readonly middlewares: readonly Middleware[];
  private readonly handlers: Middleware[];
  /** Indices (into `middlewares`) of middlewares with an `onEvent` hook, ascending. */
  private readonly tapIndex: number[];
  /** Middlewares with an `onEnd` hook, innermost first. */
  private readonly enders: Middleware[];
  /** Makers of the middlewares' per-call fields, by name (the outermost middleware's wins). */
  readonly fieldMakers: ReadonlyMap<string, FieldMaker>;
  /** Whether calls run in AsyncLocalStorage (`currentCall()` and the free functions work). */
  readonly asyncContext: boolean;

  /**
   * @param asyncContext `true`/`false` from `tether()`'s options; undefined: on when a middleware
   *   declares {@link Middleware.asyncContext}
   */
  constructor(middlewares: readonly Middleware[], asyncContext?: boolean) {
    this.middlewares = middlewares;
    this.handlers = middlewares.filter((m) => typeof m.handle === 'function');
    this.tapIndex = [];
    this.enders = middlewares.filter((m) => typeof m.onEnd === 'function').reverse();
    const makers = new Map<string, FieldMaker>();
    middlewares.forEach((m, i) => {
      if (typeof m.onEvent === 'function') this.tapIndex.push(i);
      if (m.fields === undefined) return;
      if (typeof m.fields !== 'object' || m.fields === null)
        throw new TypeError(`mcp-tether: middleware ${m.name}: fields must be an object of functions`);
      for (const [name, make] of Object.entries(m.fields)) {
        if (typeof make !== 'function')
          throw new TypeError(`mcp-tether: middleware ${m.name}: fields.${name} must be a function`);
        if (!makers.has(name)) makers.set(name, make);
      }
    });
    this.fieldMakers = makers;
    defineFields([...makers.keys()]);
    this.asyncContext = asyncContext ?? middlewares.some((m) => m.asyncContext === true);
    if (!this.asyncContext) markWithoutAsyncContext();
  }

  /** Make the context of one call. */
  newCall(spec: CallSpec, port: CallPort, onError?: (err: unknown) => void): Call {
    return new Call(spec, this, port, onError);
  }

  /**
   * Run one call: middlewares in list order around `invoke` (the handler), then `onFulfilled` or
   * `onRejected` with the outcome, all inside the call's async context when the chain has one (so
   * `onEnd` hooks see `currentCall()`). Before each middleware and before the handler, an aborted
   * call stops (the chain gate) with `signal.reason`.
   */
  run<T>(
    call: Call,
    invoke: () => Promise<CallResult>,
    onFulfilled: (result: CallResult) => T,
    onRejected: (err: unknown) => T,
  ): Promise<T> {
    const handlers = this.handlers;
    const dispatch = (i: number): Promise<CallResult> => {
      const aborted = call.abortReason;
      if (aborted !== undefined) return Promise.reject(aborted);
      try {
        let m = handlers[i];
        // A layer whose `when` declines this call is skipped: no `next` is made for it.
        while (m !== undefined && m.when !== undefined && !wants(m, call)) m = handlers[++i];
        if (m === undefined) return invoke();
        return m.handle!(call, () => dispatch(i + 1));
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return this.asyncContext
      ? runInCall(call, settleWith, dispatch, onFulfilled, onRejected)
      : settleWith(dispatch, onFulfilled, onRejected);
  }

  /**
   * The call's chain settled: start the middlewares' `onEnd` hooks (innermost first; returned
   * promises run concurrently). Returns a promise only if a hook returned one; it never rejects
   * (failures go to the call's `onError`).
   */
  end(call: Call): Promise<void> | undefined {
    let pending: Promise<void>[] | undefined;
    for (const m of this.enders) {
      try {
        const out = m.onEnd!(call);
        if (out !== undefined && typeof (out as Promise<void>).then === 'function') {
          pending ??= [];
          pending.push(Promise.resolve(out).catch((err: unknown) => call.reportError(err)));
        }
      } catch (err) {
        call.reportError(err);
      }
    }
    if (pending === undefined) return undefined;
    return pending.length === 1 ? pending[0] : Promise.all(pending).then(noop);
  }

  /** Pass an event outward from below tap position `below` (exclusive) to the sink. */
  dispatchEvent(call: Call, event: OutboundEvent, below: number): Promise<void> {
    const taps = this.tapIndex;
    let k = taps.length - 1;
    while (k >= 0 && taps[k]! >= below) k--;
    const step = (j: number, e: OutboundEvent): Promise<void> => {
      if (j < 0) return call.sink(e);
      const m = this.middlewares[taps[j]!]!;
      try {
        return Promise.resolve(m.onEvent!(call, e, (e2) => step(j - 1, e2))).catch((err) => call.reportError(err));
      } catch (err) {
        call.reportError(err);
        return Promise.resolve();
      }
    };
    return step(k, event);
  }

  indexOf(m: Middleware): number {
    return this.middlewares.indexOf(m);
  }
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
