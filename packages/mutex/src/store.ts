/**
 * The lock store: where queues and holders live. The in-memory default serves one process; a
 * shared store (Redis, ...) can implement the same contract to serve several processes.
 */

/** Options of one {@link LockStore.acquire}. */
export interface AcquireOptions {
  /** Permits of the key: at most this many holders at once (1 for a mutex). A positive integer. */
  readonly max: number;
  /**
   * Waiters the key's queue may hold (holders not counted). When the queue already holds this
   * many, `acquire` rejects at once with {@link QueueFullError}. A non-negative integer or
   * `Infinity`; 0 means "take it now or refuse".
   */
  readonly maxQueue: number;
  /** The call's signal. When it aborts while waiting, the waiter leaves the queue at once. */
  readonly signal: AbortSignal;
}

/**
 * A grant: call it to give the permit back. Idempotent: calling it again does nothing. May return a
 * promise (a remote store); the middleware does not await it, and reports a rejection to its `onError`.
 */
export interface Release {
  (): void | Promise<void>;
  /**
   * The grant's fencing token, when the store issues them: an integer that strictly increases with
   * every grant of the key (a later holder always has a larger token than an earlier one). The
   * middlewares expose it to the handler as `ctx.fencingToken`. A lease can expire under a paused
   * holder (GC pause, a stopped VM): pass the token to your storage and have it refuse a write whose
   * token is lower than one it has already seen. That check, not the lock, keeps a stale holder out.
   */
  readonly fencingToken?: number;
}

/**
 * Where locks live. Implement it to share locks between processes.
 *
 * The contract, per key (keys are opaque strings; the middlewares prefix theirs with `mutex:` or
 * `limit:`):
 * 1. **Bounded holders.** At no moment do more than `max` acquisitions hold the key (a holder
 *    holds from the moment its promise resolves until it calls its {@link Release}).
 * 2. **FIFO.** Waiters get the key in the order their `acquire` was called; a new caller never
 *    overtakes a waiter (it queues even if a permit is free while others wait).
 * 3. **Aborted waiters leave at once.** If `signal` is already aborted, reject with `signal.reason`
 *    without queuing. If it aborts while waiting, remove the waiter from the queue (it must never
 *    be granted afterwards) and reject with `signal.reason`. A holder is never interrupted: the
 *    signal only matters while waiting.
 * 4. **Bounded queue.** If the key already has `maxQueue` waiters, reject at once with a
 *    {@link QueueFullError} (this class, imported from `@mcp-tether/mutex`); nothing is queued.
 * 5. **Release** frees one permit and hands it to the first waiter; calling a `Release` twice has
 *    no effect. A store may attach a {@link Release.fencingToken} to each grant (strictly
 *    increasing per key). A shared store should also expire the permits of a process that died
 *    while holding (a lease with a TTL, renewed while held), so that a crash cannot wedge a key
 *    forever.
 * 6. Other failures (store unreachable) reject with any other error: the call then fails with a
 *    JSON-RPC error, and no permit is held.
 */
export interface LockStore {
  acquire(key: string, options: AcquireOptions): Promise<Release>;
}

/** The key's queue is full (see {@link AcquireOptions.maxQueue}). The middlewares turn it into a `BUSY` refusal. */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  /**
   * @param key the store key
   * @param queued waiters in the queue when the caller was turned away
   */
  constructor(
    readonly key: string,
    readonly queued: number,
  ) {
    super(`queue for ${JSON.stringify(key)} is full (${queued} waiting)`);
  }
}

/**
 * True for a {@link QueueFullError}: a plain `instanceof` (stores such as `@mcp-tether/redis`'s
 * `RedisLockStore` throw this class, imported from here).
 */
export function isQueueFull(error: unknown): error is QueueFullError {
  return error instanceof QueueFullError;
}

interface Waiter {
  readonly max: number;
  grant(): void;
}

interface KeyState {
  holders: number;
  /** A Set keeps insertion order (FIFO) and removes an aborted waiter in O(1). */
  readonly waiters: Set<Waiter>;
}

/**
 * The in-memory {@link LockStore}: FIFO per key, synchronous hand-over on release (the next waiter
 * is granted before `release()` returns), O(1) removal of aborted waiters. Each grant carries a
 * fencing token from one counter per store (so it increases per key too). Keys with no holder and
 * no waiter are forgotten, so arbitrary keys (e.g. derived from arguments) do not accumulate.
 * Serves one process: for several, use a shared store implementing the same contract.
 */
export class MemoryLockStore implements LockStore {
  private readonly keys = new Map<string, KeyState>();
  private fence = 0;

  acquire(key: string, options: AcquireOptions): Promise<Release> {
    const { max, maxQueue, signal } = options;
    if (!Number.isInteger(max) || max < 1)
      return Promise.reject(new TypeError(`LockStore.acquire: max must be a positive integer, got ${String(max)}`));
    if (signal.aborted) return Promise.reject(signal.reason);
    let state = this.keys.get(key);
    if (!state) {
      state = { holders: 0, waiters: new Set() };
      this.keys.set(key, state);
    }
    const st = state;
    if (st.holders < max && st.waiters.size === 0) {
      st.holders++;
      return Promise.resolve(this.releaser(key, st));
    }
    if (st.waiters.size >= maxQueue) {
      this.forgetIfIdle(key, st);
      return Promise.reject(new QueueFullError(key, st.waiters.size));
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        st.waiters.delete(waiter);
        this.forgetIfIdle(key, st);
        reject(signal.reason);
      };
      const waiter: Waiter = {
        max,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser(key, st));
        },
      };
      st.waiters.add(waiter);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Holders and waiters of a key right now (for tests and diagnostics). */
  inspect(key: string): { holders: number; waiting: number } {
    const st = this.keys.get(key);
    return { holders: st?.holders ?? 0, waiting: st?.waiters.size ?? 0 };
  }

  /** Keys currently held or waited for. */
  get size(): number {
    return this.keys.size;
  }

  private releaser(key: string, st: KeyState): Release {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      st.holders--;
      for (const w of st.waiters) {
        if (st.holders >= w.max) break;
        st.waiters.delete(w);
        st.holders++;
        w.grant();
      }
      this.forgetIfIdle(key, st);
    };
    return Object.assign(release, { fencingToken: ++this.fence });
  }

  private forgetIfIdle(key: string, st: KeyState): void {
    if (st.holders === 0 && st.waiters.size === 0 && this.keys.get(key) === st) this.keys.delete(key);
  }
}
