/**
 * Where a job's handler runs: the executor seam (issue 24).
 *
 * The engine ({@link JobEngine}) owns the job's record: it creates it (status `working`, owner, TTL,
 * idempotency, the per-owner cap), and every front reads and answers it through the {@link JobStore}
 * (tasks of both eras, `jobs.status`/`jobs.cancel`, `job://{id}/partial`). Where the handler chain
 * then runs is the executor's business:
 *
 * - the **in-process executor** (the default, no Redis): the call's own chain runs in this process,
 *   detached from the request — today's behaviour;
 * - a **queue executor** (`@mcp-tether/bullmq`): the engine hands the job to a queue; a worker (this
 *   process or another one) rebuilds the same chain from the server's registration
 *   ({@link JobWorkerHost}) and runs it as attempt 1, 2, … with a fencing token.
 *
 * Whatever the executor, everything the handler does reaches the fronts through the store only:
 * status, progress, partial output, input rounds (`input_required` → answers as `{type:'input'}`
 * signals), the result (written once: a stale attempt's writes are refused by the store's fence),
 * and cancels (`{type:'cancel'}` signals, or the record turning terminal) abort the handler's signal.
 *
 * See `packages/jobs/DESIGN.md` ("Executors") for the full protocol.
 * @module
 */
import type { CallAbortReason, CallContext, CallResult, JsonObject, Next } from '@mcp-tether/core';
import type { JobRecord, JobStore } from './store.js';

/**
 * What the engine hands an executor: one job whose record is stored (`working`, attempt 0) and
 * whose handler has not run yet.
 */
export interface JobSubmission {
  /** The stored record (id, owner, tool, mode, TTL, idempotency key). */
  readonly job: JobRecord;
  /**
   * What a worker in another process needs to run the same call: the tool's arguments, the
   * principal the call ran as, and the request `_meta` that the chain reads (progress token
   * excepted: nobody listens to it there). Plain JSON. Present only when the executor asked for it
   * ({@link JobExecutor.remote}); it is then also stored on the record ({@link JobRecord.call}).
   */
  readonly call?: JobCall;
  /**
   * The call that started the job, when it is in this process: its context and the rest of its
   * chain (`next`). The in-process executor runs `next()` as the job. A remote executor ignores it.
   */
  readonly local?: { readonly ctx: CallContext; readonly next: Next };
}

/** The serializable description of a job's call (see {@link JobSubmission.call}). */
export interface JobCall {
  /** `tools/call` `name`. */
  readonly tool: string;
  /** `tools/call` `arguments`. */
  readonly args: JsonObject;
  /** The principal (`ctx.principal`) the call ran as, if any. */
  readonly principal?: string;
  /** The request's `_meta` (without `progressToken`). */
  readonly meta?: JsonObject;
}

/** Options of {@link JobExecutor.close}. */
export interface ExecutorCloseOptions {
  /**
   * How long running jobs may go on before they are ended, ms. Within it a job that finishes keeps
   * its outcome; past it each job still running is either handed back (a queue executor: another
   * worker takes it up as its next attempt) or ended as `cancelled` with `statusMessage` `shutdown`
   * (the in-process executor: nobody else could run it). Either way, no job stays `working` in the
   * store when `close` resolves.
   */
  readonly graceMs: number;
}

/**
 * Runs jobs. One instance serves one {@link JobEngine}.
 *
 * The contract (every executor):
 * 1. `submit` resolves once the job is accepted (queued or started), not when it ends. It rejects
 *    only when the job could not be accepted; the engine then writes it `failed` with the error.
 * 2. The executor runs the job's chain (the tool's middlewares and handler) at least once, and
 *    reports through the {@link JobStore} only: `update` / `appendPartial` carrying the attempt's
 *    fencing token (see {@link JobAttempt.fence}); a write refused by the fence means another attempt
 *    owns the job now: the stale run stops (its signal aborts) and writes nothing more.
 * 3. The outcome is written exactly once: `completed` with the result, `failed` with the error, or
 *    `cancelled`; a job made terminal elsewhere (a cancel from any replica, the TTL) aborts the
 *    running handler's `ctx.signal` within about one second, and its `finally` runs once.
 * 4. An `input_required` outcome of the handler is written as `input_required` with the requests;
 *    the answers arrive as `{ type: 'input' }` store signals and the handler runs again with them
 *    (mrtr's `readInput`). Answers are checked by `@mcp-tether/mrtr` on the way in (the fronts) and
 *    again before the handler sees them.
 * 5. After `close` resolves, `submit` rejects with `ShuttingDown` and no job of this executor is
 *    `working` in the store.
 */
