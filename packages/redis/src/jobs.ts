/**
 * @mcp-tether/redis/jobs — `RedisJobStore`: the `JobStore` of `@mcp-tether/jobs` on Redis, so that a job started on one
 * replica is seen, polled, answered and cancelled from any other.
 *
 * Keys (`<prefix>` then `jobs:`): `job:<id>` the record (JSON; expires at `createdAt + ttlMs`),
 * `job:<id>:partial` its chunks (a list, same expiry), `owner:<owner>` the owner's job ids by
 * creation sequence (a sorted set: `list`, its newest 10 000), `oseq:<owner>` that sequence,
 * `live:<client>` the non-terminal ids of one client key (the per-client cap), `alllive` every
 * client's (the global ceiling), `idem:<owner>:<key>` an idempotency key's job id. Every key expires:
 * a job's keys with the job, the index keys (`owner`, `oseq`, `live`, `alllive`) with the last of their
 * jobs (each create or TTL change extends them to the job's expiry, never shortens them). Only a
 * job created with `ttlMs: null` (the operator's choice) keeps its keys, and its owner's, until deleted. Signals (update, cancel, input, partial) go
 * through one pub/sub channel that every store of the deployment listens to, in Redis order.
 *
 * Records are written with compare-and-set (a Lua script that writes only if the stored JSON is
 * still the one the change was computed from), so concurrent updates from several replicas never
 * lose one. Times are the replicas' clocks (`Date.now()`): keep them in sync (NTP) to well within
 * the runners' lease.
 * @packageDocumentation
 */
import {
  type CreateLimits,
  JobLimitError,
  RUNNER_LOST_MESSAGE,
  isTerminal,
  type JobPatch,
  type JobRecord,
  type JobSignal,
  type JobStore,
  type NewJob,
  type WriteOptions,
} from '@mcp-tether/jobs';
import { ReplyError, type Redis } from 'ioredis';
import { connect, StoreUnavailableError, type Connections, type RedisConnectionOptions } from './connection.js';

/** The job store contract's values are `@mcp-tether/jobs`'s (one owner): the same class, the same words. */
export { JobLimitError, RUNNER_LOST_MESSAGE } from '@mcp-tether/jobs';

/** Options of {@link RedisJobStore}. */
export interface RedisJobStoreOptions extends RedisConnectionOptions {
  /** Clock, `Date.now()` ms. Default `Date.now`. */
  now?: () => number;
}

/** Jobs an owner's index (`owner:<owner>`, what `list` pages through) holds at most, newest kept. */
const MAX_INDEXED = 10_000;

/**
 * Lua: keep an owner's index key at least until `at` (ms): never shortens it; `at = ''` (a job
 * without TTL) makes it persistent; a key that `existed` without TTL stays so (a job without TTL holds it).
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
 * KEYS: owner zset, the client's live set, job, idem (or a dummy), every client's live set · ARGV: id,
 * json, owner-seq key, maxLivePerClient (-1 = none), now, expireAt ('' = none), prefix, maxLive (-1 =
 * none) → {'ok'} | {'dup', json} | {'limit', n} | {'global', n} | {'exists'}.
 */
