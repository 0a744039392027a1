/**
 * Bounds shared between packages (one owner: import them, never copy them).
 */

/**
 * Bytes (UTF-8 JSON of the stored messages) one session's SSE event store keeps by default, in
 * `@mcp-tether/http`'s in-memory store and `@mcp-tether/redis`'s `RedisEventStore` (per scope):
 * 1 MiB. The oldest events are forgotten first; a replay from a forgotten event id rejects.
 */
export const SESSION_EVENT_BYTES: number = 1024 * 1024;
