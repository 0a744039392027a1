import { AsyncLocalStorage } from 'node:async_hooks';
import type { CallContext } from './types.js';

// One store per process, even if two copies of this package are loaded (ESM + CJS).
const KEY = Symbol.for('mcp-tether.call-context');
const OFF_KEY = Symbol.for('mcp-tether.servers-without-async-context');
const g = globalThis as unknown as Record<symbol, unknown>;
g[KEY] ??= new AsyncLocalStorage<CallContext>();
const store = g[KEY] as AsyncLocalStorage<CallContext>;
// How many servers of this process were attached without async context (shared across copies too).
g[OFF_KEY] ??= { count: 0 };
const off = g[OFF_KEY] as { count: number };

/** The option that turns async context on, as named in every error about it. */
const HOW = 'attach with tether(server, middlewares, { asyncContext: true }) (or pass the call context explicitly)';

/**
 * The context of the call the current code runs in (through AsyncLocalStorage), or undefined
 * outside a call.
 *
 * Needs async context, which a server has when it was attached with `{ asyncContext: true }` or
 * when one of its middlewares declares {@link Middleware.asyncContext}; otherwise no
 * AsyncLocalStorage is used for its calls (on Node 20 and 22 that saves the promise hooks that
 * slow every promise of the process down).
 * @throws Error when no call is found and some server of this process runs without async context
 *   (the code may be in one of its calls, where no context can be found: never a silent undefined)
 */
export function currentCall(): CallContext | undefined {
  const ctx = store.getStore();
  if (ctx === undefined && off.count !== 0) throw noContext('currentCall()');
  return ctx;
}

/**
 * The context of the current call.
 * @throws Error when called outside a call wrapped by `tether()`, or in a call of a server without
 *   async context (the message names the option)
 */
export function requireCall(): CallContext {
  const ctx = store.getStore();
  if (!ctx) {
    if (off.count !== 0) throw noContext('this function');
    throw new Error(
      'mcp-tether: no call in progress (call this inside a tool, prompt or resource handler of a server wrapped with tether())',
    );
  }
  return ctx;
}

/**
 * The error of a free function that found no call while a server of this process runs without
 * async context. `what` names the function (e.g. `'readInput()'`).
 */
export function noContext(what: string): Error {
  return new Error(
    `mcp-tether: ${what} found no call: it runs outside a call, or in a call of a server without async context. ` +
      `To use the free functions (currentCall(), readInput(), callLogger(), ...) in handlers, ${HOW}.`,
  );
}

/** @internal A server was attached without async context (the free functions' errors then name the option). */
export function markWithoutAsyncContext(): void {
  off.count++;
}

/** @internal */
export function runInCall<A extends unknown[], T>(ctx: CallContext, fn: (...args: A) => T, ...args: A): T {
  return store.run(ctx, fn, ...args);
}
