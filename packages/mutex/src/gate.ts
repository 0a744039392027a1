import {
  type CallContext,
  type CallResult,
  diagnostics,
  ErrorCode,
  JsonRpcErrorCode,
  lingeringWork,
  type Middleware,
  type Next,
  ProtocolError,
  refuse,
} from '@mcp-tether/core';
import { isQueueFull, type LockStore, MemoryLockStore, type Release } from './store.js';

/** `tether:mutex:wait`: one wait ended (`depth`: calls holding or waiting for this key in this process when it queued). */
function publishWait(
  ctx: CallContext,
  key: string,
  outcome: 'acquired' | 'refused' | 'aborted',
  t0: number,
  depth: number,
  fencingToken: number | undefined,
): void {
  diagnostics.mutexWait.publish({ ctx, key, outcome, waitMs: performance.now() - t0, queueDepth: depth, fencingToken });
}

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * The fencing token of the lock this call holds (added by `@mcp-tether/mutex`): an integer that
     * strictly increases with every grant of the same key, across every process sharing the store
     * (`MemoryLockStore` and `RedisLockStore` issue them). With several locks (a `mutex` and a
     * `limit`), the token of the innermost one. Undefined when the call holds no lock or the store
     * issues no tokens; an mrtr round that takes the lock again gets a new one.
     *
     * Pass it to your storage with every write and have the storage refuse a token lower than the
     * highest it has seen for that resource: a lease can expire under a paused holder, and only this
     * check keeps the stale holder from writing after the next one.
     */
    fencingToken: number | undefined;
  }
}

/** Counts of one key, or of all keys together. */
export interface LockCounts {
  /** Calls waiting for the lock now. */
  queued: number;
  /** Calls holding the lock now (running their handler). */
  running: number;
  /** Total time calls spent waiting, in ms (granted and abandoned waits alike), since creation. */
  waitedMs: number;
  /** Calls that got the lock, since creation. */
  acquired: number;
  /** Calls aborted while waiting (they left the queue), since creation. */
  abandoned: number;
  /** Calls refused with `BUSY` because the queue was full, since creation. */
  rejected: number;
}

/**
 * What `stats()` returns: the totals, and the same counts per key (the key your `key`/`scope` gave,
 * without the store prefix). Idle keys are kept for their totals up to 1 000 of them, oldest
 * forgotten first.
 */
export interface LockStats extends LockCounts {
  keys: Record<string, LockCounts>;
}

/** A mutex or limiter middleware: a {@link Middleware} with counts. */
export interface LockMiddleware extends Middleware {
  readonly name: 'mutex' | 'limit';
  handle(ctx: CallContext, next: Next): Promise<CallResult>;
  /** A snapshot of the counts of this process (a shared store's other processes are not included). */
  stats(): LockStats;
}

/** @internal */
export interface GateConfig {
  name: 'mutex' | 'limit';
  prefix: string;
  select: (ctx: CallContext) => boolean;
  key: (ctx: CallContext) => string;
  max: number;
  maxQueue: number;
  store: LockStore | undefined;
  onError: ((error: unknown, ctx: CallContext) => void) | undefined;
}

const MAX_IDLE_KEYS = 1_000;
/** Longest lock key accepted, in UTF-16 code units (a key derived from a huge argument is refused). */
export const MAX_KEY_LENGTH = 4_096;

/**
 * @internal The lock key of a call. Keys are usually derived from client arguments, which are not
 * validated yet: a key function that throws on them (a `JSON.stringify` of a deeply nested value
 * overflows the stack) or a key over {@link MAX_KEY_LENGTH} refuses the call with `-32602`
 * (invalid params) and the request's id, never a `-32603` stack dump. A key that is not a
 * non-empty string is a bug of the key function: a `TypeError` (`-32603`).
 */
