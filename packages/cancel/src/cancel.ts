import {
  type CallAbortReason,
  type CallContext,
  type CallResult,
  DeadlineExceeded,
  diagnostics,
  ErrorCode,
  type Middleware,
  type Next,
  ShuttingDown,
  lingeringWork,
  refuse,
} from '@mcp-tether/core';

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * Register a cleanup for this call (added by `@mcp-tether/cancel`). It runs **exactly once**:
     * - when the call completes (result or error): right after the handler settled, before the
     *   response is sent (a returned promise is not awaited by the response, but `drain()` waits for it);
     * - when the call is aborted (client cancel, disconnect, deadline, shutdown): right after the
     *   abort (in a microtask), without waiting for the handler to return.
     *
     * Cleanups start in reverse order of registration (last registered first) and are not awaited
     * one by one. A cleanup registered after the call ended runs at once. Errors thrown (or
     * rejected) by a cleanup go to the `onError` option of `cancel()`; they never reach the client
     * or another call.
     *
     * @throws TypeError if `cleanup` is not a function
     */
    defer(cleanup: () => unknown): void;
  }
}

/** Per-tool deadlines: a map from tool (or prompt) name to ms, or a function of the call. */
export type Timeouts = Readonly<Record<string, number>> | ((ctx: CallContext) => number | undefined);

/** Options of {@link cancel}. */
export interface CancelOptions {
  /**
   * Default deadline of every call, in ms, measured from when the call entered the chain
   * (`ctx.startedAt`). None by default. `Infinity` means none.
   */
  timeoutMs?: number;
  /**
   * Per-tool deadlines in ms, overriding `timeoutMs`. A record keyed by tool name (prompt name or
   * resource URI for the other methods), or a function returning ms, or `undefined` to fall back
   * to `timeoutMs`. `Infinity` means no deadline for that call.
   */
  timeouts?: Timeouts;
  /**
   * Receives errors thrown or rejected by `ctx.defer` cleanups. Default: `console.error` (stderr,
   * so a stdio server's protocol stream stays clean).
   */
  onError?: (error: unknown, ctx: CallContext) => void;
}

/** Result of {@link CancelMiddleware.drain}. */
export interface DrainResult {
  /** Calls this drain aborted with `ShuttingDown` (calls already aborted for another reason are not counted). */
  aborted: number;
  /** Calls still unfinished when the drain returned (handler still running, or a cleanup still pending). */
  pending: number;
}

/** The middleware returned by {@link cancel}: a {@link Middleware} with shutdown and counts. */
export interface CancelMiddleware extends Middleware {
  readonly name: 'cancel';
  handle(ctx: CallContext, next: Next): Promise<CallResult>;
  /**
   * Graceful shutdown, across every server this instance is attached to:
   * 1. from now on, every new call is refused at once: an `isError` tool result with code
   *    `SHUTTING_DOWN` (a JSON-RPC error with `data.code` for prompts and resources);
   * 2. every call in flight is aborted with `ShuttingDown` (so no response is sent for it: close
   *    your transports afterwards, and clients see their pending requests fail);
   * 3. waits until those calls finished (handler settled, `defer` cleanups settled), at most
   *    `timeoutMs`.
   *
   * Draining is one-way: the instance never takes calls again. Calling `drain` again is harmless.
   * @param timeoutMs the longest wait, in ms (default 10 000; `Infinity` waits for all)
   * @throws TypeError (rejects) if `timeoutMs` is negative or NaN
   */
  drain(timeoutMs?: number): Promise<DrainResult>;
  /** Calls that entered this middleware and have not finished yet (handler or cleanups). */
  readonly inFlight: number;
  /** True once `drain()` was called. */
  readonly draining: boolean;
}

/** Where (a property of the call) the outermost cancel() keeps its entry. */
const STATE = Symbol('mcp-tether.cancel');
/** setTimeout overflows past 2^31-1 ms (it would fire at once); longer deadlines mean none. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The calls of one `cancel()` instance that have not finished: an intrusive doubly linked list
 * (O(1) add and remove, nothing allocated per call, unlike a `Set` whose table is reallocated when
 * it empties).
 */
class LiveList {
  head: CallEntry | undefined = undefined;
  size = 0;

  add(e: CallEntry): void {
    e.next = this.head;
    if (this.head !== undefined) this.head.prev = e;
    this.head = e;
    this.size++;
  }

