import {
  type CallContext,
  type CallResult,
  DeadlineExceeded,
  ErrorCode,
  type Middleware,
  type Next,
  refuse,
  type ServerHost,
  ShuttingDown,
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

/** Where (a property of the call) cancel() keeps a call's entry (its cleanups and deadline timer). */
const STATE = Symbol('mcp-tether.cancel');
/** setTimeout overflows past 2^31-1 ms (it would fire at once); longer deadlines mean none. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A call's cleanups and deadline timer, made only for a call that reads `ctx.defer` or gets a
 * deadline (most calls never do: they cost cancel() nothing).
 */
class CallEntry {
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private cleanups: Array<() => unknown> | undefined = undefined;
  private cleaned = false;
  private pending = 0;

  constructor(
    readonly ctx: CallContext,
    private readonly owner: Cleanups,
  ) {}

  defer(cleanup: () => unknown): void {
    if (typeof cleanup !== 'function') throw new TypeError('ctx.defer(cleanup): cleanup must be a function');
    if (this.cleaned) this.invoke(cleanup);
    else {
      this.cleanups ??= [];
      this.cleanups.push(cleanup);
    }
  }

  /** The call ended (completed, or aborted): stop its deadline, run every registered cleanup, once. */
  end(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.cleaned) return;
    this.cleaned = true;
    const list = this.cleanups;
    this.cleanups = undefined;
    if (list !== undefined) for (let i = list.length - 1; i >= 0; i--) this.invoke(list[i]!);
  }

  private invoke(cleanup: () => unknown): void {
    let out: unknown;
    try {
      out = cleanup();
    } catch (err) {
      this.owner.report(err, this.ctx);
      return;
    }
    if (typeof (out as PromiseLike<unknown> | undefined)?.then === 'function') {
      if (this.pending++ === 0) this.owner.running(this, true);
      Promise.resolve(out)
        .catch((err: unknown) => this.owner.report(err, this.ctx))
        .finally(() => {
          if (--this.pending === 0) this.owner.running(this, false);
        });
    }
  }
}

/** The cleanups of one cancel() instance still settling, and who waits for them. */
class Cleanups {
  private readonly settling = new Set<CallEntry>();
  private waiters: Array<() => void> | undefined = undefined;

  constructor(private readonly onError: (error: unknown, ctx: CallContext) => void) {}

  get size(): number {
    return this.settling.size;
  }

  running(entry: CallEntry, yes: boolean): void {
    if (yes) this.settling.add(entry);
    else if (this.settling.delete(entry) && this.settling.size === 0) {
      const waiters = this.waiters;
      this.waiters = undefined;
      if (waiters !== undefined) for (const w of waiters) w();
    }
  }

  idle(): Promise<void> {
    if (this.settling.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters ??= [];
      this.waiters.push(resolve);
    });
  }

  report(error: unknown, ctx: CallContext): void {
    try {
      this.onError(error, ctx);
    } catch {
      // a failing error reporter must not take the call down
    }
  }
}

const entryOf = (ctx: CallContext): CallEntry | undefined =>
  (ctx as unknown as Record<symbol, CallEntry | undefined>)[STATE];

