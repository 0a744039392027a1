/**
 * @mcp-tether/redis/jobs — `RedisJobStore`: the `JobStore` of `@mcp-tether/jobs` on Redis, so that a job started on one
 * replica is seen, polled, answered and cancelled from any other.
 *
 * Keys (`<prefix>` then `jobs:`): `job:<id>` the record (JSON; expires at `createdAt + ttlMs`),
 * `job:<id>:partial` its chunks (a list, same expiry) and `job:<id>:pbytes` their bytes,
 * `owner:<owner>` the owner's job ids by creation sequence (a sorted set: `list`, its newest 10 000),
 * `oseq:<owner>` that sequence, `lv:<client>` the non-terminal ids of one client key scored by the
 * time each stops counting (the per-client cap), `alllv` every client's (the global ceiling),
 * `fin:<client>` / `finsz:<client>` its finished jobs in finishing order and their bytes, `allfin` /
 * `allfinsz` / `finseq` every client's (retention, contract rule 9), `idem:<owner>:<key>` an
 * idempotency key's job id, `cursorkey` the key that seals `list` cursors (rotated every 7 days).
 * Every key expires: a job's keys with the job, the index keys with the last of their jobs (each
 * create or TTL change extends them to the job's expiry, never shortens them). Only a job created
 * with `ttlMs: null` (the operator's choice) keeps its keys, and its indexes, until deleted or
 * evicted. Signals (update, cancel, input, partial) go through one pub/sub channel that every store
 * of the deployment listens to, in Redis order.
 *
 * Records are written with compare-and-set (a Lua script that writes only if the stored JSON is
 * still the one the change was computed from), so concurrent updates from several replicas never
 * lose one. Times are the replicas' clocks (`Date.now()`): keep them in sync (NTP) to well within
 * the runners' lease.
 * @packageDocumentation
 */
import { randomBytes } from 'node:crypto';
import {
  type CreateLimits,
  CURSOR_KEY_BYTES,
  CursorSeal,
  JobLimitError,
  RUNNER_LOST_MESSAGE,
  isTerminal,
  type JobPatch,
  type JobRecord,
  type JobSignal,
  type JobStore,
  type NewJob,
  type RetentionLimits,
  resolveRetention,
  type WriteOptions,
} from '@mcp-tether/jobs';
import { ReplyError, type Redis } from 'ioredis';
import { connect, StoreUnavailableError, type Connections, type RedisConnectionOptions } from './connection.js';
import { APPEND, CAS, CREATE, CURSOR_KEY } from './jobs-scripts.js';
import { dec, enc, JobKeys, liveScore, memberTail } from './jobs-keys.js';

/** The job store contract's values are `@mcp-tether/jobs`'s (one owner): the same class, the same words. */
export { JobLimitError, RUNNER_LOST_MESSAGE } from '@mcp-tether/jobs';

/**
 * Options of {@link RedisJobStore}; the retention bounds ({@link RetentionLimits}: finished jobs and
 * their bytes per client key and in all) default to `DEFAULT_RETENTION` of `@mcp-tether/jobs`.
 */
export interface RedisJobStoreOptions extends RedisConnectionOptions, RetentionLimits {
  /** Clock, `Date.now()` ms. Default `Date.now`. */
  now?: () => number;
}

/** How long a `list` cursor key lives in Redis before a new one is made (cursors sealed with the old one no longer open), ms. */
const CURSOR_KEY_MS = 7 * 24 * 3600 * 1000;

interface JobCommands {
  tetherJobCreate(...args: Array<string | number>): Promise<[string, string | number | undefined]>;
  tetherJobCas(...args: Array<string | number>): Promise<number>;
  tetherJobAppend(...args: Array<string | number>): Promise<number>;
  tetherJobCursorKey(...args: Array<string | number>): Promise<[string, number]>;
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
  readonly #keys: JobKeys;
  readonly #listeners = new Map<string, Set<Subscription>>();
  #barriers = 0;
  /** Retention bounds as the scripts take them (`-1` = none). */
  readonly #retention: number[];
  #cursors: { seal: CursorSeal; until: number } | undefined;
  readonly ready: Promise<void>;