  remove(e: CallEntry): void {
    if (e.prev !== undefined) e.prev.next = e.next;
    else if (this.head === e) this.head = e.next;
    else return; // not in the list
    if (e.next !== undefined) e.next.prev = e.prev;
    e.prev = e.next = undefined;
    this.size--;
  }

  toArray(): CallEntry[] {
    const out: CallEntry[] = [];
    for (let e = this.head; e !== undefined; e = e.next) out.push(e);
    return out;
  }
}

/** Bookkeeping for one call: its cleanups and whether it finished. */
class CallEntry {
  finished = false;
  prev: CallEntry | undefined = undefined;
  next: CallEntry | undefined = undefined;
  private waiters: Array<() => void> | undefined = undefined;
  private cleanups: Array<() => unknown> | undefined = undefined;
  private cleaned = false;
  private innerSettled = false;
  private pending = 0;

  constructor(
    readonly ctx: CallContext,
    private readonly report: (error: unknown, ctx: CallContext) => void,
    private readonly onFinished: (entry: CallEntry) => void,
  ) {}

  /** `performance.now()` at the abort, when a diagnostics subscriber listens (for the latency to the handler settling). */
  abortedAt: number | undefined = undefined;
  /** The settle functions of the promise `handle` returned, and the deadline's timer. */
  resolve: (value: CallResult) => void = noop;
  reject: (reason: unknown) => void = noop;
  timer: ReturnType<typeof setTimeout> | undefined = undefined;

  /** Resolves once the call finished (handler settled, cleanups settled). Made on demand (drain). */
  get done(): Promise<void> {
    if (this.finished) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters ??= [];
      this.waiters.push(resolve);
    });
  }

  defer(cleanup: () => unknown): void {
    if (typeof cleanup !== 'function') throw new TypeError('ctx.defer(cleanup): cleanup must be a function');
    if (this.cleaned) this.invoke(cleanup);
    else {
      this.cleanups ??= [];
      this.cleanups.push(cleanup);
    }
  }

  /** Run every registered cleanup, once. */
  runCleanups(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    const list = this.cleanups;
    this.cleanups = undefined;
    if (list !== undefined) for (let i = list.length - 1; i >= 0; i--) this.invoke(list[i]!);
    this.maybeFinish();
  }

  /** The call aborted: it ends now (a deadline with a refusal, anything else with the reason). */
  aborted(reason: CallAbortReason): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (diagnostics.cancel.hasSubscribers) {
      this.abortedAt = performance.now();
      diagnostics.cancel.publish({ ctx: this.ctx, phase: 'aborted', who: reason.kind, why: reason.message });
    }
    // Cleanups run right after the abort, not when the handler eventually returns.
    queueMicrotask(() => this.runCleanups());
    if (reason.kind !== 'timeout') {
      this.reject(reason);
      return;
    }
    try {
      this.resolve(timeoutRefusal(this.ctx, reason as DeadlineExceeded));
    } catch (err) {
      this.reject(err); // prompts and resources: refuse() throws a JSON-RPC error
    }
  }

  /** `next()` settled. An abandoned generator handler may still run after it: wait for that too. */
  settle(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    const lingering = lingeringWork(this.ctx);
    if (lingering) void lingering.then(() => this.innerDone());
    else this.innerDone();
  }

  /** The inner chain (other middlewares and the handler) settled. */
  innerDone(): void {
    this.innerSettled = true;
    const at = this.abortedAt;
    if (at !== undefined && diagnostics.cancel.hasSubscribers) {
      const reason = this.ctx.abortReason;
      diagnostics.cancel.publish({
        ctx: this.ctx,
        phase: 'settled',
        who: reason?.kind ?? 'cancelled',
        why: reason?.message ?? '',
        latencyMs: performance.now() - at,
      });
    }
    this.runCleanups();
    this.maybeFinish();
  }

  private invoke(cleanup: () => unknown): void {
    let out: unknown;
    try {
      out = cleanup();
    } catch (err) {
      this.reportSafely(err);
      return;
    }
    if (typeof (out as PromiseLike<unknown> | undefined)?.then === 'function') {
      this.pending++;
      Promise.resolve(out)
        .catch((err: unknown) => this.reportSafely(err))
        .finally(() => {
          this.pending--;
          this.maybeFinish();
        });
    }
  }

  private reportSafely(error: unknown): void {
    try {
      this.report(error, this.ctx);
    } catch {
      // a failing error reporter must not take the call down
    }
  }

  private maybeFinish(): void {
    if (this.finished || !this.cleaned || !this.innerSettled || this.pending > 0) return;
    this.finished = true;
    this.onFinished(this);
    const waiters = this.waiters;
    this.waiters = undefined;
    if (waiters !== undefined) for (const w of waiters) w();
  }
}