function checkMs(value: unknown, what: string): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new TypeError(
      `@mcp-tether/cancel: ${what} must be a positive number of ms or Infinity, got ${String(value)}`,
    );
  }
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
  if (timeoutMs !== undefined) checkMs(timeoutMs, 'timeoutMs');
  if (timeouts !== undefined && typeof timeouts !== 'function') {
    if (typeof timeouts !== 'object' || timeouts === null)
      throw new TypeError('@mcp-tether/cancel: timeouts must be a record of ms by tool name, or a function');
    for (const [name, ms] of Object.entries(timeouts)) checkMs(ms, `timeouts[${JSON.stringify(name)}]`);
  }
  const onError =
    options.onError ??
    ((error: unknown, ctx: CallContext) => {
      console.error(
        `[@mcp-tether/cancel] a cleanup of ${ctx.method} ${ctx.name} (id ${String(ctx.requestId)}) failed:`,
        error,
      );
    });

  const cleanups = new Cleanups(onError);
  /** The servers this instance is attached to (one per session on HTTP), until each closed and went idle. */
  const hosts = new Set<ServerHost>();
  let draining = false;

  const deadlineFor = (ctx: CallContext): number | undefined => {
    let ms: number | undefined;
    if (typeof timeouts === 'function') {
      ms = timeouts(ctx);
      if (ms !== undefined) checkMs(ms, `timeouts(ctx) for ${JSON.stringify(ctx.name)}`);
    } else if (timeouts && Object.hasOwn(timeouts, ctx.name)) {
      ms = timeouts[ctx.name];
    }
    ms ??= timeoutMs;
    return ms === undefined || ms > MAX_TIMER_MS ? undefined : ms;
  };

  /** No deadline can apply (no option gives one): unless draining, calls skip this layer. */
  const noDeadlines = timeoutMs === undefined && timeouts === undefined;

  /** The call's entry, made on first need. */
  const ensureEntry = (ctx: CallContext): CallEntry => {
    const slot = ctx as unknown as Record<symbol, CallEntry | undefined>;
    let entry = slot[STATE];
    if (entry === undefined) {
      entry = new CallEntry(ctx, cleanups);
      slot[STATE] = entry;
    }
    return entry;
  };

  const inFlight = (): number => {
    let n = cleanups.size;
    for (const h of hosts) n += h.inFlight();
    return n;
  };

  const middleware: CancelMiddleware = {
    name: 'cancel',

    // `ctx.defer` is made when the call first reads it (most calls never do).
    fields: {
      defer: (ctx) => {
        const entry = ensureEntry(ctx);
        return (cleanup: () => unknown) => entry.defer(cleanup);
      },
    },

    setup(host) {
      hosts.add(host);
      // A closed session's calls may still be settling (a handler that ignores its signal).
      host.onClose(() => void host.idle().then(() => hosts.delete(host)));
    },

    // Core ends every call at its abort and answers a deadline; this layer only refuses calls while
    // draining and arms deadlines: without either, calls skip it.
    when: () => draining || !noDeadlines,

    handle(ctx, next) {
      if (draining) {
        return new Promise<CallResult>((resolve) =>
          resolve(
            refuse(
              ctx,
              ErrorCode.SHUTTING_DOWN,
              'The server is shutting down and takes no new calls. Try again later.',
            ),
          ),
        );
      }
      let ms: number | undefined;
      if (!noDeadlines) {
        try {
          ms = deadlineFor(ctx);
        } catch (err) {
          return Promise.reject(err); // a `timeouts` function threw or returned a bad value
        }
      }
      if (ms !== undefined && ctx.abortReason === undefined) {
        const entry = ensureEntry(ctx);
        if (entry.timer === undefined) {
          // (a second cancel() in the same chain: the outer one's deadline rules)
          const left = Math.max(0, ms - (Date.now() - ctx.startedAt));
          const deadline = ms;
          entry.timer = setTimeout(() => ctx.abort(new DeadlineExceeded(deadline)), left);
          (entry.timer as { unref?: () => void }).unref?.();
        }
      }
      return next();
    },

    // The call ended (result, error, or abort: core ends a call at its abort): deadline off, cleanups run.
    onEnd(ctx) {
      entryOf(ctx)?.end();
    },

    async drain(timeout = 10_000) {
      if (typeof timeout !== 'number' || Number.isNaN(timeout) || timeout < 0) {
        throw new TypeError(
          `@mcp-tether/cancel: drain(timeoutMs) needs a non-negative number of ms, got ${String(timeout)}`,
        );
      }
      draining = true;
      let abortedCount = 0;
      for (const h of hosts) abortedCount += h.abortAll(new ShuttingDown());
      if (inFlight() > 0) {
        let t: ReturnType<typeof setTimeout> | undefined;
        const waitAll = Promise.all([...[...hosts].map((h) => h.idle()), cleanups.idle()]);
        if (timeout === Infinity || timeout > MAX_TIMER_MS) await waitAll;
        else {
          const expiry = new Promise<void>((r) => {
            t = setTimeout(r, timeout);
          });
          await Promise.race([waitAll, expiry]);
          clearTimeout(t);
        }
      }
      return { aborted: abortedCount, pending: inFlight() };
    },

    get inFlight() {
      return inFlight();
    },
    get draining() {
      return draining;
    },
  };
  return middleware;
}