const CREATE = `${KEEP}
local zset, live, jk, ik, all = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, json, seqKey, maxLive, now, expireAt, prefix, maxAll = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], tonumber(ARGV[8])
if redis.call('EXISTS', jk) == 1 then return {'exists'} end
if ik ~= '' then
  local other = redis.call('GET', ik)
  if other then
    local found = redis.call('GET', prefix .. 'job:' .. other)
    if found then return {'dup', found} end
  end
end
-- live members of a set, the finished, expired and lost ones removed (only when at a cap)
local function alive(set)
  local count = 0
  for _, lid in ipairs(redis.call('SMEMBERS', set)) do
    local j = redis.call('GET', prefix .. 'job:' .. lid)
    local ok = false
    if j then
      local r = cjson.decode(j)
      local terminal = r.status == 'completed' or r.status == 'failed' or r.status == 'cancelled'
      local lost = type(r.leaseUntil) == 'number' and now > r.leaseUntil
      ok = not terminal and not lost
    end
    if ok then count = count + 1 else redis.call('SREM', set, lid) end
  end
  return count
end
if maxLive >= 0 and redis.call('SCARD', live) >= maxLive then
  local n = alive(live)
  if n >= maxLive then return {'limit', n} end
end
if maxAll >= 0 and redis.call('SCARD', all) >= maxAll then
  local n = alive(all)
  if n >= maxAll then return {'global', n} end
end
local had = {redis.call('EXISTS', zset) == 1, redis.call('EXISTS', seqKey) == 1, redis.call('EXISTS', live) == 1, redis.call('EXISTS', all) == 1}
redis.call('SET', jk, json)
if expireAt ~= '' then redis.call('PEXPIREAT', jk, expireAt) end
redis.call('ZADD', zset, redis.call('INCR', seqKey), id)
-- an owner's index holds its newest ${MAX_INDEXED} jobs at most (older ones are no longer listed)
redis.call('ZREMRANGEBYRANK', zset, 0, -${MAX_INDEXED + 1})
redis.call('SADD', live, id)
redis.call('SADD', all, id)
keep(zset, expireAt, had[1]); keep(seqKey, expireAt, had[2]); keep(live, expireAt, had[3]); keep(all, expireAt, had[4])
if ik ~= '' then
  redis.call('SET', ik, id)
  if expireAt ~= '' then redis.call('PEXPIREAT', ik, expireAt) end
end
return {'ok'}
`;

/** KEYS: job, partial, the client's live set, idem ('' none), owner zset, owner seq, every client's live set · ARGV: old json, new json, expireAt ('' keep, 'persist', ms), terminal ('1'/'0'), id, channel, message → 1 written, 0 conflict. */
const CAS = `${KEEP}
local jk, pk, live, ik, zset, seqKey, all = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
if redis.call('GET', jk) ~= ARGV[1] then return 0 end
redis.call('SET', jk, ARGV[2], 'KEEPTTL')
local at = ARGV[3]
if at == 'persist' then
  redis.call('PERSIST', jk); redis.call('PERSIST', pk)
  if ik ~= '' then redis.call('PERSIST', ik) end
  keep(zset, '', true); keep(seqKey, '', true); keep(live, '', true); keep(all, '', true)
elseif at ~= '' then
  redis.call('PEXPIREAT', jk, at); redis.call('PEXPIREAT', pk, at)
  if ik ~= '' then redis.call('PEXPIREAT', ik, at) end
  keep(zset, at, false); keep(seqKey, at, false); keep(live, at, false); keep(all, at, false)
end
if ARGV[4] == '1' then redis.call('SREM', live, ARGV[5]); redis.call('SREM', all, ARGV[5]) end
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
`;

/** KEYS: job, partial · ARGV: chunk, now, channel, id, fence ('' = none) → new length, or -1. */
const APPEND = `
local jk, pk = KEYS[1], KEYS[2]
local j = redis.call('GET', jk)
if not j then return -1 end
local r = cjson.decode(j)
if r.status == 'completed' or r.status == 'failed' or r.status == 'cancelled' then return -1 end
if type(r.leaseUntil) == 'number' and tonumber(ARGV[2]) > r.leaseUntil then return -1 end
if ARGV[5] ~= '' and (type(r.fence) ~= 'number' or r.fence ~= tonumber(ARGV[5])) then return -1 end
local n = redis.call('RPUSH', pk, ARGV[1])
local ttl = redis.call('PEXPIRETIME', jk)
if ttl > 0 then redis.call('PEXPIREAT', pk, ttl) end
redis.call('PUBLISH', ARGV[3], ARGV[4] .. '\\n' .. cjson.encode({type = 'partial', length = n}))
return n
`;

interface JobCommands {
  tetherJobCreate(...args: Array<string | number>): Promise<[string, string | number | undefined]>;
  tetherJobCas(...args: Array<string | number>): Promise<number>;
  tetherJobAppend(...args: Array<string | number>): Promise<number>;
}

