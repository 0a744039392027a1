/**
 * The in-memory {@link JobStore}: one process, no persistence. The default of `jobs()`.
 */
import {
  type CreateLimits,
  JobLimitError,
  RUNNER_LOST_MESSAGE,
  allowedTransition,
  isTerminal,
  perClientCap,
  quotaKeyOf,
  type JobPatch,
  type JobRecord,
  type JobSignal,
  type JobStatus,
  type JobStore,
  type NewJob,
  type WriteOptions,
} from './store.js';
import { CursorSeal } from './cursor.js';
import { RetentionLedger, resolveRetention, type RetentionLimits } from './retention.js';

/** Options of {@link MemoryJobStore}; the retention bounds ({@link RetentionLimits}) default to `DEFAULT_RETENTION`. */
export interface MemoryJobStoreOptions extends RetentionLimits {
  /** The clock, `Date.now()` ms (inject one in tests to move time without waiting). Default `Date.now`. */
  now?: () => number;
  /** How often expired jobs are swept, ms (an unref'd timer; `0` = only on access and {@link MemoryJobStore.sweep}). Default 1 000. */
  sweepIntervalMs?: number;
}

interface Entry {
  record: JobRecord;
  chunks: string[];
  /** UTF-8 bytes of `chunks`. */
  partialBytes: number;
  /** Insertion sequence: a stable newest-first order for `list` when `createdAt` ties. */
  seq: number;
}

/** A write carrying a fence that is not the job's current one (contract rule 8). */
function fencedOff(record: JobRecord, options: WriteOptions | undefined): boolean {
  return options?.fence !== undefined && options.fence !== record.fence;
}

function copy(record: JobRecord): JobRecord {
  return structuredClone(record);
}

/**
 * Jobs in a `Map`. Records handed out are copies (a caller mutating one changes nothing stored),
 * signals are delivered synchronously, in order, to the id's listeners; a listener that throws is
 * skipped (reported to `console.error`), the others still run.
 */
export class MemoryJobStore implements JobStore {
  private readonly jobs = new Map<string, Entry>();
  private readonly byKey = new Map<string, string>();
  /** Ids by owner: `list` looks at one owner's jobs only. */
  private readonly byOwner = new Map<string, Set<string>>();
  /** Non-terminal jobs by quota key (the per-client cap), kept on every transition. */
  private readonly liveCount = new Map<string, number>();
  /** Non-terminal jobs of every client (the global ceiling). */
  private liveTotal = 0;
  private readonly listeners = new Map<string, Set<(signal: JobSignal) => void>>();
  private readonly now: () => number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private seq = 0;
  /** Finished jobs per client and in all (contract rule 9). */
  private readonly retained: RetentionLedger;
  private readonly cursors = new CursorSeal();

  constructor(options: MemoryJobStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.retained = new RetentionLedger(resolveRetention(options, 'MemoryJobStore'));
    const every = options.sweepIntervalMs ?? 1000;
    if (!(every >= 0)) throw new TypeError('MemoryJobStore: sweepIntervalMs must be a non-negative number');
    if (every > 0) {
      this.timer = setInterval(() => void this.sweep(), every);
      this.timer.unref?.();
    }
  }

  /** Jobs currently stored (expired ones not yet swept included). For tests and metrics. */
  get size(): number {
    return this.jobs.size;
  }

  /** Finished jobs kept, and their bytes (record JSON + partial output, UTF-8): in all, or of one client key. */
  retainedOf(client?: string): { jobs: number; bytes: number } {
    return client === undefined ? this.retained.size : this.retained.of(client);
  }

  async create(job: NewJob, options: CreateLimits): Promise<{ job: JobRecord; created: boolean }> {
    if (this.live(job.id) !== undefined) throw new Error(`job id already exists`);
    if (job.idempotencyKey !== undefined) {
      const existing = this.byKey.get(keyOf(job.owner, job.idempotencyKey));
      const entry = existing === undefined ? undefined : this.live(existing);
      if (entry !== undefined) return { job: copy(entry.record), created: false };
    }
    const quota = quotaKeyOf(job);
    const cap = perClientCap(options);
    const ceiling = options.maxLive ?? Number.POSITIVE_INFINITY;
    if ((this.liveCount.get(quota) ?? 0) >= cap || this.liveTotal >= ceiling) {
      // Expired or lost jobs not swept yet still count: sweep first (only when a cap is reached).
      this.sweepNow();
      const live = this.liveCount.get(quota) ?? 0;
      if (live >= cap) throw new JobLimitError(quota, live, 'client');
      if (this.liveTotal >= ceiling) throw new JobLimitError('*', this.liveTotal, 'global');
    }
    const at = this.now();
    const record: JobRecord = { ...structuredClone(job), createdAt: at, updatedAt: at, partialLength: 0 };
    const entry: Entry = { record, chunks: [], partialBytes: 0, seq: this.seq++ };
    this.jobs.set(job.id, entry);
    let mine = this.byOwner.get(job.owner);
    if (mine === undefined) {
      mine = new Set();
      this.byOwner.set(job.owner, mine);
    }
    mine.add(job.id);
    if (job.idempotencyKey !== undefined) this.byKey.set(keyOf(job.owner, job.idempotencyKey), job.id);
    if (!isTerminal(record.status)) this.countLive(record, 1);
    else this.retire(job.id, entry);
    return { job: copy(record), created: true };
  }

