/**
 * The bucket store: where token counts live. The in-memory default serves one process; a shared
 * store (`RedisRateLimitStore` of `@mcp-tether/redis/ratelimit`) serves every replica.
 */

/**
 * A token bucket: it holds at most `burst` tokens, gains `perSecond` tokens per second, and a call
 * takes one. A bucket nobody used for `burst / perSecond` seconds is full again, which is the same as
 * not existing: stores forget it then.
 */
export interface Rate {
  /** Most calls at once after a quiet period (the bucket's capacity). A positive integer. */
  readonly burst: number;
  /** Sustained calls per second (tokens added per second, fractions allowed: `0.5` is one call every 2 s). Positive and finite. */
  readonly perSecond: number;
}

/** One bucket a call must take a token from. */
export interface BucketCheck extends Rate {
  /** The bucket's key (opaque to the store; the middleware builds it from the client key and the scope). */
  readonly key: string;
}

/** What {@link RateLimitStore.take} decided. */
export interface TakeResult {
  /** True when every bucket had a token and one was taken from each. */
  readonly allowed: boolean;
  /**
   * When refused: in how many ms every bucket will have a token again (rounded up, at least 1).
   * 0 when allowed.
   */
  readonly retryAfterMs: number;
  /** When refused: the index (in the `checks` given) of the bucket that needs the longest wait. */
  readonly refusedBy: number;
}

/**
 * Where buckets live. Implement it to share limits between processes.
 *
 * The contract: `take(checks)` is atomic and all-or-nothing. If every bucket holds at least one
 * token (after refilling it for the time elapsed, never past its `burst`), take one token from each
 * and answer `allowed: true`; otherwise take nothing and answer `allowed: false` with the wait until
 * all of them hold one. A bucket the store does not know is full. A store forgets a bucket once it
 * would be full again (so that arbitrary keys do not accumulate), and keeps a bound on what it holds.
 * Failures (store unreachable) reject; the middleware then refuses the call (or lets it through with
 * `onStoreError: 'allow'`).
 */
export interface RateLimitStore {
  take(checks: readonly BucketCheck[]): Promise<TakeResult> | TakeResult;
}

/** Options of {@link MemoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /**
   * Most buckets held at once. Past it, the least recently used bucket is dropped (that client's
   * bucket starts full again: keep the bound well above the number of active clients × scopes).
   * Default 100 000 (about 10 MB).
   */
  maxBuckets?: number;
  /** Clock in ms. Default `Date.now` (so vitest's fake timers drive it). */
  now?: () => number;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was computed, in ms. */
  at: number;
  /** When the bucket is full again, in ms (then it is forgotten). */
  fullAt: number;
}

/** Tokens of a bucket at `now`: its stored count refilled for the time elapsed, capped at `burst`. */
export function refill(bucket: { tokens: number; at: number } | undefined, rate: Rate, now: number): number {
  if (!bucket) return rate.burst;
  return Math.min(rate.burst, bucket.tokens + (Math.max(0, now - bucket.at) * rate.perSecond) / 1000);
}

/** Ms until a bucket holding `tokens` has one token (0 when it has one now). */
export function waitFor(tokens: number, rate: Rate): number {
  // (less a hair, so that float noise such as 1.0000000000000009 does not add a whole ms)
  return tokens >= 1 ? 0 : Math.max(1, Math.ceil(((1 - tokens) * 1000) / rate.perSecond - 1e-6));
}

/** Entries looked at for expiry on each `take` (the oldest first): the map is swept as it is used. */
const SWEEP = 4;

/**
 * The in-memory {@link RateLimitStore}: one process. A map in least-recently-used order; each
 * `take` forgets up to a few of the oldest buckets that are full again, and the map never holds more
 * than `maxBuckets` (the least recently used goes first). No timer.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly maxBuckets: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    const max = options.maxBuckets ?? 100_000;
    if (!Number.isInteger(max) || max < 1)
      throw new TypeError(`@mcp-tether/ratelimit: maxBuckets must be a positive integer, got ${String(max)}`);
    this.maxBuckets = max;
    this.#now = options.now ?? Date.now;
  }

  take(checks: readonly BucketCheck[]): TakeResult {
    const now = this.#now();
    this.#sweep(now);
    const tokens = checks.map((c) => refill(this.#buckets.get(c.key), c, now));
    let retryAfterMs = 0;
    let refusedBy = -1;
    tokens.forEach((t, i) => {
      const wait = waitFor(t, checks[i]!);
      if (wait > retryAfterMs) {
        retryAfterMs = wait;
        refusedBy = i;
      }
    });
    if (refusedBy >= 0) return { allowed: false, retryAfterMs, refusedBy };
    checks.forEach((c, i) => {
      const left = tokens[i]! - 1;
      this.#buckets.delete(c.key); // re-insert: most recently used last
      this.#buckets.set(c.key, { tokens: left, at: now, fullAt: now + ((c.burst - left) * 1000) / c.perSecond });
    });
    while (this.#buckets.size > this.maxBuckets) {
      const oldest = this.#buckets.keys().next().value as string;
      this.#buckets.delete(oldest);
    }
    return { allowed: true, retryAfterMs: 0, refusedBy: -1 };
  }

  /** Buckets held now (full ones not yet swept included). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Tokens a bucket holds now (`undefined` when the store does not hold it: it is full). For tests and diagnostics. */
  peek(key: string, rate: Rate): number | undefined {
    const b = this.#buckets.get(key);
    return b ? refill(b, rate, this.#now()) : undefined;
  }

  #sweep(now: number): void {
    let n = 0;
    for (const [key, b] of this.#buckets) {
      if (n++ >= SWEEP) break;
      if (b.fullAt <= now) this.#buckets.delete(key);
    }
  }
}