const defined = new WeakSet<Redis>();

/**
 * A `JobStore` (`@mcp-tether/jobs`) on Redis: `jobs({ store: new RedisJobStore({ url }) })` on every
 * replica. Passes the shared contract suite (`jobStoreContract` of `@mcp-tether/jobs/testing`).
 *
 * - Records and partial output are in Redis, visible from any replica; results are kept until the
 *   job's TTL (Redis expires them); `ttlMs: null` lives until deleted.
 * - A cancel (or input) signalled on any replica reaches the subscribers of the job on every
 *   replica, among them the runner (pub/sub, one channel per deployment).
 * - A job whose runner's lease passed (its replica died) reads as `failed` with
 *   {@link RUNNER_LOST_MESSAGE} from the first read after it, which also writes that status and
 *   signals it: never `working` forever.
 * - Partial output appends publish `{ type: 'partial' }`: the jobs middleware on every replica turns
 *   them into `notifications/resources/updated` for its subscribers.
 * - Redis unreachable: every method rejects with a `StoreUnavailableError` (a `ProtocolError`
 *   `-32603`, `data.code: 'STORE_UNAVAILABLE'`; the calls fail with that JSON-RPC error);
 *   subscriptions come back with the connection.
 *
 * Use {@link RedisJobStore.open} to wait until its pub/sub subscription is live (signals published
 * before that are not seen by this store).
 */
export class RedisJobStore implements JobStore {
  readonly #conn: Connections;
  readonly #redis: Redis & JobCommands;
  readonly #now: () => number;
  readonly #channel: string;
  readonly #p: string;
  readonly #listeners = new Map<string, Set<Subscription>>();
  #barriers = 0;
  readonly ready: Promise<void>;

