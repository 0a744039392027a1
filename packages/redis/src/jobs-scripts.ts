/**
 * The Lua scripts of `RedisJobStore` (`./jobs.ts`): each change of a job and of its indexes is one
 * script, so every replica sees it whole. Key names are in `./jobs.ts`'s header.
 */

/** Jobs an owner's index (`owner:<owner>`, what `list` pages through) holds at most, newest kept. */
export const MAX_INDEXED = 10_000;

/**
 * Lua: keep an index key at least until `at` (ms): never shortens it; `at = ''` (a job without TTL)
 * makes it persistent; a key that `existed` without TTL stays so (a job without TTL holds it).
 */
const KEEP = `
local function keep(k, at, existed)
  if redis.call('EXISTS', k) == 0 then return end
  if at == '' then redis.call('PERSIST', k); return end
  local cur = redis.call('PEXPIRETIME', k)
  if cur == -1 and existed then return end
  if cur < tonumber(at) then redis.call('PEXPIREAT', k, at) end
end
`;

/**
 * Lua: retention (contract rule 9). `retire(...)` records a job that just ended in its client's
 * finished index (`fin:<client>`, a sorted set in finishing order; `finsz:<client>` their bytes) and
 * in every client's (`allfin`, `allfinsz`), then evicts the oldest finished jobs, the client's first,
 * until both are within their bounds (`-1` = none); the job that just ended is never evicted. A
 * member is `<bytes> <id> c<client> o<owner> i<idempotency key>` (encoded parts; `-` for no key): what eviction
 * needs to delete the job's keys and index entries. Members of jobs that expired meanwhile are
 * counted until evicted (the bound holds, a little early).
 */
const RETIRE = `${KEEP}
local function evict(prefix, member, allfin, allfinsz)
  local b, eid, eclient, eowner, eidem = string.match(member, '^(%d+) (%S+) c(%S*) o(%S*) (%S+)$')
  if not b then redis.call('ZREM', allfin, member); return end
  local fin, finsz = prefix .. 'fin:' .. eclient, prefix .. 'finsz:' .. eclient
  if redis.call('ZREM', fin, member) == 1 and redis.call('EXISTS', finsz) == 1 then redis.call('DECRBY', finsz, b) end
  if redis.call('ZREM', allfin, member) == 1 and redis.call('EXISTS', allfinsz) == 1 then redis.call('DECRBY', allfinsz, b) end
  local jk = prefix .. 'job:' .. eid
  redis.call('DEL', jk, jk .. ':partial', jk .. ':pbytes')
  redis.call('ZREM', prefix .. 'owner:' .. eowner, eid)
  if eidem ~= '-' then
    local ik = prefix .. 'idem:' .. eowner .. ':' .. string.sub(eidem, 2)
    if redis.call('GET', ik) == eid then redis.call('DEL', ik) end
  end
end
local function over(set, size, maxN, maxB)
  return (maxN >= 0 and redis.call('ZCARD', set) > maxN) or (maxB >= 0 and tonumber(redis.call('GET', size) or '0') > maxB)
end
local function retire(prefix, jk, json, tail, fin, finsz, allfin, allfinsz, finseq, limits)
  local id = string.match(tail, '^(%S+)')
  local bytes = #json + tonumber(redis.call('GET', jk .. ':pbytes') or '0')
  local member = bytes .. ' ' .. tail
  local had = {}
  for i, k in ipairs({fin, finsz, allfin, allfinsz, finseq}) do had[i] = redis.call('EXISTS', k) == 1 end
  local seq = redis.call('INCR', finseq)
  redis.call('ZADD', fin, seq, member); redis.call('INCRBY', finsz, bytes)
  redis.call('ZADD', allfin, seq, member); redis.call('INCRBY', allfinsz, bytes)
  local t = redis.call('PEXPIRETIME', jk)
  local at = ''
  if t > 0 then at = tostring(t) end
  for i, k in ipairs({fin, finsz, allfin, allfinsz, finseq}) do keep(k, at, had[i]) end
  for _ = 1, 100000 do
    if not over(fin, finsz, tonumber(limits[1]), tonumber(limits[2])) then break end
    local oldest = redis.call('ZRANGE', fin, 0, 0)[1]
    if oldest == nil or oldest == member then break end
    evict(prefix, oldest, allfin, allfinsz)
  end
  for _ = 1, 100000 do
    if not over(allfin, allfinsz, tonumber(limits[3]), tonumber(limits[4])) then break end
    local oldest = redis.call('ZRANGE', allfin, 0, 0)[1]
    if oldest == nil or oldest == member then break end
    evict(prefix, oldest, allfin, allfinsz)
  end
end
`;

/**
 * KEYS: owner zset, the client's live zset, job, idem (or ''), every client's live zset, then the
 * retention keys (fin, finsz, allfin, allfinsz, finseq) · ARGV: id, json, owner-seq key,
 * maxLivePerClient (-1 = none), now, expireAt ('' = none), prefix, maxLive (-1 = none), live score
 * ('' = a terminal job: not live), member tail, 4 retention limits → {'ok'} | {'dup', json} |
 * {'limit', n} | {'global', n} | {'exists'}.
 *
 * Live sets are sorted sets scored by the time a job stops counting (its expiry, or just past its
 * runner's lease): counting is `ZREMRANGEBYSCORE … now` then `ZCARD`, O(log n) per create whatever
 * the number of live jobs.
 */