export function lockKeyOf(cfg: Pick<GateConfig, 'name' | 'key'>, ctx: CallContext): string {
  let key: unknown;
  try {
    key = cfg.key(ctx);
  } catch (err) {
    const why =
      err instanceof RangeError
        ? 'the arguments nest too deeply or are too large'
        : err instanceof Error
          ? err.message
          : String(err);
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      `Invalid params for ${ctx.name}: cannot derive its ${cfg.name} lock key (${why.slice(0, 200)})`,
    );
  }
  if (typeof key !== 'string' || key === '') {
    throw new TypeError(
      `@mcp-tether/mutex: ${cfg.name} key function must return a non-empty string, got ${String(key)} for ${ctx.name}`,
    );
  }
  if (key.length > MAX_KEY_LENGTH) {
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidParams,
      `Invalid params for ${ctx.name}: its ${cfg.name} lock key is ${key.length} characters long (at most ${MAX_KEY_LENGTH})`,
    );
  }
  return key;
}

/** `ctx.fencingToken` reads undefined until a grant assigns it (a store that issues no tokens never does). */
const FENCING_FIELDS = { fencingToken: () => undefined } as const;

const zero = (): LockCounts => ({ queued: 0, running: 0, waitedMs: 0, acquired: 0, abandoned: 0, rejected: 0 });

/** @internal Validate a `maxQueue` option. */
export function checkMaxQueue(who: string, value: unknown): number {
  if (value === undefined) return Infinity;
  if (value === Infinity || (typeof value === 'number' && Number.isInteger(value) && value >= 0)) return value;
  throw new TypeError(`${who}: maxQueue must be a non-negative integer or Infinity, got ${String(value)}`);
}

/** @internal Validate a store option. */
export function checkStore(who: string, store: unknown): LockStore | undefined {
  if (store === undefined) return undefined;
  if (typeof store !== 'object' || store === null || typeof (store as LockStore).acquire !== 'function') {
    throw new TypeError(`${who}: store must implement LockStore (an acquire(key, options) method)`);
  }
  return store as LockStore;
}

/**
 * The counts of one gate: the totals, and per key (idle keys kept up to {@link MAX_IDLE_KEYS},
 * least recently used forgotten first).
 */
class Tally {
  readonly total = zero();
  /** In least-recently-used-first order. */
  private readonly perKey = new Map<string, LockCounts>();

  /** The counts of `key` (created at zero), made the most recently used. */
  of(key: string): LockCounts {
    const perKey = this.perKey;
    let c = perKey.get(key);
    if (c) {
      // move to the end: the map's order is least recently used first
      perKey.delete(key);
    } else c = zero();
    perKey.set(key, c);
    if (perKey.size > MAX_IDLE_KEYS) {
      for (const [k, v] of perKey) {
        if (perKey.size <= MAX_IDLE_KEYS) break;
        if (v.queued === 0 && v.running === 0 && k !== key) perKey.delete(k);
      }
    }
    return c;
  }

  /** Add `n` to `field` of one key's counts and of the totals. */
  add(c: LockCounts, field: keyof LockCounts, n: number): void {
    c[field] += n;
    this.total[field] += n;
  }

  /** A snapshot (copies). */
  stats(): LockStats {
    const keys: Record<string, LockCounts> = {};
    for (const [k, v] of this.perKey) keys[k] = { ...v };
    return { ...this.total, keys };
  }
}

/** What the calls of one gate share. */
interface Gate {
  readonly cfg: GateConfig;
  readonly store: LockStore;
  readonly tally: Tally;
  /** Reports a failed release (`cfg.onError`, else stderr); never throws. */
  readonly onError: (error: unknown, ctx: CallContext) => void;
}

/** The release-failure reporter of a gate: `cfg.onError` or a line on stderr, its own errors swallowed. */
function releaseErrorReporter(cfg: GateConfig): (error: unknown, ctx: CallContext) => void {
  const report =
    cfg.onError ??
    ((error: unknown, ctx: CallContext) => {
      console.error(`[@mcp-tether/mutex] ${cfg.name}: releasing the lock of ${ctx.method} ${ctx.name} failed:`, error);
    });
  return (error: unknown, ctx: CallContext) => {
    try {
      report(error, ctx);
    } catch {
      // a failing reporter must not take the call down
    }
  };
}

