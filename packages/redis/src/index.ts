/**
 * @mcp-tether/redis — shared stores on Redis for tether middleware, so that several server
 * processes behind a load balancer keep one truth: locks (`RedisLockStore` for `mutex()` and
 * `limit()`), Streamable HTTP resumability (`RedisEventStore`), and one-time `requestState`
 * (`RedisReplayStore` for `mrtr()`). The job store (`RedisJobStore` for `@mcp-tether/jobs`) is the
 * subpath `@mcp-tether/redis/jobs`, so that its types (which name `@mcp-tether/jobs`'s) load only for
 * those who use it.
 * @packageDocumentation
 */
export { clientOptions, StoreUnavailableError, type RedisConnectionOptions } from './connection.js';
export { RedisReplayStore } from './replay.js';
export { RedisEventStore, type RedisEventStoreOptions, type SdkEventStore, type StoredMessage } from './events.js';
export {
  QueueFullError,
  RedisLockStore,
  type LockAcquireOptions,
  type LockGrant,
  type RedisLockStoreOptions,
} from './lock.js';
