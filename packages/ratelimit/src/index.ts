/**
 * @mcp-tether/ratelimit — token-bucket rate limits for MCP servers, per client key and per tool or
 * method, in memory or shared across replicas (`RedisRateLimitStore` of `@mcp-tether/redis/ratelimit`).
 * @packageDocumentation
 */
export {
  RateLimitedError,
  defaultClientKey,
  rateLimit,
  type RateLimitMiddleware,
  type RateLimitOptions,
  type RateLimitScope,
  type RateLimitStats,
  type RateLimitedData,
} from './middleware.js';
export {
  MemoryRateLimitStore,
  refill,
  waitFor,
  type BucketCheck,
  type MemoryRateLimitStoreOptions,
  type Rate,
  type RateLimitStore,
  type TakeResult,
} from './store.js';
