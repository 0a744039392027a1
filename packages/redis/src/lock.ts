/**
 * `RedisLockStore`: the `LockStore` contract of `@mcp-tether/mutex` across processes.
 *
 * Every change is one Lua script (atomic; the scripts and the keys they use: `./lock-scripts.ts`). A release hands the permit to the first waiter inside
 * the script, then publishes the grant on the waiter's process channel: waiters are woken by
 * pub/sub, never by polling. Each process renews the leases of its holders and waiters every
 * `leaseMs / 3`; that renewal also expires the holders of dead processes and promotes the next
 * waiter, so a key whose holder died is free again within about `leaseMs`.
 */
import { randomBytes } from 'node:crypto';
import { QueueFullError } from '@mcp-tether/mutex';
import type { Redis } from 'ioredis';
import { connect, type Connections, type RedisConnectionOptions, StoreUnavailableError } from './connection.js';
import { type LockCommands, lockKeyTtl, lockKeys, withLockCommands } from './lock-scripts.js';

/** Options of {@link RedisLockStore.acquire} (the `AcquireOptions` of `@mcp-tether/mutex`). */
export interface LockAcquireOptions {
  readonly max: number;
  readonly maxQueue: number;
  readonly signal: AbortSignal;
}

/** A grant (the `Release` of `@mcp-tether/mutex`): call it to release; it carries the grant's fencing token. */
export interface LockGrant {
  (): Promise<void>;
  /** Strictly increasing per key, across every process sharing the Redis. */
  readonly fencingToken: number;
}

/** Options of {@link RedisLockStore}. */
export interface RedisLockStoreOptions extends RedisConnectionOptions {
  /**
   * Lease of a holder (and of a waiter's place in the queue), in ms. Renewed every `leaseMs / 3`
   * while held; a process that dies (or loses Redis) for longer than this loses its permits, and the
   * next waiter gets the key. Default 10 000. Shorter frees keys of dead processes sooner; longer
   * tolerates longer pauses (GC, a stopped VM) before a live holder loses its lease.
   */
  leaseMs?: number;
  /**
   * Told when a holder's lease was lost while it still ran (it was paused, or Redis was unreachable
   * or restarted, for longer than the lease): another process may now hold the key. The holder is
   * not interrupted (the mutex never interrupts a holder); its fencing token is now stale, and your
   * storage refuses its writes if it checks tokens. Default: `console.warn`.
   */
  onLeaseLost?: (key: string, fencingToken: number) => void;
}

/** The key's queue is full: `@mcp-tether/mutex`'s class (one owner; `isQueueFull` is an `instanceof`), which the middlewares turn into a `BUSY` refusal. */
export { QueueFullError } from '@mcp-tether/mutex';

interface Waiter {
  readonly key: string;
  readonly id: string;
  readonly max: number;
  /** Last time Redis confirmed the waiter's place (ms, local clock). */
  renewedAt: number;
  /** True once the acquire script queued it (renewals skip it before: it is not in Redis yet). */
  queued: boolean;
  grant(token: number): void;
  fail(error: unknown): void;
}

interface Holder {
  readonly key: string;
  readonly id: string;
  readonly token: number;
}

/**
 * A `LockStore` (`@mcp-tether/mutex`) on Redis: `mutex({ store })` and `limit({ store })` then hold
 * across every process that shares the Redis.
 *
 * - At most `max` holders per key, FIFO across processes, a bounded queue (`QueueFullError`, so the
 *   middlewares answer `BUSY`), aborted waiters rejected at once with `signal.reason` (their place is
 *   removed in the background; a grant that raced the abort is handed on at once), idempotent
 *   release.
 * - Each grant carries a fencing token (`ctx.fencingToken` in the handler), strictly increasing per
 *   key across processes and across a Redis restart (while the Redis clock moves forward).
 * - Holders and waiters have a lease of `leaseMs`, renewed every `leaseMs / 3`: a process that dies
 *   holding a key frees it within about `leaseMs`.
 * - Redis unreachable: `acquire` rejects with {@link StoreUnavailableError} (the call fails with a
 *   JSON-RPC error, nothing is held); a waiter whose place could not be renewed for `leaseMs` is
 *   rejected the same way; a waiter Redis forgot while reachable (a restart, or this process too
 *   busy to renew within the lease) is queued again, at the back; a release that fails is reported to
 *   the middleware's `onError`, and the lease frees the key.
 *
 * A lease can expire under a holder that is paused (or cut off from Redis) longer than `leaseMs`,
 * and another process then holds the key too. No lock service can prevent that; what protects
 * your data is the fencing token: send it with every write and have the storage refuse a token
 * lower than the highest it has accepted for that resource.
 */
export class RedisLockStore {
  readonly leaseMs: number;
  readonly #conn: Connections;
  readonly #redis: Redis & LockCommands;
  readonly #id = randomBytes(9).toString('base64url');
  readonly #channel: string;
  readonly #onLeaseLost: (key: string, fencingToken: number) => void;
  /** Waiters of this process by member id. */
  readonly #waiters = new Map<string, Waiter>();
  /** Holders of this process by member id. */
  readonly #holders = new Map<string, Holder>();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #subscribed: Promise<void> | undefined;
  #closed = false;