function timeoutRefusal(ctx: CallContext, reason: DeadlineExceeded): CallResult {
  return refuse(
    ctx,
    ErrorCode.TIMEOUT,
    `The call did not finish within its deadline of ${String(reason.timeoutMs)} ms and was stopped.`,
    {
      timeoutMs: reason.timeoutMs,
    },
  );
}

/** The one abort listener of every call (no closure per call): the outermost cancel()'s entry ends the call. */
function endAtAbort(reason: CallAbortReason, ctx: CallContext): void {
  (ctx as unknown as Record<symbol, CallEntry | undefined>)[STATE]?.aborted(reason);
}

const noop = (): void => {};

/** `ctx.defer` of a call: bound to the call's entry, once the outermost cancel() took the call. */
function deferOf(ctx: CallContext): CallContext['defer'] | undefined {
  const entry = (ctx as unknown as Record<symbol, CallEntry | undefined>)[STATE];
  return entry === undefined ? undefined : (cleanup) => entry.defer(cleanup);
}

function checkMs(value: unknown, what: string): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new TypeError(
      `@mcp-tether/cancel: ${what} must be a positive number of ms or Infinity, got ${String(value)}`,
    );
  }
}

/**
 * @throws TypeError if `timeoutMs` or a `timeouts` value is not a positive number (or Infinity)
 */
function checkOptions(timeoutMs: number | undefined, timeouts: Timeouts | undefined): void {
  if (timeoutMs !== undefined) checkMs(timeoutMs, 'timeoutMs');
  if (timeouts !== undefined && typeof timeouts !== 'function') {
    if (typeof timeouts !== 'object' || timeouts === null)
      throw new TypeError('@mcp-tether/cancel: timeouts must be a record of ms by tool name, or a function');
    for (const [name, ms] of Object.entries(timeouts)) checkMs(ms, `timeouts[${JSON.stringify(name)}]`);
  }
}

/** The default `onError`: a failed cleanup goes to stderr (a stdio server's protocol stream stays clean). */
function logCleanupError(error: unknown, ctx: CallContext): void {
  console.error(
    `[@mcp-tether/cancel] a cleanup of ${ctx.method} ${ctx.name} (id ${String(ctx.requestId)}) failed:`,
    error,
  );
}

/** The state of one `cancel()` instance, shared by every server it is attached to. */
class Canceller {
  /** The calls that have not finished. */
  readonly live = new LiveList();
  /** True once `drain()` was called. */
  draining = false;
  /** No deadline can apply (no option gives one): calls skip the lookup. */
  readonly noDeadlines: boolean;
  /** A finished call leaves the live list (one function per instance, handed to each entry). */
  readonly finished = (e: CallEntry): void => this.live.remove(e);

  constructor(
    readonly timeoutMs: number | undefined,
    readonly timeouts: Timeouts | undefined,
    readonly onError: (error: unknown, ctx: CallContext) => void,
  ) {
    this.noDeadlines = timeoutMs === undefined && timeouts === undefined;
  }
}

/**
 * The deadline of a call in ms, or `undefined` for none.
 * @throws TypeError if a `timeouts` function throws or returns a bad value
 */
function deadlineFor(c: Canceller, ctx: CallContext): number | undefined {
  const { timeouts } = c;
  let ms: number | undefined;
  if (typeof timeouts === 'function') {
    ms = timeouts(ctx);
    if (ms !== undefined) checkMs(ms, `timeouts(ctx) for ${JSON.stringify(ctx.name)}`);
  } else if (timeouts && Object.hasOwn(timeouts, ctx.name)) {
    ms = timeouts[ctx.name];
  }
  ms ??= c.timeoutMs;
  return ms === undefined || ms > MAX_TIMER_MS ? undefined : ms;
}

/** A call that came after `drain()`: refused at once (a rejected promise for prompts and resources). */
function refuseDraining(ctx: CallContext): Promise<CallResult> {
  return new Promise<CallResult>((resolve) =>
    resolve(
      refuse(ctx, ErrorCode.SHUTTING_DOWN, 'The server is shutting down and takes no new calls. Try again later.'),
    ),
  );
}