export const CREATE = `${RETIRE}
local zset, live, jk, ik, all = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, json, seqKey, maxLive, now, expireAt, prefix, maxAll, score = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], tonumber(ARGV[8]), ARGV[9]
if redis.call('EXISTS', jk) == 1 then return {'exists'} end
if ik ~= '' then
  local other = redis.call('GET', ik)
  if other then
    local found = redis.call('GET', prefix .. 'job:' .. other)
    if found then return {'dup', found} end
  end
end
redis.call('ZREMRANGEBYSCORE', live, '-inf', now)
redis.call('ZREMRANGEBYSCORE', all, '-inf', now)
if maxLive >= 0 then
  local n = redis.call('ZCARD', live)
  if n >= maxLive then return {'limit', n} end
end
if maxAll >= 0 then
  local n = redis.call('ZCARD', all)
  if n >= maxAll then return {'global', n} end
end
local had = {redis.call('EXISTS', zset) == 1, redis.call('EXISTS', seqKey) == 1, redis.call('EXISTS', live) == 1, redis.call('EXISTS', all) == 1}
redis.call('SET', jk, json)
if expireAt ~= '' then redis.call('PEXPIREAT', jk, expireAt) end
redis.call('ZADD', zset, redis.call('INCR', seqKey), id)
-- an owner's index holds its newest ${MAX_INDEXED} jobs at most (older ones are no longer listed)
redis.call('ZREMRANGEBYRANK', zset, 0, -${MAX_INDEXED + 1})
if score ~= '' then
  redis.call('ZADD', live, score, id)
  redis.call('ZADD', all, score, id)
end
keep(zset, expireAt, had[1]); keep(seqKey, expireAt, had[2]); keep(live, expireAt, had[3]); keep(all, expireAt, had[4])
if ik ~= '' then
  redis.call('SET', ik, id)
  if expireAt ~= '' then redis.call('PEXPIREAT', ik, expireAt) end
end
if score == '' then retire(prefix, jk, json, ARGV[10], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], {ARGV[11], ARGV[12], ARGV[13], ARGV[14]}) end
return {'ok'}
`;

/**
 * KEYS: job, partial, the client's live zset, idem ('' none), owner zset, owner seq, every client's
 * live zset, partial bytes, then the retention keys (fin, finsz, allfin, allfinsz, finseq) · ARGV:
 * old json, new json, expireAt ('' keep, 'persist', ms), terminal ('1'/'0'), id, channel, message,
 * live score, prefix, member tail, 4 retention limits → 1 written, 0 conflict.
 */
export const CAS = `${RETIRE}
local jk, pk, live, ik, zset, seqKey, all, pbk = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
if redis.call('GET', jk) ~= ARGV[1] then return 0 end
redis.call('SET', jk, ARGV[2], 'KEEPTTL')
local at = ARGV[3]
if at == 'persist' then
  redis.call('PERSIST', jk); redis.call('PERSIST', pk); redis.call('PERSIST', pbk)
  if ik ~= '' then redis.call('PERSIST', ik) end
  keep(zset, '', true); keep(seqKey, '', true); keep(live, '', true); keep(all, '', true)
elseif at ~= '' then
  redis.call('PEXPIREAT', jk, at); redis.call('PEXPIREAT', pk, at); redis.call('PEXPIREAT', pbk, at)
  if ik ~= '' then redis.call('PEXPIREAT', ik, at) end
  keep(zset, at, false); keep(seqKey, at, false); keep(live, at, false); keep(all, at, false)
end
if ARGV[4] == '1' then
  redis.call('ZREM', live, ARGV[5]); redis.call('ZREM', all, ARGV[5])
  retire(ARGV[9], jk, ARGV[2], ARGV[10], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], {ARGV[11], ARGV[12], ARGV[13], ARGV[14]})
else
  -- still live: counted until its new deadline (a lease renewed, a TTL changed); the sets live as long as the job
  local had = {redis.call('EXISTS', live) == 1, redis.call('EXISTS', all) == 1}
  redis.call('ZADD', live, ARGV[8], ARGV[5]); redis.call('ZADD', all, ARGV[8], ARGV[5])
  local t = redis.call('PEXPIRETIME', jk)
  local jat = ''
  if t > 0 then jat = tostring(t) end
  keep(live, jat, had[1]); keep(all, jat, had[2])
end
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
`;

/** KEYS: job, partial, partial bytes · ARGV: chunk, now, channel, id, fence ('' = none) → new length, or -1. */
export const APPEND = `
local jk, pk, pbk = KEYS[1], KEYS[2], KEYS[3]
local j = redis.call('GET', jk)
if not j then return -1 end
local r = cjson.decode(j)
if r.status == 'completed' or r.status == 'failed' or r.status == 'cancelled' then return -1 end
if type(r.leaseUntil) == 'number' and tonumber(ARGV[2]) > r.leaseUntil then return -1 end
if ARGV[5] ~= '' and (type(r.fence) ~= 'number' or r.fence ~= tonumber(ARGV[5])) then return -1 end
local n = redis.call('RPUSH', pk, ARGV[1])
redis.call('INCRBY', pbk, #ARGV[1])
local ttl = redis.call('PEXPIRETIME', jk)
if ttl > 0 then redis.call('PEXPIREAT', pk, ttl); redis.call('PEXPIREAT', pbk, ttl) end
redis.call('PUBLISH', ARGV[3], ARGV[4] .. '\\n' .. cjson.encode({type = 'partial', length = n}))
return n
`;

/** KEYS: the cursor key · ARGV: a new random key, its lifetime ms → {key, expires at (Redis ms)}. */
export const CURSOR_KEY = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1])}
`;
