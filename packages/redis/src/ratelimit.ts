/**
 * @mcp-tether/redis/ratelimit — `RedisRateLimitStore`: the `RateLimitStore` of
 * `@mcp-tether/ratelimit` on Redis, so that every replica behind a load balancer draws from the same
 * buckets.
 *
 * One bucket is one hash `<prefix>rl:<bucket key>` with fields `t` (tokens, a float) and `at` (ms,
 * Redis server clock). A check is one Lua script over all the call's buckets (one round trip,
 * atomic, all or nothing); the middleware's keys put every bucket of one client in one hash tag, so
 * a check stays in one Redis Cluster slot. A bucket written gets a TTL equal to the time it needs to
 * be full again (a missing bucket is a full one), so nothing outlives its use; a refused check writes
 * nothing.
 * @packageDocumentation
 */
import type { BucketCheck, RateLimitStore, TakeResult } from '@mcp-tether/ratelimit';
import type { Redis } from 'ioredis';
import {
  connect,
  type Connections,
  type RedisConnectionOptions,
  StoreUnavailableError,
  withScripts,
} from './connection.js';

/** Options of {@link RedisRateLimitStore}. */
export type RedisRateLimitStoreOptions = RedisConnectionOptions;

/**
 * KEYS: buckets. ARGV: burst, perSecond per bucket → {1, 0, 0} taken; {0, waitMs, index (1-based)} refused.
 * Times are the Redis server's clock, so replicas need not agree on theirs.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local tokens = {}
local wait, worst = 0, 0
for i = 1, #KEYS do
  local burst, rate = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i]) / 1000
  local v = redis.call('HMGET', KEYS[i], 't', 'at')
  local tk = burst
  if v[1] and v[2] then
    tk = math.min(burst, tonumber(v[1]) + math.max(0, now - tonumber(v[2])) * rate)
  end
  tokens[i] = tk
  if tk < 1 then
    local w = math.max(1, math.ceil((1 - tk) / rate - 0.000001))
    if w > wait then wait, worst = w, i end
  end
end
if worst > 0 then return {0, wait, worst} end
for i = 1, #KEYS do
  local burst, rate = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i]) / 1000
  local left = tokens[i] - 1
  redis.call('HSET', KEYS[i], 't', string.format('%.17g', left), 'at', string.format('%.17g', now))
  redis.call('PEXPIRE', KEYS[i], math.max(1, math.ceil((burst - left) / rate)))
end
return {1, 0, 0}
`;

interface RateLimitCommands {
  tetherRateTake(...args: Array<string | number>): Promise<[number, number, number]>;
}

/**
 * A `RateLimitStore` (`@mcp-tether/ratelimit`) on Redis: `rateLimit({ store })` then limits each
 * client across every process sharing the Redis.
 *
 * - One round trip per check (one Lua script over the call's buckets: atomic, all or nothing).
 * - Every bucket key expires when it would be full again; a refused check writes nothing.
 * - Redis unreachable: `take` rejects with {@link StoreUnavailableError} (`-32603`,
 *   `data.code: 'STORE_UNAVAILABLE'`) within the command timeout; the call fails with it (or passes,
 *   with the middleware's `onStoreError: 'allow'`), and the store reconnects in the background.
 * - A Redis restart forgets every bucket: each client's buckets start full again.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #conn: Connections;
  readonly #redis: Redis & RateLimitCommands;

  constructor(options: RedisRateLimitStoreOptions = {}) {
    this.#conn = connect(options, '@mcp-tether/redis: RedisRateLimitStore');
    this.#redis = withScripts<RateLimitCommands>(this.#conn.redis, { tetherRateTake: { lua: TAKE } });
  }

  /** The `RateLimitStore.take` of `@mcp-tether/ratelimit`. */
  async take(checks: readonly BucketCheck[]): Promise<TakeResult> {
    if (checks.length === 0) return { allowed: true, retryAfterMs: 0, refusedBy: -1 };
    const args: Array<string | number> = [checks.length];
    for (const c of checks) args.push(this.#conn.prefix + 'rl:' + c.key);
    for (const c of checks) args.push(c.burst, c.perSecond);
    let out: [number, number, number];
    try {
      out = await this.#redis.tetherRateTake(...args);
    } catch (err) {
      throw new StoreUnavailableError('rate limit check', err);
    }
    const [allowed, waitMs, index] = out;
    return allowed === 1
      ? { allowed: true, retryAfterMs: 0, refusedBy: -1 }
      : { allowed: false, retryAfterMs: waitMs, refusedBy: index - 1 };
  }

  /** Close the connection the store opened (a client you passed stays open). */
  async close(): Promise<void> {
    await this.#conn.close();
  }
}
