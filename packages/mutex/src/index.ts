/**
 * @mcp-tether/mutex — FIFO serialization of destructive MCP calls, and concurrency limits, that
 * stay correct when waiters are cancelled.
 * @packageDocumentation
 */
import type { CallContext } from '@mcp-tether/core';
import { checkMaxQueue, checkStore, gate, type LockMiddleware } from './gate.js';
import type { LockStore } from './store.js';

export { MAX_KEY_LENGTH, type LockCounts, type LockMiddleware, type LockStats } from './gate.js';
export {
  MemoryLockStore,
  QueueFullError,
  isQueueFull,
  type AcquireOptions,
  type LockStore,
  type Release,
} from './store.js';

/** Options of {@link mutex}. */
export interface MutexOptions {
  /**
   * Which calls are serialized. Default: tools annotated `destructiveHint: true`. Calls annotated
   * `readOnlyHint: true` are never serialized, whatever this returns.
   */
  select?: (ctx: CallContext) => boolean;
  /**
   * The lock a call takes: calls with the same key run one at a time. Default: the tool name
   * (`ctx.name`). Derive it from the arguments to lock per resource, e.g. `(ctx) => String(ctx.args.path)`.
   * Must return a non-empty string.
   */
  key?: (ctx: CallContext) => string;
  /**
   * Calls that may wait per key (the holder not counted). Past it, the call is refused at once
   * with an `isError` result, code `BUSY`. Default `Infinity`; `0` means "run now or refuse".
   */
  maxQueue?: number;
  /** Where locks live. Default: a new {@link MemoryLockStore} (one process). Keys reach it as `mutex:<key>`. */
  store?: LockStore;
  /** Receives errors of a store's `release` (e.g. a remote store unreachable). Default: `console.error`. */
  onError?: (error: unknown, ctx: CallContext) => void;
}

/**
 * A FIFO serializer for destructive calls.
 *
 * - Calls it selects (default: `annotations.destructiveHint === true`, never `readOnlyHint: true`)
 *   run one at a time per key (default: per tool), in arrival order.
 * - The lock is taken in the middleware, before the handler starts, so before any `await` of the
 *   handler, and only once the SDK's input validation accepts the arguments (a `tools/call` whose
 *   arguments fail it runs on unlocked to the SDK's own validation error: it never takes a lock or
 *   writes a key to a shared store, and the `key` function only sees valid arguments); it is released in a `finally` when the handler settles, whether it returned, threw or
 *   was cancelled. The mutex never interrupts a running holder.
 * - A waiter whose call aborts (client cancel, deadline, disconnect, shutdown) leaves the queue at
 *   once, and mutual exclusion still holds for everyone else.
 * - Past `maxQueue` waiters, an immediate refusal: `isError: true`,
 *   `structuredContent: { code: 'BUSY', key, maxQueue, queued }` (a JSON-RPC error with
 *   `data.code: 'BUSY'` for prompts and resources).
 *
 * Create it once and pass the same instance to every server's `tether()` (every session), after
 * `cancel()`: `tether(server, [cancel(), mutex()])`.
 *
 * @throws TypeError on invalid options
 */
export function mutex(options: MutexOptions = {}): LockMiddleware {
  const who = '@mcp-tether/mutex: mutex()';
  const { select, key } = options;
  if (select !== undefined && typeof select !== 'function') throw new TypeError(`${who}: select must be a function`);
  if (key !== undefined && typeof key !== 'function') throw new TypeError(`${who}: key must be a function`);
  const chosen = select ?? ((ctx: CallContext) => ctx.annotations.destructiveHint === true);
  return gate({
    name: 'mutex',
    prefix: 'mutex:',
    select: (ctx) => ctx.annotations.readOnlyHint !== true && chosen(ctx),
    key: key ?? ((ctx) => ctx.name),
    max: 1,
    maxQueue: checkMaxQueue(who, options.maxQueue),
    store: checkStore(who, options.store),
    onError: options.onError,
  });
}

/** How {@link limit} groups calls: per tool, all together, or by a key of your own. */
export type LimitScope = 'tool' | 'global' | ((ctx: CallContext) => string);

/** Options of {@link limit}. */
export interface LimitOptions {
  /** Calls in flight at most, per scope key. A positive integer. */
  max: number;
  /** `'tool'` (default): `max` per tool (prompt, resource URI); `'global'`: `max` overall; or a key function. */
  scope?: LimitScope;
  /** Which calls count. Default: every call (read-only ones too: a limit is about load, not safety). */
  select?: (ctx: CallContext) => boolean;
  /** Calls that may wait per key. Past it, an immediate `BUSY` refusal. Default `Infinity`. */
  maxQueue?: number;
  /** Where permits live. Default: a new {@link MemoryLockStore}. Keys reach it as `limit:<key>` (`limit:*` for global). */
  store?: LockStore;
  /** Receives errors of a store's `release`. Default: `console.error`. */
  onError?: (error: unknown, ctx: CallContext) => void;
}

/**
 * A concurrency limiter: at most `max` calls in flight per scope key; the others wait in a FIFO
 * queue, aborted waiters leave it at once, and past `maxQueue` waiters a call is refused at once
 * with code `BUSY`. Same guarantees as {@link mutex} (which is `limit` with `max: 1` for
 * destructive tools).
 *
 * @throws TypeError on invalid options
 */
export function limit(options: LimitOptions): LockMiddleware {
  const who = '@mcp-tether/mutex: limit()';
  if (typeof options !== 'object' || options === null) throw new TypeError(`${who}: options with a max are required`);
  const { max, scope = 'tool', select } = options;
  if (!Number.isInteger(max) || max < 1)
    throw new TypeError(`${who}: max must be a positive integer, got ${String(max)}`);
  if (select !== undefined && typeof select !== 'function') throw new TypeError(`${who}: select must be a function`);
  let key: (ctx: CallContext) => string;
  if (scope === 'tool') key = (ctx) => ctx.name;
  else if (scope === 'global') key = () => '*';
  else if (typeof scope === 'function') key = scope;
  else throw new TypeError(`${who}: scope must be 'tool', 'global' or a function, got ${String(scope)}`);
  return gate({
    name: 'limit',
    prefix: 'limit:',
    select: select ?? (() => true),
    key,
    max,
    maxQueue: checkMaxQueue(who, options.maxQueue),
    store: checkStore(who, options.store),
    onError: options.onError,
  });
}
