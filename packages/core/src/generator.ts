import { isProgressEvent } from './events.js';
import type { CallContext } from './types.js';

const noop = () => {};
/** Longest stretch, in ms, a generator is driven without giving the event loop a turn. */
const TURN_MS = 10;

const LINGERING = Symbol.for('mcp-tether.lingering-work');

/**
 * Work of a call's handler that outlives the call. On abort, core stops waiting for a generator
 * handler (its `return()` is called without awaiting it, so the call ends at once), but the
 * generator's own code goes on until its pending `await` settles and its `finally` ran. This returns
 * a promise that resolves once all such work of `ctx` has finished, or `undefined` when there is none
 * (the handler is done, or was a plain function whose promise `next()` already awaited).
 *
 * Check it after `next()` settled. A middleware that guards a resource for the handler (a mutex, a
 * concurrency permit) should keep it until this resolves, so the handler's code never overlaps the
 * next holder's. It never rejects.
 */
export function lingeringWork(ctx: CallContext): Promise<void> | undefined {
  const set = (ctx as unknown as Record<symbol, Set<Promise<void>> | undefined>)[LINGERING];
  if (!set || set.size === 0) return undefined;
  return Promise.all([...set]).then(noop);
}

function linger(ctx: CallContext, work: Promise<unknown>): void {
  const slot = ctx as unknown as Record<symbol, Set<Promise<void>> | undefined>;
  let set = slot[LINGERING];
  if (!set) slot[LINGERING] = set = new Set();
  const tracked: Promise<void> = work.then(noop, noop).then(() => {
    set!.delete(tracked);
  });
  set.add(tracked);
}

/** True for an async generator object (what an `async function*` returns). */
export function isAsyncGenerator(value: unknown): value is AsyncGenerator<unknown, unknown, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AsyncGenerator).next === 'function' &&
    typeof (value as AsyncGenerator).return === 'function' &&
    typeof (value as AsyncGenerator)[Symbol.asyncIterator] === 'function'
  );
}

/**
 * Drive a generator handler: `yield` is a side channel, `return` is the result.
 *
 * - Yielded progress events (made by `progress(...)`) go out through `ctx.emit`; anything else
 *   yielded is ignored.
 * - Each yield re-checks `ctx.signal`; each `next()` races the abort, so a generator stuck in slow
 *   I/O cannot hold the call.
 * - On abort, `gen.return()` is called without awaiting it: its `finally` runs as soon as the
 *   generator reaches a point where it can (after its pending `await` settles), and the returned
 *   promise rejects at once with `ctx.signal.reason`. {@link lingeringWork} tells when the
 *   generator has really finished.
 */
export async function driveGenerator(gen: AsyncGenerator<unknown, unknown, unknown>, ctx: CallContext): Promise<unknown> {
  const { signal } = ctx;
  // One abort listener for the whole run; each step gets its own settle-once promise. (Racing
  // every step against one shared "aborted" promise would pile a reaction per step onto it for the
  // life of the call.)
  let rejectStep: ((reason: unknown) => void) | undefined;
  const onAbort = () => rejectStep?.(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  let lastTurn = performance.now();
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const step = gen.next();
      const r = await new Promise<IteratorResult<unknown, unknown>>((resolve, reject) => {
        rejectStep = reject;
        step.then(resolve, reject);
      });
      rejectStep = undefined;
      if (r.done) return r.value;
      if (signal.aborted) throw signal.reason;
      if (isProgressEvent(r.value)) await ctx.emit(r.value);
      // A generator that yields without real I/O would otherwise never let the event loop turn:
      // other calls, pings and the cancel for this very call would wait for it. Give a turn every
      // TURN_MS of continuous driving.
      if (performance.now() - lastTurn > TURN_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastTurn = performance.now();
      }
    }
  } catch (err) {
    if (signal.aborted) linger(ctx, gen.return(undefined));
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Settle whatever a handler returned: a value, a promise, or an async generator. */
export function settleHandlerOutput(out: unknown, ctx: CallContext): Promise<unknown> {
  return isAsyncGenerator(out) ? driveGenerator(out, ctx) : Promise.resolve(out);
}
