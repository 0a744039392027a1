/**
 * The era- and SDK-neutral engine: onion composition with the chain gate, the event tap, and the
 * call's one outcome (its chain settling or its abort, whichever first). The per-call context is
 * {@link Call} (call.ts); adapters feed the engine a {@link CallSpec} and a {@link CallPort}.
 */
import { markWithoutAsyncContext, runInCall } from './als.js';
import { Call, type CallPort, type CallSpec, defineFields, type FieldMaker } from './call.js';
import type { CallResult, Middleware, MiddlewareLike, OutboundEvent } from './types.js';

export {
  Call,
  type CallPort,
  type CallSpec,
  callOf,
  contextOf,
  NO_ANNOTATIONS,
  NO_META,
  RESERVED_FIELDS,
} from './call.js';

const noop = () => {};

/** Normalize a middleware list. */
export function normalizeMiddlewares(list: ReadonlyArray<MiddlewareLike>): Middleware[] {
  return list.map((m, i) => {
    if (typeof m === 'function') return { name: m.name || `middleware#${i}`, handle: m };
    if (typeof m !== 'object' || m === null)
      throw new TypeError(`mcp-tether: middleware #${i} is not a middleware object or function`);
    return m;
  });
}

// The settle functions of the outcome promise being made: `new Promise(capture)` hands them over
// without a closure per call (the executor runs synchronously, before anything else can).
let capturedResolve: (value: unknown) => void = noop;
let capturedReject: (reason: unknown) => void = noop;
function capture(resolve: (value: unknown) => void, reject: (reason: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** Start the chain and follow its settlement (a module function: no closure per call). */
function start(
  dispatch: (i: number) => Promise<CallResult>,
  onInner: (r: CallResult) => void,
  onInnerError: (e: unknown) => void,
): void {
  dispatch(0).then(onInner, onInnerError);
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
  /** Middlewares with an `onResult` hook and their positions, innermost first. */
  private readonly resultHooks: Array<{ m: Middleware; at: number }>;
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
    this.resultHooks = [];
    for (let i = middlewares.length - 1; i >= 0; i--) {
      const m = middlewares[i]!;
      if (typeof m.onResult === 'function') this.resultHooks.push({ m, at: middlewares.indexOf(m) });
    }
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
   * Run one call: middlewares in list order around `invoke` (the handler), all inside the call's
   * async context when the chain has one (so hooks see `currentCall()`). Before each middleware and
   * before the handler, an aborted call stops (the chain gate) with `signal.reason`.
   *
   * The call ends at the first of: the chain settling (its result through the middlewares'
   * `onResult` hooks, innermost first), or the call aborting (with the reason; with the deadline
   * refusal for a reason that still answers). Then `onFulfilled` or `onRejected` turn the outcome
   * into what the SDK gets; the returned promise settles with that. After an abort the chain and
   * the handler may still run (nothing they produce is sent); `innerDone` runs once the chain
   * itself settled, whichever came first.
   */
  run<T>(
    call: Call,
    invoke: () => Promise<CallResult>,
    onFulfilled: (result: CallResult) => T,
    onRejected: (err: unknown) => T,
    innerDone: (call: Call) => void,
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
    const outcome = new Promise<unknown>(capture) as Promise<T>;
    call.ending(capturedResolve, capturedReject, onFulfilled, onRejected);
    const hooks = this.resultHooks;
    const onInner = (result: CallResult): void => {
      innerDone(call);
      if (hooks.length === 0) call.endWith(false, result);
      else this.seeResult(call, result, 0, dispatch);
    };
    const onInnerError = (err: unknown): void => {
      innerDone(call);
      call.endWith(true, err);
    };
    if (this.asyncContext) runInCall(call, start, dispatch, onInner, onInnerError);
    else start(dispatch, onInner, onInnerError);
    return outcome;
  }

  /**
   * Pass a call's result through the `onResult` hooks from hook `k` on (innermost first), then end
   * the call with it. A hook's `again()` runs the chain again from just inside its middleware.
   */
  private seeResult(call: Call, result: CallResult, k: number, dispatch: (i: number) => Promise<CallResult>): void {
    const hooks = this.resultHooks;
    for (; k < hooks.length; k++) {
      if (call.ended) return;
      const { m, at } = hooks[k]!;
      let out: CallResult | Promise<CallResult> | undefined;
      try {
        out = m.onResult!(call, result, () => dispatch(at + 1));
      } catch (err) {
        call.endWith(true, err);
        return;
      }
      if (out === undefined) continue;
      if (typeof (out as Promise<CallResult>).then === 'function') {
        const next = k + 1;
        (out as Promise<CallResult>).then(
          (r) => this.seeResult(call, r, next, dispatch),
          (err: unknown) => call.endWith(true, err),
        );
        return;
      }
      result = out as CallResult;
    }
    call.endWith(false, result);
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
