import { AsyncLocalStorage } from 'node:async_hooks';
import { isProgressEvent } from './events.js';
import type { CallContext } from './types.js';

const noop = () => {};
/** Longest stretch, in ms, a generator is driven without giving the event loop a turn. */
const TURN_MS = 10;

const LINGERING = Symbol.for('mcp-tether.lingering-work');
const DETACHED = Symbol.for('mcp-tether.detached-work');
/** @internal Set on a call by {@link detachCall} (a symbol: calls that never detach carry nothing). */
export const DETACHED_FLAG = Symbol.for('mcp-tether.detached');
/** The call whose detached work (see {@link detachCall}) the current code runs inside. */
const shared = globalThis as unknown as Record<symbol, AsyncLocalStorage<CallContext> | undefined>;
const INSIDE_DETACHED = Symbol.for('mcp-tether.inside-detached');
shared[INSIDE_DETACHED] ??= new AsyncLocalStorage<CallContext>();
const insideDetached: AsyncLocalStorage<CallContext> = shared[INSIDE_DETACHED];

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
  const detached = (ctx as unknown as Record<symbol, Promise<void> | undefined>)[DETACHED];
  // Detached work (a job, see detachCall) counts for code outside it, never for code inside it.
  const other = detached !== undefined && insideDetached.getStore() !== ctx ? detached : undefined;
  if ((!set || set.size === 0) && other === undefined) return undefined;
  const all = set ? [...set] : [];
  if (other !== undefined) all.push(other);
  return Promise.all(all).then(noop);
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

/**
 * Let a call's handler run on after the call's response: what `@mcp-tether/jobs` does when a call
 * becomes a job (a job handle or an MCP task is answered at once, the work goes on).
 *
 * - `work()` (the job: the rest of the inner chain and the handler, to its last round) starts now,
 *   and its promise joins the call's {@link lingeringWork}, so outer middlewares that wait for a
 *   call's handler keep waiting for it: `@mcp-tether/cancel` runs `ctx.defer` cleanups and counts the
 *   call in `inFlight` and `drain()` until it settled, and an outer `@mcp-tether/mutex` holds its
 *   lease until then. Code running inside `work` (inner middlewares, the handler) never sees it
 *   there: work does not wait for itself.
 * - Events the handler emits after the response still travel the event tap (innermost first), so
 *   the detaching middleware can turn them into job status; the sink sends none of them (nothing
 *   is written on the request's stream after its response) and `ctx.request(...)` rejects.
 * - The call's signal stays the work's signal: `ctx.abort(reason)` still aborts it. The client's
 *   cancel of the request and the connection closing no longer reach it once it was answered;
 *   the detaching middleware decides what aborts it (a job cancel, a TTL, a drain).
 *
 * Call it from a middleware's `handle` with the context it received, before that `handle` settles.
 * @returns the promise of `work()`
 */
export function detachCall<T>(ctx: CallContext, work: () => Promise<T>): Promise<T> {
  const slot = ctx as unknown as Record<symbol, unknown>;
  slot[DETACHED_FLAG] = true;
  const p = insideDetached.run(ctx, work);
  const settled = p.then(noop, noop);
  const before = slot[DETACHED] as Promise<void> | undefined;
  slot[DETACHED] = before === undefined ? settled : Promise.all([before, settled]).then(noop);
  return p;
}

/** True once {@link detachCall} was called for this call. */
export function isDetached(ctx: CallContext): boolean {
  return (ctx as unknown as Record<symbol, unknown>)[DETACHED_FLAG] === true;
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
export async function driveGenerator(
  gen: AsyncGenerator<unknown, unknown, unknown>,
  ctx: CallContext,
): Promise<unknown> {
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