export interface JobExecutor {
  /** A short name for logs and metrics (`in-process`, `bullmq`). */
  readonly name: string;
  /**
   * The executor runs jobs in other processes: the engine then stores {@link JobCall} on the record
   * and passes it in {@link JobSubmission.call}. Default false (in-process: the call's own context is used).
   */
  readonly remote?: boolean;
  /** Jobs this executor is running in this process now. */
  readonly running: number;
  /**
   * Worker side of a remote executor: the {@link JobExecution} a call carries when the executor's
   * worker made that call (through the rebuilt chain) to run a claimed attempt, else `undefined`.
   * The jobs middleware then runs the call as that attempt ({@link JobEngine.adopt}), not as a new job.
   */
  claimCall?(ctx: CallContext): JobExecution | undefined;
  /**
   * Accept a job (see the contract, rule 1).
   * @throws ShuttingDown (rejects) after {@link JobExecutor.close}
   */
  submit(submission: JobSubmission): Promise<void>;
  /**
   * Stop taking jobs, let running ones finish within `graceMs`, then hand back or cancel the rest
   * (see {@link ExecutorCloseOptions}). Idempotent; a second call waits for the first.
   */
  close(options: ExecutorCloseOptions): Promise<void>;
}

/**
 * One run of a job (attempt 1, 2, …), as a worker holds it. A queue executor gets it from
 * {@link JobWorkerHost.claim} before it runs the chain; the handler sees `attempt` and the last
 * checkpoint as `ctx.job.attempt` and `ctx.job.resumeFrom`.
 */
export interface JobAttempt {
  /** The record as claimed (status `working`, `runner` this worker, the new `attempt` and `fence`). */
  readonly job: JobRecord;
  /** 1 on the first run, then +1 for every run after a worker died or handed the job back. */
  readonly attempt: number;
  /**
   * The fencing token of this attempt: strictly greater than every earlier attempt's. The store
   * refuses `update` / `appendPartial` / `checkpoint` carrying an older token.
   */
  readonly fence: number;
  /** The last value passed to `ctx.job.checkpoint(value)` by an earlier attempt, or `undefined`. */
  readonly resumeFrom: unknown;
}

/**
 * What a worker process needs to run jobs without serving HTTP: the engine's store, and the server's
 * tool chain rebuilt from the same registration an HTTP replica uses (the user's server factory,
 * with `tether(server, [...middlewares])` and `jobs(...)`), so the middlewares follow the job on the
 * worker (a mutex lease for the whole job, cancel, heartbeat, log-channel).
 *
 * Made by `JobEngine.workerHost(factory)`; a queue executor calls {@link JobWorkerHost.run} for each
 * job it takes.
 */
export interface JobWorkerHost {
  /** The store the engine uses (shared by every replica and worker). */
  readonly store: JobStore;
  /**
   * Start the next attempt of a job: atomically bumps `attempt` and `fence`, sets `runner` and the
   * lease, and returns the attempt; `undefined` when the job is unknown, expired or terminal
   * (nothing to run: the queue should drop it).
   */
  claim(jobId: string, options?: { leaseMs?: number }): Promise<JobAttempt | undefined>;
  /**
   * Run one attempt through the rebuilt chain until its outcome is written (or the attempt was
   * fenced off, cancelled or handed back). Resolves with what became of it; never rejects for the
   * handler's own errors (they are the job's outcome).
   * @param signal aborting it hands the job back (the worker is shutting down): the attempt stops,
   *   its record stays `working` for the next attempt (`statusMessage` says it was handed back)
   */
  run(attempt: JobAttempt, signal?: AbortSignal): Promise<'done' | 'fenced' | 'handed-back'>;
  /** Stop: close the rebuilt server(s). */
  close(): Promise<void>;
}

/** How one attempt's run ended, before its outcome is written. */
export type JobOutcome =
  | { readonly type: 'result'; readonly result: CallResult }
  | { readonly type: 'error'; readonly error: unknown }
  | { readonly type: 'aborted'; readonly reason: CallAbortReason };

/**
 * A claimed attempt that a remote executor's worker runs through the rebuilt chain in this process
 * (see {@link JobExecutor.claimCall}). The engine reports to it.
 */
export interface JobExecution {
  readonly attempt: JobAttempt;
  /** The run started; `abort` aborts its signal (a hand-back at shutdown). */
  started(abort: (reason: CallAbortReason) => void): void;
  /**
   * Asked before the outcome is written: `'write'` makes it final (fenced by the attempt);
   * `'keep'` leaves the record `working` (the executor runs the job again: a retry with backoff, or
   * a hand-back to another worker).
   */
  settle(outcome: JobOutcome): Promise<'write' | 'keep'>;
  /** The run is over: outcome written (or kept), handler unwound. */
  finished(): void;
}