/** {@link CancelMiddleware.drain}: refuse new calls, abort the live ones, wait for them (at most `timeout` ms). */
async function drainCalls(c: Canceller, timeout: number): Promise<DrainResult> {
  if (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout < 0) {
    throw new TypeError(
      `@mcp-tether/cancel: drain(timeoutMs) needs a non-negative number of ms, got ${String(timeout)}`,
    );
  }
  c.draining = true;
  const entries = c.live.toArray();
  let abortedCount = 0;
  for (const e of entries) {
    if (e.ctx.abortReason === undefined) {
      e.ctx.abort(new ShuttingDown());
      abortedCount++;
    }
  }
  if (entries.some((e) => !e.finished)) {
    let t: ReturnType<typeof setTimeout> | undefined;
    const waitAll = Promise.all(entries.map((e) => e.done));
    if (timeout === Infinity || timeout > MAX_TIMER_MS) await waitAll;
    else {
      await Promise.race([waitAll, new Promise<void>((r) => (t = setTimeout(r, timeout)))]);
      clearTimeout(t);
    }
  }
  return { aborted: abortedCount, pending: entries.filter((e) => !e.finished).length };
}

/**
 * One signal per call, with deadlines, per-call cleanup and a graceful drain.
 *
 * The call's `ctx.signal` (made by `@mcp-tether/core`) already aborts on the client's
 * `notifications/cancelled` (reason {@link ClientCancelled}, keeping the client's reason string) and
 * when the connection closes ({@link Disconnected}). This middleware adds:
 * - **deadlines** (`timeoutMs`, `timeouts`): the signal aborts with {@link DeadlineExceeded}, and the
 *   client gets an `isError` result with code `TIMEOUT` at once, whatever the handler does later;
 * - **`ctx.defer(cleanup)`**: per-call cleanup that runs exactly once, on completion or abort;
 * - **`drain(timeoutMs)`**: refuse new calls (`SHUTTING_DOWN`), abort the running ones
 *   ({@link ShuttingDown}), wait for them.
 *
 * Put it **first** (outermost) in the `tether()` list so its deadline and drain cover every other
 * middleware's waits (mutex queues, elicitations). One instance may serve many servers (sessions):
 * create it once, pass it to each `tether()`, and `drain()` covers them all.
 *
 * Spec: `basic/utilities/cancellation` (no response after a cancel), `server/tools` (`isError`).
 *
 * @throws TypeError if `timeoutMs` or a `timeouts` value is not a positive number (or Infinity)
 */
export function cancel(options: CancelOptions = {}): CancelMiddleware {
  const { timeoutMs, timeouts } = options;
  checkOptions(timeoutMs, timeouts);
  const c = new Canceller(timeoutMs, timeouts, options.onError ?? logCleanupError);

  const middleware: CancelMiddleware = {
    name: 'cancel',

    // `ctx.defer` is made when the call first reads it (most calls never do).
    fields: { defer: deferOf },

    handle(ctx, next) {
      const slot = ctx as unknown as Record<symbol, CallEntry | undefined>;
      if (slot[STATE] !== undefined) return next(); // a second cancel() in the same chain: the outer one rules
      if (c.draining) return refuseDraining(ctx);
      let ms: number | undefined;
      if (!c.noDeadlines) {
        try {
          ms = deadlineFor(c, ctx);
        } catch (err) {
          return Promise.reject(err); // a `timeouts` function threw or returned a bad value
        }
      }
      const entry = new CallEntry(ctx, c.onError, c.finished);
      slot[STATE] = entry;
      c.live.add(entry);

      // Not an async function: one promise per call, settled by the inner chain or the abort.
      return new Promise<CallResult>((resolve, reject) => {
        entry.resolve = resolve;
        entry.reject = reject;
        // The call ends at the abort: the handler may go on (JavaScript cannot stop it), but nothing
        // it produces is sent, and inner middlewares (a mutex) keep their hold until it settles.
        ctx.onAbort(endAtAbort);
        if (ms !== undefined && ctx.abortReason === undefined) {
          const left = Math.max(0, ms - (Date.now() - ctx.startedAt));
          const timer = setTimeout(() => ctx.abort(new DeadlineExceeded(ms)), left);
          entry.timer = timer;
          (timer as { unref?: () => void }).unref?.();
        }
        let inner: Promise<CallResult>;
        try {
          inner = next();
        } catch (err) {
          inner = Promise.reject(err);
        }
        inner.then(
          (value) => {
            entry.settle();
            resolve(value);
          },
          (err: unknown) => {
            entry.settle();
            reject(err);
          },
        );
      });
    },

    drain: (timeout = 10_000) => drainCalls(c, timeout),

    get inFlight() {
      return c.live.size;
    },
    get draining() {
      return c.draining;
    },
  };
  return middleware;
}