  constructor(options: RedisJobStoreOptions = {}) {
    this.#conn = connect(options, '@mcp-tether/redis: RedisJobStore');
    this.#now = options.now ?? Date.now;
    const r = resolveRetention(options, '@mcp-tether/redis: RedisJobStore');
    this.#retention = [r.maxFinishedPerClient, r.maxRetainedBytesPerClient, r.maxFinished, r.maxRetainedBytes].map(
      (n) => (n === Number.POSITIVE_INFINITY ? -1 : n),
    );
    this.#p = `${this.#conn.prefix}jobs:`;
    this.#keys = new JobKeys(this.#p);
    this.#channel = `${this.#p}signals`;
    const redis = this.#conn.redis;
    if (!defined.has(redis)) {
      defined.add(redis);
      redis.defineCommand('tetherJobCreate', { numberOfKeys: 10, lua: CREATE });
      redis.defineCommand('tetherJobCas', { numberOfKeys: 13, lua: CAS });
      redis.defineCommand('tetherJobAppend', { numberOfKeys: 3, lua: APPEND });
      redis.defineCommand('tetherJobCursorKey', { numberOfKeys: 1, lua: CURSOR_KEY });
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
    const ik = job.idempotencyKey === undefined ? '' : this.#keys.idem(job.owner, job.idempotencyKey);
    const [status, extra] = await this.#up(
      'create',
      this.#redis.tetherJobCreate(
        this.#keys.owner(job.owner),
        this.#keys.live(quota),
        this.#keys.job(job.id),
        ik,
        this.#keys.allLive(),
        ...this.#keys.retention(quota),
        enc(job.id),
        JSON.stringify(record),
        this.#keys.seq(job.owner),
        perClient === undefined || perClient === Number.POSITIVE_INFINITY ? -1 : perClient,
        at,
        expireAt,
        this.#p,
        options.maxLive === undefined || options.maxLive === Number.POSITIVE_INFINITY ? -1 : options.maxLive,
        isTerminal(record.status) ? '' : liveScore(record),
        memberTail(record),
        ...this.#retention,
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
    const seal = await this.#cursorSeal();
    if (options.cursor !== undefined) {
      const position = seal.open(owner, options.cursor);
      if (position === undefined || !/^\d{1,15}$/.test(position)) throw new TypeError('JobStore.list: invalid cursor');
      max = `(${position}`;
    }
    const zset = this.#keys.owner(owner);
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
        if (jobs.length === limit) return { jobs, nextCursor: seal.seal(owner, lastScore!) };
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
      this.#redis.tetherJobAppend(
        this.#keys.job(id),
        this.#keys.partial(id),
        this.#keys.partialBytes(id),
        chunk,
        this.#now(),
        this.#channel,
        id,
        fence,
      ),
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
      from < length ? await this.#up('readPartial', this.#redis.lrange(this.#keys.partial(id), from, length - 1)) : [];
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

  /**
   * Redis expires jobs itself; this marks lost runners' jobs `failed` now (one read of each job past
   * its deadline in the live sets) and drops expired ones from the live sets.
   */
  async sweep(): Promise<void> {
    const now = this.#now();
    let cursor = '0';
    do {
      const [next, keys] = await this.#up('sweep', this.#redis.scan(cursor, 'MATCH', `${this.#p}lv:*`, 'COUNT', 200));
      cursor = next;
      for (const key of keys) {
        for (const member of await this.#up('sweep', this.#redis.zrangebyscore(key, '-inf', now)))
          await this.#read(dec(member));
        await this.#up('sweep', this.#redis.zremrangebyscore(key, '-inf', now));
      }
    } while (cursor !== '0');
    await this.#up('sweep', this.#redis.zremrangebyscore(this.#keys.allLive(), '-inf', now));
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
        this.#redis.multi().get(this.#keys.job(id)).llen(this.#keys.partial(id)).exec(),
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
    const ik = record.idempotencyKey === undefined ? '' : this.#keys.idem(record.owner, record.idempotencyKey);
    const written = await this.#up(
      'update',
      this.#redis.tetherJobCas(
        this.#keys.job(id),
        this.#keys.partial(id),
        this.#keys.live(record.client ?? record.owner),
        ik,
        this.#keys.owner(record.owner),
        this.#keys.seq(record.owner),
        this.#keys.allLive(),
        this.#keys.partialBytes(id),
        ...this.#keys.retention(record.client ?? record.owner),
        oldJson,
        JSON.stringify(record),
        expireAt,
        isTerminal(record.status) ? '1' : '0',
        enc(id),
        this.#channel,
        message,
        liveScore(record),
        this.#p,
        memberTail(record),
        ...this.#retention,
      ),
    );
    return written === 1;
  }

  /** The key that seals `list` cursors, shared by every replica through Redis (made by the first that needs it, rotated every 7 days). */
  async #cursorSeal(): Promise<CursorSeal> {
    const cached = this.#cursors;
    if (cached !== undefined && Date.now() < cached.until) return cached.seal;
    const [key, expiresAt] = await this.#up(
      'list',
      this.#redis.tetherJobCursorKey(
        this.#keys.cursorKey(),
        randomBytes(CURSOR_KEY_BYTES).toString('base64url'),
        CURSOR_KEY_MS,
      ),
    );
    const seal = new CursorSeal(Buffer.from(key, 'base64url'));
    // used until a minute before Redis replaces it (replicas' clocks agree to well within that)
    this.#cursors = { seal, until: Number(expiresAt) - 60_000 };
    return seal;
  }

  /** A Redis command's error as a {@link StoreUnavailableError} (a JSON-RPC `-32603`, `data.code: 'STORE_UNAVAILABLE'`); a Redis reply error (a bug) as it is. */
  #up<T>(what: string, command: Promise<T>): Promise<T> {
    return command.catch((err: unknown) => {
      if (err instanceof ReplyError) throw err;
      throw new StoreUnavailableError(`job store (${what})`, err);
    });
  }
}

interface Subscription {
  readonly listener: (signal: JobSignal) => void;
  /** False until the subscription's marker came back through Redis. */
  active: boolean;
  readonly token: string;
}
