/**
 * The job store: where jobs (MCP tasks and job handles) live. The in-memory default serves one
 * process; a shared store (`@mcp-tether/redis`'s `RedisJobStore`) implements the same contract so
 * that a job started on one replica is seen, polled, answered and cancelled from any other.
 *
 * This file is the interface that `@mcp-tether/jobs`, `@mcp-tether/redis` and `@mcp-tether/client`
 * agree on. Every store runs the shared contract suite (`@mcp-tether/jobs/testing`,
 * `jobStoreContract(makeStore)`).
 *
 * Times are `Date.now()` milliseconds; durations are ms.
 */
import type { JobCall } from './executor.js';
import {
  TERMINAL_JOB_STATUSES,
  isTerminalJobStatus,
  type InputRequest,
  type JobError,
  type JobStatus,
  type JsonObject,
} from '@mcp-tether/core';

/** The wire shapes the client reads are core's (`@mcp-tether/core`'s `wire/jobs`): one definition. */
export type { JobError, JobHandle, JobStatus } from '@mcp-tether/core';

/** Statuses that never change again (core's {@link TERMINAL_JOB_STATUSES}). */
export const TERMINAL_STATUSES: readonly JobStatus[] = TERMINAL_JOB_STATUSES;

/** True for `completed`, `failed`, `cancelled`. */
export const isTerminal: (status: JobStatus) => boolean = isTerminalJobStatus;

/** MCP's transitions (contract rule 5): `working` → any; `input_required` → `working` or terminal (or itself, to update the questions); terminal → nothing. */
export function allowedTransition(from: JobStatus, _to: JobStatus): boolean {
  return !isTerminal(from);
}

/** What a job whose runner lost its lease reads as (contract rule 6: `failed`, with this `statusMessage`). */
export const RUNNER_LOST_MESSAGE = 'job runner lost (its lease expired before the job finished)';

/** How the client reaches the job. */
export type JobMode =
  /** 2026-07-28 tasks extension `io.modelcontextprotocol/tasks` (flat `resultType: "task"`). */
  | 'task-2026'
  /** 2025-11-25 experimental tasks (`params.task`, nested `CreateTaskResult`). */
  | 'task-2025'
  /** Any other client: a job handle polled with `jobs.status`. */
  | 'handle';

/** One job, as the store keeps it. Plain JSON: a shared store serializes it as is. */
export interface JobRecord {
  /** ≥ 128 random bits, URL-safe; doubles as the MCP `taskId`. */
  readonly id: string;
  /**
   * Who may see it: the principal that started it (`p:<id>`), or, without one, everyone who knows
   * its unguessable id (`anonymous`: never listed). Opaque to the store; a lookup with another owner
   * behaves exactly as an unknown id.
   */
  readonly owner: string;
  /**
   * Whose quota it counts in: the client key of the call that started it (`ctx.clientKey`: the
   * principal, else e.g. `ip:<address>`), else its session or connection. Absent: the owner.
   */
  readonly client?: string;
  readonly mode: JobMode;
  /** `tools/call` tool name. */
  readonly tool: string;
  status: JobStatus;
  /** Task `statusMessage`: the latest progress message, or why it failed / was cancelled. */
  statusMessage?: string;
  /** Latest progress, in the unit of `total`. */
  progress?: number;
  total?: number;
  readonly createdAt: number;
  updatedAt: number;
  /** Time to live from creation, ms; `null` = unlimited (MCP `ttl` / `ttlMs`). */
  ttlMs: number | null;
  /** Suggested poll interval, ms (MCP `pollInterval` / `pollIntervalMs`). */
  pollIntervalMs?: number;
  /** When `status` is `completed`: the tool's result exactly as the call would have returned it (`isError` results included). */
  result?: JsonObject;
  /** When `status` is `failed` by a JSON-RPC error. */
  error?: JobError;
  /** When `status` is `input_required`: every outstanding input request, by key (MCP `inputRequests`). */
  inputRequests?: Record<string, InputRequest>;
  /** Idempotency key the start carried, if any (unique per owner while the job lives). */
  readonly idempotencyKey?: string;
  /**
   * W3C trace context (`traceparent`, `tracestate`, `baggage`) of the call that started the job,
   * as a telemetry subscriber of core's `tether:job` channel gave it (e.g. `@mcp-tether/otel`):
   * whichever process runs or reports the job continues that trace. Absent without one.
   */
  readonly trace?: Record<string, string>;
  /** Replica running the job, and until when its lease holds (renewed while it runs). */
  runner?: string;
  leaseUntil?: number;
  /** Number of chunks of partial output appended so far (the next chunk's offset). */
  partialLength: number;
  /**
   * Runs of the job so far: 1 on the first, +1 for each later run (a worker died or handed the job
   * back). Set by {@link JobStore.claim}; absent on a job no executor claimed (in-process jobs of a
   * store without `claim` run once).
   */
  attempt?: number;
  /**
   * The fencing token of the current attempt (strictly increasing per job): writes that carry an
   * older one are refused ({@link WriteOptions.fence}).
   */
  fence?: number;
  /** The last `ctx.job.checkpoint(value)` (plain JSON, at most {@link MAX_CHECKPOINT_BYTES} serialized). */
  checkpoint?: unknown;
  /** What a worker in another process needs to run the call (stored only for remote executors). */
  readonly call?: JobCall;
}

