/**
 * `--redis URL` (or `REDIS_URL`): every store the replicas must share goes to Redis — the mutex's
 * locks (`RedisLockStore`: leases, fencing tokens), jobs (`RedisJobStore`), consumed `requestState`s (`RedisReplayStore`),
 * the SSE event store (`RedisEventStore`, for an HTTP front that takes one), and the demo's own
 * counters (`RedisRecordStore`, which checks fencing tokens). Several demo processes on several
 * ports then serve as one server; give them the same `MRTR_KEYS` too.
 *
 * Environment: `REDIS_LOCK_LEASE_MS` (lock lease, default 10 000), `TETHER_DEMO_TRACE=1` (each
 * locked counter read and write is appended to the Redis list `<prefix>demo:trace`, with the process id
 * and fencing token, in Redis order: the replicas' tests read it to prove that no two increments
 * overlapped).
 */
import { RedisEventStore, RedisLockStore, RedisReplayStore } from '@mcp-tether/redis';
import { RedisJobStore } from '@mcp-tether/redis/jobs';
import { Redis } from 'ioredis';
import type { Records } from './state.js';

/** The demo's counters on Redis. A write whose fencing token is lower than the key's last accepted one is refused. */
export class RedisRecordStore implements Records {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #trace: boolean;

  constructor(redis: Redis, prefix: string, trace = false) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#trace = trace;
    redis.defineCommand('demoFencedWrite', {
      numberOfKeys: 2,
      // KEYS: value, fence; ARGV: value, token ('' = none) → 1 written, 0 refused (stale token)
      lua: `
local token = ARGV[2]
if token ~= '' then
  local last = redis.call('GET', KEYS[2])
  if last and tonumber(token) < tonumber(last) then return 0 end
  redis.call('SET', KEYS[2], token)
end
redis.call('SET', KEYS[1], ARGV[1])
return 1`,
    });
  }

  async read(key: string, fencingToken?: number): Promise<number> {
    const value = await this.#redis.get(`${this.#prefix}demo:record:${key}`);
    if (this.#trace && fencingToken !== undefined) await this.#note('enter', key, fencingToken); // a locked read: a holder entered
    return value === null ? 0 : Number(value);
  }

  async write(key: string, value: number, fencingToken?: number): Promise<void> {
    const token = fencingToken === undefined ? '' : String(fencingToken);
    const base = `${this.#prefix}demo:record:${key}`;
    const written = await (this.#redis as Redis & { demoFencedWrite(...a: string[]): Promise<number> }).demoFencedWrite(
      base,
      `${base}:fence`,
      String(value),
      token,
    );
    if (this.#trace) await this.#note(written ? 'exit' : 'refused', key, fencingToken);
    if (!written)
      throw new Error(`write of ${key} refused: fencing token ${token} is stale (a later lock holder already wrote)`);
  }

  #note(op: string, key: string, token: number | undefined): Promise<unknown> {
    return this.#redis.rpush(
      `${this.#prefix}demo:trace`,
      JSON.stringify({ op, key, pid: process.pid, token: token ?? null }),
    );
  }
}

/** Every shared store of the demo on one Redis. */
export interface RedisStores {
  readonly url: string;
  readonly lockStore: RedisLockStore;
  readonly replayStore: RedisReplayStore;
  /** Jobs (`corpus.reindex` handles): started on one replica, polled and cancelled on any. */
  readonly jobStore: RedisJobStore;
  readonly records: RedisRecordStore;
  /** For an HTTP front with a pluggable event store: one scope per session. */
  readonly events: RedisEventStore;
  close(): Promise<void>;
}

/** Open the demo's Redis stores (prefix `tether:`). Connections are lazy: a Redis that is down now fails calls, not startup. */
export function redisStores(url: string, env: NodeJS.ProcessEnv = process.env): RedisStores {
  const prefix = 'tether:';
  const lease = env.REDIS_LOCK_LEASE_MS === undefined ? undefined : Number(env.REDIS_LOCK_LEASE_MS);
  const client = new Redis(url, {
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
    retryStrategy: (n) => Math.min(n * 100, 1_000),
  });
  client.on('error', () => {}); // failures surface as failed calls
  const lockStore = new RedisLockStore({ client, prefix, ...(lease !== undefined && { leaseMs: lease }) });
  const replayStore = new RedisReplayStore({ client, prefix });
  const events = new RedisEventStore({ client, prefix });
  const jobStore = new RedisJobStore({ client, prefix });
  const records = new RedisRecordStore(client, prefix, env.TETHER_DEMO_TRACE === '1');
  return {
    url,
    lockStore,
    replayStore,
    jobStore,
    records,
    events,
    async close() {
      await lockStore.close();
      await jobStore.close();
      await client.quit().catch(() => client.disconnect());
    },
  };
}