  constructor(options: RedisLockStoreOptions = {}) {
    const who = '@mcp-tether/redis: RedisLockStore';
    const leaseMs = options.leaseMs ?? 10_000;
    if (!Number.isInteger(leaseMs) || leaseMs < 30)
      throw new TypeError(`${who}: leaseMs must be an integer of at least 30 ms`);
    this.leaseMs = leaseMs;
    this.#conn = connect(options, who);
    this.#channel = `${this.#conn.prefix}lock:grant:`;
    this.#onLeaseLost =
      options.onLeaseLost ??
      ((key, token) =>
        console.warn(
          `[@mcp-tether/redis] lease of ${JSON.stringify(key)} (fencing token ${token}) was lost while held: another process may hold it now`,
        ));
    this.#redis = withLockCommands(this.#conn.redis);
  }

  /** The `LockStore.acquire` of `@mcp-tether/mutex`. */
  async acquire(key: string, options: LockAcquireOptions): Promise<LockGrant> {
    const { max, maxQueue, signal } = options;
    if (!Number.isInteger(max) || max < 1)
      throw new TypeError(`LockStore.acquire: max must be a positive integer, got ${String(max)}`);
    if (signal.aborted) throw signal.reason;
    if (this.#closed) throw new StoreUnavailableError(`lock ${JSON.stringify(key)}`, new Error('the store is closed'));
    const id = `${this.#id}#${++this.#seq}#${max}`;
    try {
      await this.#subscribe();
    } catch (err) {
      throw new StoreUnavailableError(`lock ${JSON.stringify(key)}`, err);
    }
    if (signal.aborted) throw signal.reason;
    return new Promise<LockGrant>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        this.#waiters.delete(id);
        reject(signal.reason);
        // Leave the queue (or hand on a grant that raced the abort) in the background.
        void this.#leave(key, id);
      };
      const waiter: Waiter = {
        key,
        id,
        max,
        renewedAt: Date.now(),
        queued: false,
        grant: (token) => {
          if (settled) return;
          settled = true;
          this.#waiters.delete(id);
          signal.removeEventListener('abort', onAbort);
          resolve(this.#hold(key, id, token));
        },
        fail: (error) => {
          if (settled) return;
          settled = true;
          this.#waiters.delete(id);
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // Registered before the script runs: a grant published right after queueing finds it.
      this.#waiters.set(id, waiter);
      this.#schedule();
      this.#redis
        .tetherLockAcquire(
          ...this.#keys(key),
          id,
          max,
          maxQueue === Infinity ? -1 : maxQueue,
          this.leaseMs,
          this.#channel,
          this.#keyTtl(),
        )
        .then(
          ([status, n]) => {
            if (status === 1) {
              if (settled) {
                // aborted while the script ran: give the grant back
                void this.#release(key, id).catch(() => {});
              } else waiter.grant(n);
            } else if (status === 0) {
              waiter.fail(new QueueFullError(key, n));
            } else {
              waiter.renewedAt = Date.now();
              waiter.queued = true;
            }
          },
          (err: unknown) => waiter.fail(new StoreUnavailableError(`lock ${JSON.stringify(key)}`, err)),
        );
    });
  }

  /** Holders and waiters of a key as Redis has them now (expired leases not yet purged included). */
  async inspect(key: string): Promise<{ holders: number; waiting: number }> {
    const [h, , q] = this.#keys(key);
    const [holders, waiting] = await Promise.all([this.#redis.zcard(h), this.#redis.zcard(q)]);
    return { holders, waiting };
  }

  /** True when Redis keeps nothing for the key but its fencing counter. */
  async idle(key: string): Promise<boolean> {
    return (await this.#redis.exists(...this.#keys(key).slice(0, 5))) === 0;
  }

  /** Holders and waiters of this process (for diagnostics). */
  get local(): { holders: number; waiting: number } {
    return { holders: this.#holders.size, waiting: this.#waiters.size };
  }

  /**
   * Stop renewing, reject this process's waiters (and take them out of the queue), close the
   * connections the store opened. Held permits are not released (their holders release them, or
   * their leases expire).
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    const leaving: Promise<unknown>[] = [];
    for (const w of [...this.#waiters.values()]) {
      w.fail(new StoreUnavailableError(`lock ${JSON.stringify(w.key)}`, new Error('the store was closed')));
      // Give the place up now rather than at the end of its lease (best effort).
      leaving.push(this.#leave(w.key, w.id));
    }
    await Promise.all(leaving);
    await this.#conn.close();
  }

  #keys(key: string): [string, string, string, string, string, string] {
    return lockKeys(this.#conn.prefix, key);
  }

  #keyTtl(): number {
    return lockKeyTtl(this.leaseMs);
  }

  /** Release `id`'s permit on `key` (the next waiter is granted in the same script). */
  #release(key: string, id: string): Promise<number> {
    return this.#redis.tetherLockRelease(...this.#keys(key), id, this.leaseMs, this.#channel, this.#keyTtl());
  }

  /** Take `id` out of `key`'s queue, or hand on a grant it just got (best effort: errors are ignored; the lease ends it). */
  #leave(key: string, id: string): Promise<unknown> {
    return this.#redis
      .tetherLockLeave(...this.#keys(key), id, this.leaseMs, this.#channel, this.#keyTtl())
      .catch(() => {});
  }

  #hold(key: string, id: string, token: number): LockGrant {
    this.#holders.set(id, { key, id, token });
    let released: Promise<void> | undefined;
    const release = () => {
      if (released) return released;
      this.#holders.delete(id);
      released = this.#release(key, id).then(
        () => undefined,
        (err: unknown) => {
          throw new StoreUnavailableError(
            `release of lock ${JSON.stringify(key)} (its lease frees it within ${this.leaseMs} ms)`,
            err,
          );
        },
      );
      return released;
    };
    return Object.assign(release, { fencingToken: token });
  }

  /**
   * Redis forgot a live waiter (Redis restarted, or this process was too busy to renew within the
   * lease): queue it again, at the back (it keeps waiting; FIFO holds from its new place on).
   */
  #requeue(w: Waiter): void {
    w.queued = false;
    this.#redis
      .tetherLockAcquire(...this.#keys(w.key), w.id, w.max, -1, this.leaseMs, this.#channel, this.#keyTtl())
      .then(
        ([status, n]) => {
          if (!this.#waiters.has(w.id)) {
            // it gave up meanwhile: undo (unless a grant message made it a holder)
            if (!this.#holders.has(w.id) && (status === 1 || status === 2)) void this.#leave(w.key, w.id);
          } else if (status === 1) w.grant(n);
          else {
            w.renewedAt = Date.now();
            w.queued = true;
          }
        },
        (err: unknown) => w.fail(new StoreUnavailableError(`lock ${JSON.stringify(w.key)}`, err)),
      );
  }

  #subscribe(): Promise<void> {
    if (this.#subscribed) return this.#subscribed;
    const sub = this.#conn.subscriber();
    const channel = this.#channel + this.#id;
    sub.on('message', (ch: string, message: string) => {
      if (ch !== channel) return;
      const space = message.lastIndexOf(' ');
      const waiter = this.#waiters.get(message.slice(0, space));
      if (waiter) waiter.grant(Number(message.slice(space + 1)));
      // else: that waiter gave up; its leave script hands the grant on
    });
    // After a reconnection, grants published meanwhile were missed: ask Redis at once.
    sub.on('ready', () => void this.#renew());
    const subscribing = sub.subscribe(channel).then(() => undefined);
    this.#subscribed = subscribing;
    subscribing.catch(() => {
      if (this.#subscribed === subscribing) this.#subscribed = undefined;
    });
    return subscribing;
  }

  #schedule(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setInterval(() => void this.#renew(), Math.max(10, Math.floor(this.leaseMs / 3)));
    this.#timer.unref();
  }

  #renewing = false;
  /** Renew every lease of this process, one script per key; pick up missed grants, reject lost waiters. */
  async #renew(): Promise<void> {
    if (this.#renewing || this.#closed) return;
    if (this.#waiters.size === 0 && this.#holders.size === 0) {
      if (this.#timer) clearInterval(this.#timer);
      this.#timer = undefined;
      return;
    }
    this.#renewing = true;
    try {
      const byKey = new Map<string, string[]>();
      for (const { key, id } of [...this.#holders.values(), ...[...this.#waiters.values()].filter((w) => w.queued)]) {
        let ids = byKey.get(key);
        if (!ids) {
          ids = [];
          byKey.set(key, ids);
        }
        ids.push(id);
      }
      await Promise.all(
        [...byKey].map(async ([key, ids]) => {
          let out: number[];
          try {
            out = await this.#redis.tetherLockRenew(
              ...this.#keys(key),
              this.leaseMs,
              this.#channel,
              this.#keyTtl(),
              ...ids,
            );
          } catch (err) {
            // Redis unreachable: a waiter whose place has not been confirmed for a lease is lost.
            for (const id of ids) {
              const w = this.#waiters.get(id);
              if (w && Date.now() - w.renewedAt > this.leaseMs)
                w.fail(new StoreUnavailableError(`lock ${JSON.stringify(key)}`, err));
            }
            return;
          }
          ids.forEach((id, i) => {
            const r = out[i]!;
            const w = this.#waiters.get(id);
            const h = this.#holders.get(id);
            if (w) {
              if (r > 0)
                w.grant(r); // granted, but the message was missed
              else if (r === 0) w.renewedAt = Date.now();
              else this.#requeue(w);
            } else if (h && r < 0) {
              this.#holders.delete(id); // keep the local count honest; its release is a no-op in Redis
              try {
                this.#onLeaseLost(key, h.token);
              } catch {
                // a failing reporter must not stop the renewals
              }
            }
          });
        }),
      );
    } finally {
      this.#renewing = false;
    }
  }
}
