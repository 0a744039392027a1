import { isProgressEvent } from './events.js';
import type { CallContext } from './types.js';

const noop = () => {};

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
 *   promise rejects at once with `ctx.signal.reason`.
 */
export async function driveGenerator(gen: AsyncGenerator<unknown, unknown, unknown>, ctx: CallContext): Promise<unknown> {
  const { signal } = ctx;
  // One abort listener for the whole run; each step gets its own settle-once promise. (Racing
  // every step against one shared "aborted" promise would pile a reaction per step onto it for the
  // life of the call.)
  let rejectStep: ((reason: unknown) => void) | undefined;
  const onAbort = () => rejectStep?.(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
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
    }
  } catch (err) {
    if (signal.aborted) gen.return(undefined).catch(noop);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Settle whatever a handler returned: a value, a promise, or an async generator. */
export function settleHandlerOutput(out: unknown, ctx: CallContext): Promise<unknown> {
  return isAsyncGenerator(out) ? driveGenerator(out, ctx) : Promise.resolve(out);
}