/** @internal The shared machinery of `mutex()` and `limit()`. */
export function gate(cfg: GateConfig): LockMiddleware {
  const g: Gate = {
    cfg,
    store: cfg.store ?? new MemoryLockStore(),
    tally: new Tally(),
    onError: releaseErrorReporter(cfg),
  };
  /** Marks a call this instance's `when` selected (per instance: a chain may hold a mutex and a limiter). */
  const chosen = Symbol(`mcp-tether.${cfg.name}.selected`);

  return {
    name: cfg.name,
    fields: FENCING_FIELDS,

    // Not selected (e.g. a tool that is not destructive): the call skips this layer (no extra
    // promise). `select` runs once each time the chain reaches this layer; a selected call is
    // marked so that `handle` does not ask again.
    when(ctx) {
      const selected = cfg.select(ctx);
      if (selected) (ctx as unknown as Record<symbol, boolean>)[chosen] = true;
      return selected;
    },
    handle(ctx, next) {
      const slot = ctx as unknown as Record<symbol, boolean | undefined>;
      if (slot[chosen] === true) {
        slot[chosen] = false; // this pass only (an mrtr round re-runs `when` first)
        return guarded(g, ctx, next);
      }
      // Reached without `when` (called by hand): select here.
      return cfg.select(ctx) ? guarded(g, ctx, next) : next();
    },

    stats() {
      return g.tally.stats();
    },
  };
}

/** One selected call: wait for its key's lock, run the rest of the chain holding it, release it. */
async function guarded(g: Gate, ctx: CallContext, next: Next): Promise<CallResult> {
  // Arguments the SDK will refuse never take a lock (nor, on a shared store, write a key): the
  // call goes on unlocked and the SDK answers its own validation error.
  if (ctx.method === 'tools/call' && ctx.host.validateToolInput) {
    if ((await ctx.host.validateToolInput(ctx.name, ctx.args)) !== undefined) return next();
  }
  const { cfg, tally } = g;
  const key = lockKeyOf(cfg, ctx);
  const counts = tally.of(key);
  const depth = counts.queued + counts.running; // calls ahead of this one: holding or waiting
  tally.add(counts, 'queued', 1);
  const t0 = performance.now();
  let release: Release;
  try {
    release = await g.store.acquire(cfg.prefix + key, { max: cfg.max, maxQueue: cfg.maxQueue, signal: ctx.signal });
  } catch (err) {
    tally.add(counts, 'waitedMs', performance.now() - t0);
    if (diagnostics.mutexWait.hasSubscribers)
      publishWait(ctx, key, isQueueFull(err) ? 'refused' : 'aborted', t0, depth, undefined);
    if (isQueueFull(err)) {
      tally.add(counts, 'rejected', 1);
      return busy(cfg, ctx, key, err);
    }
    if (ctx.abortReason !== undefined) tally.add(counts, 'abandoned', 1);
    throw err;
  } finally {
    tally.add(counts, 'queued', -1);
  }
  tally.add(counts, 'waitedMs', performance.now() - t0);
  const token = release.fencingToken;
  if (diagnostics.mutexWait.hasSubscribers) publishWait(ctx, key, 'acquired', t0, depth, token);
  if (token !== undefined) ctx.fencingToken = token;
  tally.add(counts, 'acquired', 1);
  tally.add(counts, 'running', 1);
  const free = () => {
    tally.add(counts, 'running', -1);
    try {
      const r = release();
      if (r && typeof (r as Promise<void>).then === 'function')
        (r as Promise<void>).then(undefined, (e: unknown) => g.onError(e, ctx));
    } catch (e) {
      g.onError(e, ctx);
    }
  };
  try {
    // The chain gate stops here if the call was aborted just as it got the lock.
    return await next();
  } finally {
    // After an abort, core stops waiting for a generator handler while its code may still run
    // (until its pending await settles): keep the lock until it has really finished.
    const lingering = lingeringWork(ctx);
    if (lingering) void lingering.then(free);
    else free();
  }
}

/** The `BUSY` refusal of a call whose key's queue is full (`err`: the store's `QueueFullError`). */
function busy(cfg: GateConfig, ctx: CallContext, key: string, err: unknown): CallResult {
  const queued = (err as { queued?: unknown }).queued;
  return refuse(
    ctx,
    ErrorCode.BUSY,
    `${ctx.name} is busy: too many calls are already waiting (${cfg.name} queue for ${JSON.stringify(key)} is full). Try again later.`,
    {
      key,
      maxQueue: cfg.maxQueue,
      ...(typeof queued === 'number' ? { queued } : {}),
    },
  );
}
