/**
 * Where the shared state lives: this process (the packages' memory defaults), or one Redis when a
 * URL is given (`REDIS_URL`): locks (`RedisLockStore`), jobs and their partial output, cancels and
 * resource updates across replicas (`RedisJobStore`), resumable SSE events (`RedisEventStore`,
 * one scope per session) and one-time 2026-07-28 `requestState`s (`RedisReplayStore`).
 */
import { randomBytes } from 'node:crypto';
import type { EventStore } from '@mcp-tether/http';
import type { JobStore } from '@mcp-tether/jobs';
import type { ReplayStore } from '@mcp-tether/mrtr';
import type { LockStore } from '@mcp-tether/mutex';

/** The stores the preset hands to the packages. */
export interface Stores {
  /** Where: `memory`, or the Redis URL with its password hidden. */
  readonly where: string;
  /** For `mutex({ store })`; `undefined` = the mutex's own `MemoryLockStore`. */
  readonly lockStore?: LockStore;
  /** For `new JobEngine({ store })`; `undefined` = `MemoryJobStore`. */
  readonly jobStore?: JobStore;
  /** For `mrtr({ oneTime })`. */
  readonly replayStore: ReplayStore | true;
  /** For `createMcpHttp({ eventStore })`; `undefined` = the front's `MemoryEventStore`. */
  readonly eventStore?: (info: { readonly sessionId: string }) => EventStore;
  /** Close what was opened (Redis connections). */
  close(): Promise<void>;
}

/** `redis://user:secret@host` → `redis://user:***@host` (for logs). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.href;
  } catch {
    return '(an unparsable Redis URL)';
  }
}

/** In-process stores (one server process). */
export function memoryStores(): Stores {
  return { where: 'memory', replayStore: true, close: async () => {} };
}

/**
 * Every shared store on the Redis at `url`, over one ioredis connection (plus the pub/sub
 * duplicates the lock and job stores make); keys and channels under `prefix`. Connections are
 * lazy: a Redis that is down now fails calls (a JSON-RPC error, `STORE_UNAVAILABLE`), not startup.
 */
export async function redisStores(url: string, prefix = 'tether:'): Promise<Stores> {
  const [{ RedisLockStore, RedisEventStore, RedisReplayStore, clientOptions }, { RedisJobStore }, { Redis }] =
    await Promise.all([import('@mcp-tether/redis'), import('@mcp-tether/redis/jobs'), import('ioredis')]);
  const client = new Redis(url, clientOptions);
  client.on('error', () => {}); // failures surface as failed calls
  const lockStore = new RedisLockStore({ client, prefix });
  const jobStore = new RedisJobStore({ client, prefix });
  const events = new RedisEventStore({ client, prefix });
  const replayStore = new RedisReplayStore({ client, prefix });
  return {
    where: redactUrl(url),
    lockStore,
    jobStore,
    replayStore,
    // One scope per session (its id): a Last-Event-ID of another session's stream replays nothing.
    eventStore: (info) => events.scoped(info?.sessionId ?? randomBytes(16).toString('base64url')) as EventStore,
    async close() {
      await Promise.allSettled([lockStore.close(), jobStore.close(), events.close(), replayStore.close()]);
      await client.quit().catch(() => client.disconnect());
    },
  };
}
