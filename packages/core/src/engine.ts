/**
 * The era- and SDK-neutral engine: onion composition of a middleware list ({@link Chain}) with the
 * chain gate, the `when` filters, the `onEnd` hooks, the event tap, and the accessors of middleware
 * fields on the context. The per-call context itself ({@link Call}, what adapters feed it, the wire
 * sink's rules) is in `call.ts`; adapters make calls through {@link Chain.newCall}.
 */
import { markWithoutAsyncContext, runInCall } from './als.js';
import { Call, type CallChain, type CallPort, type CallSpec, type FieldMaker, noop } from './call.js';
import type { CallResult, Middleware, MiddlewareLike, OutboundEvent } from './types.js';

/** Normalize a middleware list. */
export function normalizeMiddlewares(list: ReadonlyArray<MiddlewareLike>): Middleware[] {
  return list.map((m, i) => {
    if (typeof m === 'function') return { name: m.name || `middleware#${i}`, handle: m };
    if (typeof m !== 'object' || m === null)
      throw new TypeError(`mcp-tether: middleware #${i} is not a middleware object or function`);
    return m;
  });
}

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
export class Chain implements CallChain {
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