  async get(id: string, owner: string): Promise<JobRecord | undefined> {
    const entry = this.live(id);
    if (entry === undefined || entry.record.owner !== owner) return undefined;
    return copy(entry.record);
  }

  async update(id: string, patch: JobPatch, options?: WriteOptions): Promise<JobRecord | undefined> {
    const entry = this.live(id);
    if (entry === undefined) return undefined;
    const r = entry.record;
    if (isTerminal(r.status) || fencedOff(r, options)) return undefined;
    if (patch.status !== undefined && !allowedTransition(r.status, patch.status)) return undefined;
    if (patch.status !== undefined && isTerminal(patch.status)) this.countLive(r, -1);
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) delete (r as unknown as Record<string, unknown>)[k];
      else (r as unknown as Record<string, unknown>)[k] = structuredClone(v);
    }
    if (patch.status !== undefined && patch.status !== 'input_required') delete r.inputRequests;
    r.updatedAt = Math.max(this.now(), r.updatedAt);
    const out = copy(r);
    if (isTerminal(r.status)) this.retire(id, entry);
    this.publish(id, { type: 'update', job: copy(r) });
    return out;
  }

  async list(
    owner: string,
    options: { cursor?: string; limit?: number } = {},
  ): Promise<{ jobs: JobRecord[]; nextCursor?: string }> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError('JobStore.list: limit must be a positive integer');
    const mine = this.ownedBy(owner).sort((a, b) => b.record.createdAt - a.record.createdAt || b.seq - a.seq);
    let start = 0;
    if (options.cursor !== undefined) {
      // The sealed position is the last listed job's place (`<createdAt>.<seq>`): the page goes on
      // after it even if that job expired meanwhile.
      const m = /^(\d{1,15})\.(\d{1,15})$/.exec(this.cursors.open(owner, options.cursor) ?? '');
      if (!m) throw new TypeError('JobStore.list: invalid cursor');
      const at = Number(m[1]);
      const seq = Number(m[2]);
      start = mine.findIndex((e) => e.record.createdAt < at || (e.record.createdAt === at && e.seq < seq));
      if (start < 0) return { jobs: [] };
    }
    const page = mine.slice(start, start + limit);
    const more = start + limit < mine.length;
    const last = page[page.length - 1];
    return {
      jobs: page.map((e) => copy(e.record)),
      ...(more && last ? { nextCursor: this.cursors.seal(owner, `${last.record.createdAt}.${last.seq}`) } : {}),
    };
  }

  async appendPartial(id: string, chunk: string, options?: WriteOptions): Promise<number> {
    if (typeof chunk !== 'string') throw new TypeError('JobStore.appendPartial: chunk must be a string');
    const entry = this.live(id);
    if (entry === undefined || isTerminal(entry.record.status) || fencedOff(entry.record, options)) return -1;
    entry.chunks.push(chunk);
    entry.partialBytes += Buffer.byteLength(chunk, 'utf8');
    const length = entry.chunks.length;
    entry.record.partialLength = length;
    this.publish(id, { type: 'partial', length });
    return length;
  }

  async claim(id: string, runner: string, leaseUntil: number | undefined): Promise<JobRecord | undefined> {
    const entry = this.live(id);
    if (entry === undefined || isTerminal(entry.record.status)) return undefined;
    const r = entry.record;
    r.attempt = (r.attempt ?? 0) + 1;
    r.fence = (r.fence ?? 0) + 1;
    r.runner = runner;
    if (leaseUntil === undefined) delete r.leaseUntil;
    else r.leaseUntil = leaseUntil;
    r.updatedAt = Math.max(this.now(), r.updatedAt);
    this.publish(id, { type: 'update', job: copy(r) });
    return copy(r);
  }

  async readPartial(
    id: string,
    owner: string,
    offset: number,
  ): Promise<{ chunks: string[]; next: number } | undefined> {
    const entry = this.live(id);
    if (entry === undefined || entry.record.owner !== owner) return undefined;
    const from = Number.isInteger(offset) && offset > 0 ? Math.min(offset, entry.chunks.length) : 0;
    return { chunks: entry.chunks.slice(from), next: entry.chunks.length };
  }

  async signal(id: string, owner: string, signal: Extract<JobSignal, { type: 'cancel' | 'input' }>): Promise<boolean> {
    const entry = this.live(id);
    if (entry === undefined || entry.record.owner !== owner || isTerminal(entry.record.status)) return false;
    if (signal.type === 'input' && entry.record.status !== 'input_required') return false;
    this.publish(id, structuredClone(signal));
    return true;
  }

  subscribe(id: string, listener: (signal: JobSignal) => void): () => void {
    let set = this.listeners.get(id);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(id, set);
    }
    // A wrapper per subscription: the same function subscribed twice gets two deliveries and two unsubscribes.
    const own = (s: JobSignal) => listener(s);
    set.add(own);
    return () => {
      const current = this.listeners.get(id);
      if (current === undefined) return;
      current.delete(own);
      if (current.size === 0) this.listeners.delete(id);
    };
  }

  async sweep(): Promise<void> {
    this.sweepNow();
  }

  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The entry if it exists and has not expired (an expired one is forgotten now); a lost runner's job turns `failed`. */
  private live(id: string): Entry | undefined {
    const entry = this.jobs.get(id);
    if (entry === undefined) return undefined;
    const now = this.now();
    const r = entry.record;
    if (r.ttlMs !== null && now >= r.createdAt + r.ttlMs) {
      this.forget(id, entry);
      return undefined;
    }
    if (!isTerminal(r.status) && r.leaseUntil !== undefined && now > r.leaseUntil) {
      this.countLive(r, -1);
      r.status = 'failed';
      r.statusMessage = RUNNER_LOST_MESSAGE;
      delete r.inputRequests;
      r.updatedAt = Math.max(now, r.updatedAt);
      this.retire(id, entry);
      this.publish(id, { type: 'update', job: copy(r) });
    }
    return entry;
  }

  /** The owner's live entries (expired ones are forgotten on the way). */
  private ownedBy(owner: string): Entry[] {
    const ids = this.byOwner.get(owner);
    if (ids === undefined) return [];
    const out: Entry[] = [];
    for (const id of [...ids]) {
      const e = this.live(id);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  private sweepNow(): void {
    for (const id of [...this.jobs.keys()]) this.live(id);
  }

  private countLive(record: JobRecord, delta: number): void {
    const key = quotaKeyOf(record);
    const n = (this.liveCount.get(key) ?? 0) + delta;
    if (n <= 0) this.liveCount.delete(key);
    else this.liveCount.set(key, n);
    this.liveTotal = Math.max(0, this.liveTotal + delta);
  }

  /** Job `id` just ended: record it as finished and evict what its client (then the store) keeps beyond its bounds. */
  private retire(id: string, entry: Entry): void {
    const bytes = Buffer.byteLength(JSON.stringify(entry.record), 'utf8') + entry.partialBytes;
    for (const old of this.retained.finish(id, quotaKeyOf(entry.record), bytes)) {
      const e = this.jobs.get(old);
      if (e !== undefined) this.forget(old, e);
    }
  }

  private forget(id: string, entry: Entry): void {
    this.jobs.delete(id);
    this.retained.remove(id);
    if (!isTerminal(entry.record.status)) this.countLive(entry.record, -1);
    const mine = this.byOwner.get(entry.record.owner);
    if (mine !== undefined) {
      mine.delete(id);
      if (mine.size === 0) this.byOwner.delete(entry.record.owner);
    }
    const key = entry.record.idempotencyKey;
    if (key !== undefined && this.byKey.get(keyOf(entry.record.owner, key)) === id)
      this.byKey.delete(keyOf(entry.record.owner, key));
    this.listeners.delete(id);
  }

  private publish(id: string, signal: JobSignal): void {
    const set = this.listeners.get(id);
    if (set === undefined) return;
    for (const l of [...set]) {
      try {
        l(signal);
      } catch (err) {
        console.error('@mcp-tether/jobs: a job signal listener threw', err);
      }
    }
  }
}

function keyOf(owner: string, key: string): string {
  return `${owner.length}:${owner}:${key}`;
}
