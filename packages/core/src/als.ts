import { AsyncLocalStorage } from 'node:async_hooks';
import type { CallContext } from './types.js';

// One store per process, even if two copies of this package are loaded (ESM + CJS).
const KEY = Symbol.for('mcp-tether.call-context');
const g = globalThis as unknown as Record<symbol, AsyncLocalStorage<CallContext> | undefined>;
const store: AsyncLocalStorage<CallContext> = (g[KEY] ??= new AsyncLocalStorage<CallContext>());

/** The context of the call the current code runs in (through AsyncLocalStorage), or undefined. */
export function currentCall(): CallContext | undefined {
  return store.getStore();
}

/**
 * The context of the current call.
 * @throws Error when called outside a call wrapped by `tether()`
 */
export function requireCall(): CallContext {
  const ctx = store.getStore();
  if (!ctx) throw new Error('mcp-tether: no call in progress (call this inside a tool, prompt or resource handler of a server wrapped with tether())');
  return ctx;
}

/** @internal */
export function runInCall<A extends unknown[], T>(ctx: CallContext, fn: (...args: A) => T, ...args: A): T {
  return store.run(ctx, fn, ...args);
}