/** Largest checkpoint a job may store, serialized as JSON, bytes (UTF-8). */
export const MAX_CHECKPOINT_BYTES = 65_536;

/** Options of the runner's writes ({@link JobStore.update}, {@link JobStore.appendPartial}). */
export interface WriteOptions {
  /**
   * The writer's attempt's fencing token ({@link JobRecord.fence}): the store refuses the write
   * (`update` → `undefined`, `appendPartial` → `-1`) when the job's current fence differs, so a
   * stale runner (paused past its lease, then resumed) cannot write. Omitted: no check.
   */
  fence?: number;
}

/** What {@link JobStore.create} needs; the store fills `createdAt`, `updatedAt`, `partialLength`. */
export type NewJob = Omit<JobRecord, 'createdAt' | 'updatedAt' | 'partialLength'>;

/** Fields an update may change. Terminal jobs refuse every update (the store returns `undefined`). */
export type JobPatch = Partial<
  Pick<
    JobRecord,
    | 'status'
    | 'statusMessage'
    | 'progress'
    | 'total'
    | 'ttlMs'
    | 'pollIntervalMs'
    | 'result'
    | 'error'
    | 'inputRequests'
    | 'runner'
    | 'leaseUntil'
    | 'checkpoint'
  >
>;

/** Something happened to a job; delivered to {@link JobStore.subscribe} listeners on every replica. */
export type JobSignal =
  /** The record changed (status, progress, result). */
  | { type: 'update'; job: JobRecord }
  /** Someone asked to cancel (task cancel, `jobs.cancel`); the runner aborts the job's signal. */
  | { type: 'cancel'; reason?: string }
  /** Answers to outstanding input requests (`tasks/update`, `jobs.status` with answers, `tasks/result` elicitation answers). */
  | { type: 'input'; inputResponses: Record<string, JsonObject> }
  /** New partial output was appended; `length` is the new {@link JobRecord.partialLength}. */
  | { type: 'partial'; length: number };

/**
 * Where jobs live. The contract (run by `jobStoreContract`):
 * 1. **Ownership.** `get`, `update`, `list`, `readPartial`, `signal` with an owner that is not the
 *    job's behave exactly as for an unknown id (`undefined` / no effect): no existence leak.
 * 2. **Ids** are chosen by the caller (≥ 128 random bits); `create` with an existing id rejects.
 * 3. **Idempotency.** `create` with an `idempotencyKey` that a live job of the same owner already
 *    carries returns that job with `created: false` and stores nothing.
 * 4. **Caps.** `create` rejects with a {@link JobLimitError} when the job's client
 *    ({@link quotaKeyOf}) already has `maxLivePerClient` non-terminal jobs (`scope: 'client'`), or
 *    when all clients together have `maxLive` (`scope: 'global'`).
 * 5. **Terminal is final.** `update` of a terminal job returns `undefined` and changes nothing;
 *    allowed transitions are MCP's (`working` → any; `input_required` → `working` or terminal).
 * 6. **TTL.** A job is gone (as unknown) once `createdAt + ttlMs` has passed; partial output with it.
 *    A non-terminal job whose `leaseUntil` has passed (its replica died) is reported `failed`
 *    (statusMessage says the runner was lost), never `working` forever.
 * 7. **Signals** reach every subscriber of the id on every process sharing the store, in order per id.
 * 8. **Fencing** (stores with `claim`). Each `claim` makes a new attempt whose `fence` is greater
 *    than every earlier one; `update` and `appendPartial` carrying another fence change nothing. So a
 *    runner that lost the job (paused past its lease, a worker taken over) cannot write a second result.
 * 9. **Retention** (`RetentionLimits`, store options; defaults `DEFAULT_RETENTION`). When a job ends,
 *    its client's ({@link quotaKeyOf}) oldest finished jobs are evicted (gone as if expired) until the
 *    client keeps at most `maxFinishedPerClient` finished jobs and `maxRetainedBytesPerClient` bytes of
 *    them (record JSON + partial output), then every client's oldest until the store is within
 *    `maxFinished` / `maxRetainedBytes`. The job that just ended is never evicted by its own ending.
 * 10. **Cursors** of `list` are opaque: they reveal nothing (no count, time or id) and only the owner
 *    they were issued to can use them; any other cursor rejects with a `TypeError`.
 */
