import { JsonRpcErrorCode, ProtocolError } from '@mcp-tether/core';
import { Redis, type RedisOptions } from 'ioredis';

/** How a store reaches Redis: a URL (the store opens and closes its connections) or a client of yours. */
export interface RedisConnectionOptions {
  /**
   * `redis://[user:password@]host:port[/db]` (or `rediss://` for TLS). Default `$REDIS_URL`.
   * The store opens its own connections with {@link clientOptions} and closes them in `close()`.
   */
  url?: string;
  /**
   * An ioredis `Redis` client you own (e.g. `new Redis({ sentinels, name })` for Sentinel): the
   * store uses it for commands and a `duplicate()` of it for pub/sub, and never closes it (it does
   * close the duplicate).
   */
  client?: Redis;
  /**
   * Prefix of every Redis key and channel the store uses. Default `tether:`. Several
   * deployments may share one Redis with different prefixes.
   */
  prefix?: string;
}

/**
 * The ioredis options a store uses for the connections it opens: commands fail fast while Redis is
 * unreachable (one retry, 5 s command timeout) instead of queueing for minutes, so a call fails
 * with a clear error and the server stays up; reconnection goes on in the background (every 100 ms
 * to 1 s), and pub/sub subscriptions are restored on reconnect.
 */
export const clientOptions: RedisOptions = {
  maxRetriesPerRequest: 1,
  commandTimeout: 5_000,
  connectTimeout: 5_000,
  retryStrategy: (times) => Math.min(times * 100, 1_000),
  enableOfflineQueue: true,
};

/** Redis could not be reached (or answered with an error): the call fails with this JSON-RPC error (`-32603`, `data.code: 'STORE_UNAVAILABLE'`). */
export class StoreUnavailableError extends ProtocolError {
  constructor(what: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(JsonRpcErrorCode.InternalError, `${what}: Redis is unavailable (${why.slice(0, 200)}). Try again later.`, {
      code: 'STORE_UNAVAILABLE',
    });
    this.name = 'StoreUnavailableError';
  }
}

/** @internal Connections of one store. */
export interface Connections {
  readonly redis: Redis;
  readonly prefix: string;
  /** The pub/sub connection (made on first use). */
  subscriber(): Redis;
  close(): Promise<void>;
}

/** @internal */
export function connect(options: RedisConnectionOptions, who: string): Connections {
  const prefix = options.prefix ?? 'tether:';
  if (typeof prefix !== 'string') throw new TypeError(`${who}: prefix must be a string`);
  let redis: Redis;
  let owned: boolean;
  if (options.client !== undefined) {
    if (
      typeof options.client !== 'object' ||
      options.client === null ||
      typeof (options.client as Redis).duplicate !== 'function'
    ) {
      throw new TypeError(`${who}: client must be an ioredis client`);
    }
    redis = options.client;
    owned = false;
  } else {
    const url = options.url ?? process.env.REDIS_URL;
    if (typeof url !== 'string' || url === '') throw new TypeError(`${who}: give a url (or set REDIS_URL) or a client`);
    redis = new Redis(url, clientOptions);
    owned = true;
  }
  // An unreachable Redis is reported by the commands that fail; without a listener ioredis would
  // print every reconnection error.
  const quiet = () => {};
  if (owned) redis.on('error', quiet);
  let sub: Redis | undefined;
  return {
    redis,
    prefix,
    subscriber() {
      if (!sub) {
        sub = redis.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
        sub.on('error', quiet);
      }
      return sub;
    },
    async close() {
      const closing: Promise<unknown>[] = [];
      if (sub) closing.push(sub.quit().catch(() => sub!.disconnect()));
      if (owned) closing.push(redis.quit().catch(() => redis.disconnect()));
      await Promise.all(closing);
    },
  };
}

/** A Lua script as an ioredis command; `numberOfKeys` omitted when each call passes it first. */
export interface ScriptCommand {
  readonly lua: string;
  readonly numberOfKeys?: number;
}

const definedScripts = new WeakMap<Redis, Set<string>>();

/**
 * Define `scripts` on `redis` as commands, once per connection and name (ioredis runs them by SHA
 * and loads them again after a Redis restart), and return `redis` typed with them (`C`).
 */
export function withScripts<C>(redis: Redis, scripts: Readonly<Record<string, ScriptCommand>>): Redis & C {
  let names = definedScripts.get(redis);
  if (names === undefined) {
    names = new Set();
    definedScripts.set(redis, names);
  }
  for (const [name, { lua, numberOfKeys }] of Object.entries(scripts)) {
    if (names.has(name)) continue;
    names.add(name);
    redis.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
  }
  return redis as Redis & C;
}