  constructor(options: RedisJobStoreOptions = {}) {
    this.#conn = connect(options, '@mcp-tether/redis: RedisJobStore');
    this.#now = options.now ?? Date.now;
    this.#p = `${this.#conn.prefix}jobs:`;
    this.#channel = `${this.#p}signals`;
    const redis = this.#conn.redis;
    if (!defined.has(redis)) {
      defined.add(redis);
      redis.defineCommand('tetherJobCreate', { numberOfKeys: 5, lua: CREATE });
      redis.defineCommand('tetherJobCas', { numberOfKeys: 7, lua: CAS });
      redis.defineCommand('tetherJobAppend', { numberOfKeys: 2, lua: APPEND });
    }
    this.#redis = redis as Redis & JobCommands;
    const sub = this.#conn.subscriber();
    sub.on('message', (channel: string, message: string) => {
      if (channel !== this.#channel) return;
      const nl = message.indexOf('\n');
      const set = this.#listeners.get(message.slice(0, nl));
      if (!set) return;
      let signal: JobSignal | { type: '__barrier'; token: string };
      try {
        signal = JSON.parse(message.slice(nl + 1)) as JobSignal | { type: '__barrier'; token: string };
      } catch {
        return;
      }
      if (signal.type === '__barrier') {
        for (const sub of set) if (sub.token === signal.token) sub.active = true;
        return;
      }
      for (const sub of [...set]) {
        if (!sub.active) continue;
        try {
          sub.listener(structuredClone(signal));
        } catch (err) {
          console.error('@mcp-tether/redis: a job signal listener threw', err);
        }
      }
    });
    // After a reconnection the start markers published while it was down never come back: switch
    // every waiting subscription on (a signal lost meanwhile is lost anyway; readers re-read the record).
    sub.on('ready', () => {
      for (const set of this.#listeners.values()) for (const s of set) s.active = true;
    });
    this.ready = sub.subscribe(this.#channel).then(() => undefined);
    this.ready.catch(() => {});
  }

  /** A store whose signal subscription is live. */
  static async open(options: RedisJobStoreOptions = {}): Promise<RedisJobStore> {
    const store = new RedisJobStore(options);
    await store.ready;
    return store;
  }

  async create(job: NewJob, options: CreateLimits): Promise<{ job: JobRecord; created: boolean }> {
    const quota = job.client ?? job.owner;
    const perClient = options.maxLivePerClient ?? options.maxLivePerOwner;
    const at = this.#now();
    const record: JobRecord = { ...structuredClone(job), createdAt: at, updatedAt: at, partialLength: 0 };
    const expireAt = job.ttlMs === null ? '' : String(Math.ceil(at + job.ttlMs));
    const ik = job.idempotencyKey === undefined ? '' : this.#idemKey(job.owner, job.idempotencyKey);
    const [status, extra] = await this.#up(
      'create',
      this.#redis.tetherJobCreate(
        this.#ownerKey(job.owner),
        this.#liveKey(quota),
        this.#jobKey(job.id),
        ik,
        this.#allLiveKey(),
        enc(job.id),
        JSON.stringify(record),
        this.#seqKey(job.owner),
        perClient === undefined || perClient === Number.POSITIVE_INFINITY ? -1 : perClient,
        at,
        expireAt,
        this.#p,
        options.maxLive === undefined || options.maxLive === Number.POSITIVE_INFINITY ? -1 : options.maxLive,
      ),
    );
    if (status === 'exists') throw new Error('job id already exists');
    if (status === 'limit') throw new JobLimitError(quota, Number(extra), 'client');
    if (status === 'global') throw new JobLimitError('*', Number(extra), 'global');
    if (status === 'dup') {
      const existing = JSON.parse(String(extra)) as JobRecord;
      const read = await this.#read(existing.id);
      return { job: read?.record ?? existing, created: false };
    }
    return { job: record, created: true };
  }

  async get(id: string, owner: string): Promise<JobRecord | undefined> {
    const read = await this.#read(id);
    return read && read.record.owner === owner ? read.record : undefined;
  }

  async update(id: string, patch: JobPatch, options?: WriteOptions): Promise<JobRecord | undefined> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const read = await this.#read(id);
      if (!read || isTerminal(read.record.status)) return undefined;
      // Rule 8: a stale attempt's write changes nothing (the compare-and-set below keeps it atomic).
      if (options?.fence !== undefined && read.record.fence !== options.fence) return undefined;
      const r = structuredClone(read.record);
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined) delete (r as unknown as Record<string, unknown>)[k];
        else (r as unknown as Record<string, unknown>)[k] = structuredClone(v);
      }
      if (patch.status !== undefined && patch.status !== 'input_required') delete r.inputRequests;
      r.updatedAt = Math.max(this.#now(), r.updatedAt);
      let expireAt = '';
      if ('ttlMs' in patch && patch.ttlMs !== undefined)
        expireAt = patch.ttlMs === null ? 'persist' : String(Math.ceil(r.createdAt + patch.ttlMs));
      if (await this.#cas(read.json, r, expireAt)) return r;
    }
    throw new Error(`JobStore.update: job ${id} changed too often to update`);
  }

  async claim(id: string, runner: string, leaseUntil: number | undefined): Promise<JobRecord | undefined> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const read = await this.#read(id);
      if (!read || isTerminal(read.record.status)) return undefined;
      const r = structuredClone(read.record);
      r.attempt = (r.attempt ?? 0) + 1;
      r.fence = (r.fence ?? 0) + 1;
      r.runner = runner;
      if (leaseUntil === undefined) delete r.leaseUntil;
      else r.leaseUntil = leaseUntil;
      r.updatedAt = Math.max(this.#now(), r.updatedAt);
      if (await this.#cas(read.json, r, '')) return r;
    }
    throw new Error(`JobStore.claim: job ${id} changed too often to claim`);
  }

  async list(
    owner: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ jobs: JobRecord[]; nextCursor?: string }> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError('JobStore.list: limit must be a positive integer');
    let max = '+inf';
    if (options.cursor !== undefined) {
      if (!/^\d{1,15}$/.test(options.cursor)) throw new TypeError('JobStore.list: invalid cursor');
      max = `(${options.cursor}`;
    }
    const zset = this.#ownerKey(owner);
    const jobs: JobRecord[] = [];
    let lastScore: string | undefined;
    for (;;) {
      const batch = await this.#up(
        'list',
        this.#redis.zrevrangebyscore(zset, max, '-inf', 'WITHSCORES', 'LIMIT', 0, limit + 1 - jobs.length),
      );
      if (batch.length === 0) break;
      for (let i = 0; i < batch.length; i += 2) {
        const member = batch[i]!;
        const id = dec(member);
        const score = batch[i + 1]!;
        max = `(${score}`;
        const read = await this.#read(id);
        if (!read) {
          await this.#up('list', this.#redis.zrem(zset, member)); // expired
          continue;
        }
        if (jobs.length === limit) return { jobs, nextCursor: lastScore! };
        jobs.push(read.record);
        lastScore = score;
      }
    }
    return { jobs };
  }

  async appendPartial(id: string, chunk: string, options?: WriteOptions): Promise<number> {
    if (typeof chunk !== 'string') throw new TypeError('JobStore.appendPartial: chunk must be a string');
    const fence = options?.fence === undefined ? '' : String(options.fence);
    return this.#up(
      'appendPartial',
      this.#redis.tetherJobAppend(this.#jobKey(id), this.#partialKey(id), chunk, this.#now(), this.#channel, id, fence),
    );
  }

  async readPartial(
    id: string,
    owner: string,
    offset: number,
  ): Promise<{ chunks: string[]; next: number } | undefined> {
    const read = await this.#read(id);
    if (!read || read.record.owner !== owner) return undefined;
    const length = read.record.partialLength;
    const from = Number.isInteger(offset) && offset > 0 ? Math.min(offset, length) : 0;
    const chunks =
      from < length ? await this.#up('readPartial', this.#redis.lrange(this.#partialKey(id), from, length - 1)) : [];
    return { chunks, next: from + chunks.length };
  }

  async signal(id: string, owner: string, signal: Extract<JobSignal, { type: 'cancel' | 'input' }>): Promise<boolean> {
    const read = await this.#read(id);
    if (!read || read.record.owner !== owner || isTerminal(read.record.status)) return false;
    if (signal.type === 'input' && read.record.status !== 'input_required') return false;
    await this.#up('signal', this.#redis.publish(this.#channel, `${id}\n${JSON.stringify(signal)}`));
    return true;
  }

  /**
   * Listen to one job's signals. A subscription sees the signals Redis handles after its start: a
   * marker published when `subscribe` is called switches it on, so a signal published before (an
   * update this replica just wrote, still on its way) is not delivered late, and everything this
   * store sends after `subscribe` (and whatever follows from it on other replicas) is.
   */
  subscribe(id: string, listener: (signal: JobSignal) => void): () => void {
    let set = this.#listeners.get(id);
    if (!set) {
      set = new Set();
      this.#listeners.set(id, set);
    }
    const own: Subscription = {
      listener,
      active: false,
      token: `${process.pid}.${++this.#barriers}.${Math.random().toString(36).slice(2)}`,
    };
    set.add(own);
    this.#redis
      .publish(this.#channel, `${id}\n${JSON.stringify({ type: '__barrier', token: own.token })}`)
      .catch(() => {
        own.active = true; // Redis unreachable: no marker will come; deliver what arrives
      });
    return () => {
      const current = this.#listeners.get(id);
      if (!current) return;
      current.delete(own);
      if (current.size === 0) this.#listeners.delete(id);
    };
  }

  /** Redis expires jobs itself; this marks lost runners' jobs `failed` now (one read of each live job). */
  async sweep(): Promise<void> {
    let cursor = '0';
    do {
      const [next, keys] = await this.#up('sweep', this.#redis.scan(cursor, 'MATCH', `${this.#p}live:*`, 'COUNT', 200));
      cursor = next;
      for (const key of keys)
        for (const member of await this.#up('sweep', this.#redis.smembers(key))) await this.#read(dec(member));
    } while (cursor !== '0');
  }

  async close(): Promise<void> {
    this.#listeners.clear();
    await this.#conn.close();
  }

  /** The record as stored (with its partial length), `undefined` when unknown or expired; a lost runner's job is turned `failed` first. */
  async #read(id: string): Promise<{ record: JobRecord; json: string } | undefined> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const [[, json], [, length]] = (await this.#up(
        'read',
        this.#redis.multi().get(this.#jobKey(id)).llen(this.#partialKey(id)).exec(),
      )) as [[null, string | null], [null, number]];
      if (json === null) return undefined;
      const record = JSON.parse(json) as JobRecord;
      const now = this.#now();
      if (record.ttlMs !== null && now >= record.createdAt + record.ttlMs) return undefined;
      record.partialLength = length;
      if (isTerminal(record.status) || record.leaseUntil === undefined || now <= record.leaseUntil)
        return { record, json };
      const failed: JobRecord = {
        ...record,
        status: 'failed',
        statusMessage: RUNNER_LOST_MESSAGE,
        updatedAt: Math.max(now, record.updatedAt),
      };
      delete failed.inputRequests;
      if (await this.#cas(json, failed, '')) return { record: failed, json: JSON.stringify(failed) };
    }
    throw new Error(`JobStore: job ${id} changed too often to read`);
  }

  async #cas(oldJson: string, record: JobRecord, expireAt: string): Promise<boolean> {
    const id = record.id;
    const message = `${id}\n${JSON.stringify({ type: 'update', job: record })}`;
    const ik = record.idempotencyKey === undefined ? '' : this.#idemKey(record.owner, record.idempotencyKey);
    const written = await this.#up(
      'update',
      this.#redis.tetherJobCas(
        this.#jobKey(id),
        this.#partialKey(id),
        this.#liveKey(record.client ?? record.owner),
        ik,
        this.#ownerKey(record.owner),
        this.#seqKey(record.owner),
        this.#allLiveKey(),
        oldJson,
        JSON.stringify(record),
        expireAt,
        isTerminal(record.status) ? '1' : '0',
        enc(id),
        this.#channel,
        message,
      ),
    );
    return written === 1;
  }

  /** A Redis command's error as a {@link StoreUnavailableError} (a JSON-RPC `-32603`, `data.code: 'STORE_UNAVAILABLE'`); a Redis reply error (a bug) as it is. */
  #up<T>(what: string, command: Promise<T>): Promise<T> {
    return command.catch((err: unknown) => {
      if (err instanceof ReplyError) throw err;
      throw new StoreUnavailableError(`job store (${what})`, err);
    });
  }

  // Ids come from clients (jobs.status { jobId }): keys and set members carry them encoded, so no
  // id can name another key.
  #jobKey(id: string): string {
    return `${this.#p}job:${enc(id)}`;
  }
  #partialKey(id: string): string {
    return `${this.#p}job:${enc(id)}:partial`;
  }
  #ownerKey(owner: string): string {
    return `${this.#p}owner:${enc(owner)}`;
  }
  #seqKey(owner: string): string {
    return `${this.#p}oseq:${enc(owner)}`;
  }
  /** The live set of one quota key (a job's client key, else its owner). */
  #liveKey(client: string): string {
    return `${this.#p}live:${enc(client)}`;
  }
  /** Every client's live jobs (the global ceiling). */
  #allLiveKey(): string {
    return `${this.#p}alllive`;
  }
  #idemKey(owner: string, key: string): string {
    return `${this.#p}idem:${enc(owner)}:${enc(key)}`;
  }
}

interface Subscription {
  readonly listener: (signal: JobSignal) => void;
  /** False until the subscription's marker came back through Redis. */
  active: boolean;
  readonly token: string;
}

const enc = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
const dec = (s: string) => Buffer.from(s, 'base64url').toString('utf8');