export interface JobStore {
  create(job: NewJob, options: CreateLimits): Promise<{ job: JobRecord; created: boolean }>;
  get(id: string, owner: string): Promise<JobRecord | undefined>;
  /**
   * Apply a patch (by the runner). Returns the new record, or `undefined` if unknown, terminal, or
   * fenced off (`options.fence` is not the job's current fence). Publishes `{type:'update'}`.
   */
  update(id: string, patch: JobPatch, options?: WriteOptions): Promise<JobRecord | undefined>;
  /** The owner's jobs, newest first, `limit` per page. */
  list(
    owner: string,
    options?: { cursor?: string; limit?: number },
  ): Promise<{ jobs: JobRecord[]; nextCursor?: string }>;
  /**
   * Append one chunk of partial output (by the runner). Returns the new length, or `-1` when the job
   * is unknown, terminal or fenced off; publishes `{type:'partial'}`.
   */
  appendPartial(id: string, chunk: string, options?: WriteOptions): Promise<number>;
  /**
   * Start the next attempt of a non-terminal job (contract rule 8): atomically `attempt + 1`, a new
   * `fence` greater than every earlier one, `runner`, `leaseUntil`, status `working` (an
   * `input_required` job keeps its status and questions). Returns the new record, or `undefined`
   * for an unknown, expired or terminal job. Publishes `{type:'update'}`. Required by executors that
   * run a job more than once (queue executors); the in-process executor claims when it is there.
   */
  claim?(id: string, runner: string, leaseUntil: number | undefined): Promise<JobRecord | undefined>;
  /** Chunks from `offset` (0-based) on, and the offset to read from next time. */
  readPartial(id: string, owner: string, offset: number): Promise<{ chunks: string[]; next: number } | undefined>;
  /** Send a cancel or input signal to the job's runner (by a front: tasks/cancel, jobs.cancel, tasks/update). False if unknown/foreign/terminal. */
  signal(id: string, owner: string, signal: Extract<JobSignal, { type: 'cancel' | 'input' }>): Promise<boolean>;
  /** Listen to one job's signals. Returns an unsubscribe function. */
  subscribe(id: string, listener: (signal: JobSignal) => void): () => void;
  /** Forget expired jobs now (stores also do it on their own). */
  sweep?(): Promise<void>;
  /** Release connections and timers. */
  close?(): Promise<void>;
}

/** The owner already has the most live jobs allowed; the jobs middleware turns it into a `BUSY` refusal. */
export class JobLimitError extends Error {
  override readonly name = 'JobLimitError';
  /**
   * @param owner the client key (or owner) whose quota is full, or `*` for the global ceiling
   * @param live its live jobs now
   * @param scope `client`: this client's quota ({@link CreateLimits.maxLivePerClient}); `global`: every client's together ({@link CreateLimits.maxLive})
   */
  constructor(
    readonly owner: string,
    readonly live: number,
    readonly scope: 'client' | 'global' = 'client',
  ) {
    super(`too many live jobs (${live}${scope === 'global' ? ' on the server' : ''})`);
  }
}

/** The caps {@link JobStore.create} enforces. */
export interface CreateLimits {
  /** Live (non-terminal) jobs one client may have (counted per {@link JobRecord.client}, else per owner). */
  maxLivePerClient?: number;
  /** @deprecated the former name of {@link CreateLimits.maxLivePerClient} (same meaning). */
  maxLivePerOwner?: number;
  /** Live jobs of every client together (a global ceiling). Default: none. */
  maxLive?: number;
}

/** The per-client cap of `limits` (`maxLivePerClient`, or its former name), `Infinity` when neither is given. */
export function perClientCap(limits: CreateLimits): number {
  return limits.maxLivePerClient ?? limits.maxLivePerOwner ?? Number.POSITIVE_INFINITY;
}

/** The quota key of a job: its client key, else its owner. */
export function quotaKeyOf(job: Pick<JobRecord, 'owner' | 'client'>): string {
  return job.client ?? job.owner;
}

/**
 * True for a {@link JobLimitError}. Stores (`@mcp-tether/redis`'s `RedisJobStore` too) throw this
 * class, imported from here: a plain `instanceof`.
 */
export function isJobLimit(error: unknown): error is JobLimitError {
  return error instanceof JobLimitError;
}
