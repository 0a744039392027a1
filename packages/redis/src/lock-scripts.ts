/**
 * The Lua scripts of `RedisLockStore` (`./lock.ts`), one per change (atomic), and the keys they
 * work on. Per lock key `K`, five Redis keys share the hash tag `{K}` (one cluster slot):
 * - `h`: holders, a sorted set member → lease expiry (ms, Redis server clock);
 * - `t`: holders' fencing tokens, a hash member → token;
 * - `q`: waiters, a sorted set member → arrival sequence (FIFO);
 * - `w`: waiters' leases, a sorted set member → expiry;
 * - `s`: the arrival sequence counter;
 * and `f`, the fencing counter (it outlives the others by a day; when it is gone it restarts at the
 * Redis clock in µs, so tokens keep increasing). A member id is `<process>#<seq>#<max>`; a grant is
 * published on `<channel prefix><process>` as `<member> <token>`.
 */
import type { Redis } from 'ioredis';
import { withScripts } from './connection.js';

const PRELUDE = `
local H, T, Q, W, S, F = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local function now_ms() local t = redis.call('TIME'); return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end
local function fence()
  if redis.call('EXISTS', F) == 0 then
    local t = redis.call('TIME')
    redis.call('SET', F, string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2])))
  end
  local token = redis.call('INCR', F)
  redis.call('PEXPIRE', F, 86400000)
  return token
end
local function grant(id, now, lease)
  local token = fence()
  redis.call('ZADD', H, now + lease, id)
  redis.call('HSET', T, id, string.format('%.0f', token))
  return token
end
local function purge(now)
  local dead = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  for _, id in ipairs(dead) do redis.call('ZREM', H, id); redis.call('HDEL', T, id) end
  dead = redis.call('ZRANGEBYSCORE', W, '-inf', now)
  for _, id in ipairs(dead) do redis.call('ZREM', W, id); redis.call('ZREM', Q, id) end
end
local function promote(now, lease, channel)
  while true do
    local first = redis.call('ZRANGE', Q, 0, 0)
    if #first == 0 then return end
    local w = first[1]
    local wmax = tonumber(string.match(w, '#(%d+)$'))
    if redis.call('ZCARD', H) >= wmax then return end
    redis.call('ZREM', Q, w)
    redis.call('ZREM', W, w)
    local token = grant(w, now, lease)
    redis.call('PUBLISH', channel .. string.match(w, '^([^#]+)#'), w .. ' ' .. string.format('%.0f', token))
  end
end
local function tidy(ttl)
  if redis.call('ZCARD', H) == 0 and redis.call('ZCARD', Q) == 0 then
    redis.call('DEL', H, T, Q, W, S)
  else
    for _, k in ipairs({H, T, Q, W, S}) do redis.call('PEXPIRE', k, ttl) end
  end
end
`;

/** ARGV: id, max, maxQueue (-1 = unbounded), lease, channel prefix, key ttl → {1, token} granted, {0, queued} full, {2, position} queued. */
const ACQUIRE = `${PRELUDE}
local id, max, maxQueue, lease, channel, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local now = now_ms()
purge(now)
promote(now, lease, channel)
-- a re-queue of a waiter Redis may still know (idempotent)
if redis.call('ZSCORE', H, id) then return {1, tonumber(redis.call('HGET', T, id))} end
if redis.call('ZSCORE', Q, id) then return {2, redis.call('ZRANK', Q, id) + 1} end
local queued = redis.call('ZCARD', Q)
if queued == 0 and redis.call('ZCARD', H) < max then
  local token = grant(id, now, lease)
  tidy(ttl)
  return {1, token}
end
if maxQueue >= 0 and queued >= maxQueue then
  tidy(ttl)
  return {0, queued}
end
redis.call('ZADD', Q, redis.call('INCR', S), id)
redis.call('ZADD', W, now + lease, id)
tidy(ttl)
return {2, queued + 1}
`;

/** ARGV: id, lease, channel, ttl → 1 released, 0 was not held. */
const RELEASE = `${PRELUDE}
local id, lease, channel, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local removed = redis.call('ZREM', H, id)
redis.call('HDEL', T, id)
purge(now)
promote(now, lease, channel)
tidy(ttl)
return removed
`;

/** A waiter gave up. ARGV: id, lease, channel, ttl → 0 left the queue, 1 had just been granted (released now), -1 unknown. */
const LEAVE = `${PRELUDE}
local id, lease, channel, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local result = -1
if redis.call('ZREM', Q, id) == 1 then
  redis.call('ZREM', W, id)
  result = 0
elseif redis.call('ZREM', H, id) == 1 then
  redis.call('HDEL', T, id)
  result = 1
end
purge(now)
promote(now, lease, channel)
tidy(ttl)
return result
`;

/** Renew leases. ARGV: lease, channel, ttl, ids... → per id: token (held), 0 (waiting), -1 (unknown: lease lost). */
const RENEW = `${PRELUDE}
local lease, channel, ttl = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local now = now_ms()
purge(now)
promote(now, lease, channel)
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', H, id) then
    redis.call('ZADD', H, now + lease, id)
    out[#out + 1] = tonumber(redis.call('HGET', T, id))
  elseif redis.call('ZSCORE', W, id) then
    redis.call('ZADD', W, now + lease, id)
    out[#out + 1] = 0
  else
    out[#out + 1] = -1
  end
end
tidy(ttl)
return out
`;

/** The scripts as ioredis commands (keys first: {@link lockKeys}). */
export interface LockCommands {
  tetherLockAcquire(...args: Array<string | number>): Promise<[number, number]>;
  tetherLockRelease(...args: Array<string | number>): Promise<number>;
  tetherLockLeave(...args: Array<string | number>): Promise<number>;
  tetherLockRenew(...args: Array<string | number>): Promise<number[]>;
}

/** The six keys of lock `key` under `prefix`: h, t, q, w, s, f (see the header). */
export function lockKeys(prefix: string, key: string): [string, string, string, string, string, string] {
  const base = `${prefix}lock:{${key}}:`;
  return [`${base}h`, `${base}t`, `${base}q`, `${base}w`, `${base}s`, `${base}f`];
}

/** How long a lock's keys outlive their last change, ms: three leases, at least a minute. */
export function lockKeyTtl(leaseMs: number): number {
  return Math.max(leaseMs * 3, 60_000);
}

/** Define the lock scripts on `redis` (once per connection) and return it typed with them. */
export function withLockCommands(redis: Redis): Redis & LockCommands {
  return withScripts<LockCommands>(redis, {
    tetherLockAcquire: { numberOfKeys: 6, lua: ACQUIRE },
    tetherLockRelease: { numberOfKeys: 6, lua: RELEASE },
    tetherLockLeave: { numberOfKeys: 6, lua: LEAVE },
    tetherLockRenew: { numberOfKeys: 6, lua: RENEW },
  });
}
