/**
 * How many finished jobs a store keeps, and how many bytes of them: per client key and in total.
 * Both stores (`MemoryJobStore`, `@mcp-tether/redis`'s `RedisJobStore`) take these options and run
 * the same rule (contract rule 9 of `JobStore`): when a job ends, its client's oldest finished jobs
 * are evicted (forgotten as if expired: record, partial output, idempotency key) until the client is
 * within its bounds, then every client's oldest until the store is within the global ones. The job
 * that just ended is never evicted by its own ending, so one job always keeps its result.
 */

/** Bounds on finished (terminal) jobs a store keeps; see {@link DEFAULT_RETENTION}. */
export interface RetentionLimits {
  /** Finished jobs one client key keeps; past it its oldest finished job is evicted. Default 1 000. */
  maxFinishedPerClient?: number;
  /**
   * Bytes one client key's finished jobs keep: each job's record (as JSON) plus its partial output,
   * UTF-8 bytes; past it its oldest finished job is evicted. Default 32 MiB.
   */
  maxRetainedBytesPerClient?: number;
  /** Finished jobs of every client together (the global ceiling). Default 20 000. */
  maxFinished?: number;
  /** Bytes of every client's finished jobs together (the global ceiling). Default 256 MiB. */
  maxRetainedBytes?: number;
}

/**
 * The defaults: a client keeps its newest 1 000 finished jobs and 32 MiB of them; the store keeps
 * 20 000 and 256 MiB in all. (Live jobs are bounded apart: `maxLivePerClient`, `maxLive`, and each
 * job's partial output by the engine's `maxPartialBytes`.)
 */
export const DEFAULT_RETENTION: Readonly<Required<RetentionLimits>> = Object.freeze({
  maxFinishedPerClient: 1000,
  maxRetainedBytesPerClient: 32 * 1024 * 1024,
  maxFinished: 20_000,
  maxRetainedBytes: 256 * 1024 * 1024,
});

/**
 * The limits with defaults filled in.
 * @throws TypeError when a limit is not a positive integer (or `Infinity`)
 */
export function resolveRetention(limits: RetentionLimits = {}, who = 'JobStore'): Required<RetentionLimits> {
  const out = { ...DEFAULT_RETENTION };
  for (const name of Object.keys(DEFAULT_RETENTION) as Array<keyof RetentionLimits>) {
    const v = limits[name];
    if (v === undefined) continue;
    if (!(v === Number.POSITIVE_INFINITY || (Number.isInteger(v) && v >= 1)))
      throw new TypeError(`${who}: ${name} must be a positive integer or Infinity, got ${String(v)}`);
    out[name] = v;
  }
  return out;
}

interface Finished {
  readonly client: string;
  readonly bytes: number;
}

/**
 * The finished jobs of an in-process store, oldest first, per client and in all, with their bytes:
 * {@link RetentionLedger.finish} records one and answers which to evict.
 */
export class RetentionLedger {
  /** Every finished job, in the order they finished (a `Map` keeps insertion order). */
  private readonly all = new Map<string, Finished>();
  private readonly clients = new Map<string, { ids: Set<string>; bytes: number }>();
  private total = 0;

  constructor(private readonly limits: Required<RetentionLimits>) {}

  /** Bytes of every finished job held, and their number. */
  get size(): { jobs: number; bytes: number } {
    return { jobs: this.all.size, bytes: this.total };
  }

  /** Bytes held by one client's finished jobs, and their number. */
  of(client: string): { jobs: number; bytes: number } {
    const c = this.clients.get(client);
    return { jobs: c?.ids.size ?? 0, bytes: c?.bytes ?? 0 };
  }

  /**
   * Job `id` of `client` finished holding `bytes`: returns the ids to evict (oldest first; never
   * `id`), already removed from the ledger.
   */
  finish(id: string, client: string, bytes: number): string[] {
    this.remove(id);
    this.all.set(id, { client, bytes });
    let c = this.clients.get(client);
    if (c === undefined) {
      c = { ids: new Set(), bytes: 0 };
      this.clients.set(client, c);
    }
    c.ids.add(id);
    c.bytes += bytes;
    this.total += bytes;
    const evicted: string[] = [];
    const { maxFinishedPerClient, maxRetainedBytesPerClient, maxFinished, maxRetainedBytes } = this.limits;
    while (c.ids.size > maxFinishedPerClient || c.bytes > maxRetainedBytesPerClient) {
      const oldest = c.ids.values().next().value as string;
      if (oldest === id) break;
      this.remove(oldest);
      evicted.push(oldest);
    }
    while (this.all.size > maxFinished || this.total > maxRetainedBytes) {
      const oldest = this.all.keys().next().value as string;
      if (oldest === id) break;
      this.remove(oldest);
      evicted.push(oldest);
    }
    return evicted;
  }

  /** Forget a job (expired or evicted); nothing when it is not finished. */
  remove(id: string): void {
    const f = this.all.get(id);
    if (f === undefined) return;
    this.all.delete(id);
    this.total -= f.bytes;
    const c = this.clients.get(f.client);
    if (c === undefined) return;
    c.ids.delete(id);
    c.bytes -= f.bytes;
    if (c.ids.size === 0) this.clients.delete(f.client);
  }
}
