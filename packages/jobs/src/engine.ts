/**
 * The job runner every front uses (job handles here; MCP tasks of both eras in `./tasks`): it turns
 * one call into a job that outlives its request, runs the rest of the chain and the handler as that
 * job (input rounds included), and keeps the job's record in a {@link JobStore}.
 */
import { randomBytes } from 'node:crypto';
import {
  Disconnected,
  diagnostics,
  ShuttingDown,
  type CallContext,
  type CallResult,
  type JsonObject,
  type OutboundEvent,
  type Next,
  type ServerHost,
} from '@mcp-tether/core';
import { checkInputResponses } from '@mcp-tether/mrtr';
import { newJobId } from './ids.js';
import { MemoryJobStore } from './memory.js';
import { defaultOwner, isListableOwner, type OwnerSource } from './owner.js';
import type { JobCall, JobExecution, JobExecutor, JobSubmission } from './executor.js';
import { InProcessExecutor } from './inprocess.js';
import type { JobContext } from './context.js';
import { type JobRun, publishJob, runOf } from './run.js';
import { isTerminal, type JobMode, type JobRecord, type JobSignal, type JobStore } from './store.js';
import { waitForJob, type WaitOptions } from './wait.js';

/** Options of {@link JobEngine}. */
export interface JobEngineOptions {
  /** Where jobs live. Default: a new {@link MemoryJobStore}. */
  store?: JobStore;
  /** Default time to live of a job from its creation, ms; `null` = unlimited. Default 3 600 000 (1 h). */
  ttlMs?: number | null;
  /** Longest TTL a front may ask for (a task's requested `ttl`), ms. Default 86 400 000 (24 h). */
  maxTtlMs?: number;
  /**
   * Live (non-terminal) jobs one client may have, counted per client key (`ctx.clientKey`: the
   * principal, else the key the HTTP front gave, e.g. `ip:<address>`; else the job's owner); past it
   * `start` rejects with a `JobLimitError` (`scope: 'client'`), so one client cannot make another's
   * jobs `BUSY`. Default 32.
   */
  maxLivePerClient?: number;
  /** @deprecated the former name of {@link JobEngineOptions.maxLivePerClient}. */
  maxLivePerOwner?: number;
  /** Live jobs of every client together (a ceiling for the process or the shared store); past it `JobLimitError` (`scope: 'global'`). Default 1 000. */
  maxLive?: number;
  /** Partial output one job may append (`ctx.job.append`), UTF-8 bytes; past it `append` throws a `PartialLimitError`. Default 8 MiB. */
  maxPartialBytes?: number;
  /** Partial output chunks one job may append; past it `append` throws a `PartialLimitError`. Default 100 000. */
  maxPartialChunks?: number;
  /** Suggested poll interval written on each job (MCP `pollInterval`), ms. Default 1 000. */
  pollIntervalMs?: number;
  /**
   * Who owns a call's jobs. Default {@link defaultOwner}: the principal (`p:<clientId>`), else the
   * client key the transport conveys (`k:<key>`, e.g. `k:ip:203.0.113.7` over `@mcp-tether/http`),
   * else the session (`s:<sessionId>`), else the connection (`c:<random>`, per server instance), and on a
   * 2026-07-28 request or stateless 2025 HTTP (`channel: false`) without a principal `anonymous`
   * (there is no session or connection to bind to: the unguessable id is then the only key).
   */
  owner?: (who: OwnerSource) => string;
  /** This process's name in `JobRecord.runner`. Default: a random id. */
  runnerId?: string;
  /** The runner's lease on a job (renewed every third of it while the job runs), ms; `0` = none. Default 30 000. */
  leaseMs?: number;
  /** Input rounds a job may ask for, at most; past it the job completes with a `MAX_ROUNDS` refusal. Default 8. */
  maxRounds?: number;
  /** Progress reaches the store at most this often (the latest value is always written before the end), ms. Default 250. */
  progressWriteMs?: number;
  /**
   * Where jobs' handlers run (see `JobExecutor`, `packages/jobs/DESIGN.md`). Default: in this
   * process, on the chain of the call that started the job (`InProcessExecutor`).
   */
  executor?: JobExecutor;
  /** Errors of the store while a job runs (writes are retried by nothing; the job goes on). Default `console.error`. */
  onError?: (error: unknown) => void;
}

/** Options of {@link JobEngine.start}. */
export interface StartOptions {
  /** How the client reaches the job. */
  mode: JobMode;
  /** Requested TTL, ms (clamped to `maxTtlMs`); `null` = unlimited (only if the engine's default is). Default: the engine's. */
  ttlMs?: number | null;
  /** Suggested poll interval, ms. Default: the engine's. */
  pollIntervalMs?: number;
  /** A repeated start of the same owner with this key returns the existing job (and runs nothing). */
  idempotencyKey?: string;
  /**
   * The call may still finish inline (handle mode: the front waits up to `inlineMs` before it
   * returns a handle). Until {@link JobEngine.handOut} is called, a job that finishes is kept only
   * briefly (nobody holds its id). Default false: the id is handed out at once (tasks).
   */
  inline?: boolean;
}

function checkMs(who: string, value: unknown, allowZero = false): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowZero && value === 0)) {
    throw new TypeError(
      `@mcp-tether/jobs: ${who} must be a ${allowZero ? 'non-negative' : 'positive'} number of ms, got ${String(value)}`,
    );
  }
}

/**
 * Runs calls as jobs. One instance serves every server (session, per-request server) it is used
 * by: create it once, outside per-request factories, so that a job started on one request is found
 * by the next.
 */
export class JobEngine {
  readonly store: JobStore;
  readonly runnerId: string;
  readonly pollIntervalMs: number;
  private readonly ttlMs: number | null;
  private readonly maxTtlMs: number;
  private readonly maxLivePerClient: number;
  private readonly maxLive: number;
  readonly maxPartialBytes: number;
  readonly maxPartialChunks: number;
  private readonly leaseMs: number;
  readonly maxRounds: number;
  private readonly progressWriteMs: number;
  private readonly ownerFn: (who: OwnerSource) => string;
  /** @internal */
  readonly reportError: (error: unknown) => void;
  /** Where handlers run (the in-process executor unless the options name another). */
  readonly executor: JobExecutor;
  /** The in-process executor (jobs started by calls of this process run there unless `executor` is remote). */
  private readonly local: InProcessExecutor;
  /** Jobs running in this process, by id. */
  private readonly runs: Map<string, JobRun>;
  /** The engine made its store: {@link JobEngine.close} closes it. */
  private readonly ownsStore: boolean;
  private closed: Promise<void> | undefined;
  private readonly watchedHosts = new WeakSet<ServerHost>();
  private closing = false;
  private readonly inlineSubmissions: WeakSet<JobSubmission>;
  /** Calls whose job went to a remote executor while their request waits inline ({@link JobEngine.queuedBy}). */
  private readonly queued = new WeakMap<CallContext, string>();

  constructor(options: JobEngineOptions = {}) {
    this.store = options.store ?? new MemoryJobStore();
    this.ownsStore = options.store === undefined;
    this.runnerId = options.runnerId ?? randomBytes(9).toString('base64url');
    const ttl = options.ttlMs === undefined ? 3_600_000 : options.ttlMs;
    if (ttl !== null) checkMs('ttlMs', ttl);
    this.ttlMs = ttl;
    this.maxTtlMs = options.maxTtlMs ?? 86_400_000;
    checkMs('maxTtlMs', this.maxTtlMs);
    const positiveInt = (name: string, value: number): number => {
      if (!Number.isInteger(value) || value < 1)
        throw new TypeError(`@mcp-tether/jobs: ${name} must be a positive integer, got ${String(value)}`);
      return value;
    };
    this.maxLivePerClient = positiveInt('maxLivePerClient', options.maxLivePerClient ?? options.maxLivePerOwner ?? 32);
    this.maxLive = positiveInt('maxLive', options.maxLive ?? 1_000);
    this.maxPartialBytes = positiveInt('maxPartialBytes', options.maxPartialBytes ?? 8 * 1024 * 1024);
    this.maxPartialChunks = positiveInt('maxPartialChunks', options.maxPartialChunks ?? 100_000);
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    checkMs('pollIntervalMs', this.pollIntervalMs);
    this.leaseMs = options.leaseMs ?? 30_000;
    checkMs('leaseMs', this.leaseMs, true);
    this.maxRounds = options.maxRounds ?? 8;
    if (!Number.isInteger(this.maxRounds) || this.maxRounds < 1)
      throw new TypeError('@mcp-tether/jobs: maxRounds must be a positive integer');
    this.progressWriteMs = options.progressWriteMs ?? 250;
    checkMs('progressWriteMs', this.progressWriteMs, true);
    this.ownerFn = options.owner ?? defaultOwner;
    this.reportError =
      options.onError ??
      ((error) => {
        console.error('[@mcp-tether/jobs]', error);
      });
    const submitted = new WeakSet<JobSubmission>();
    this.local = new InProcessExecutor({
      store: this.store,
      maxRounds: this.maxRounds,
      progressEveryMs: this.progressWriteMs,
      lease: this.leaseMs,
      reportError: this.reportError,
      maxPartialBytes: this.maxPartialBytes,
      maxPartialChunks: this.maxPartialChunks,
      inline: (s) => submitted.has(s),
    });
    this.inlineSubmissions = submitted;
    this.runs = this.local.runs;
    this.executor = options.executor ?? this.local;
  }

  /** Jobs running in this process now. */
  get running(): number {
    return this.runs.size;
  }

  /** The owner of a call's (or a request's) jobs: the same rule for both (see {@link JobEngineOptions.owner}). */
  ownerOf(who: OwnerSource): string {
    return this.ownerFn(who);
  }

  /**
   * Turn the call into a job: store its record (status `working`), then run the rest of the chain
   * (`next`) and the handler as the job, detached from the request (see core's `detachCall`): the
   * caller answers the request at once (a task, a handle), the work goes on. Resolves once the job
   * is stored.
   *
   * - `ctx.signal` is the job's signal from now on: it aborts on {@link JobEngine.cancel}, on the
   *   TTL (`JobExpired`), on `cancel().drain()` (`ShuttingDown`), on {@link JobEngine.close}, and
   *   while the request is still open on whatever aborts the call; when the owner is the session or
   *   the connection, also when that closes (`Disconnected`: nobody could reach the job again).
   * - An `input_required` outcome of the handler moves the job to `input_required` with its
   *   `inputRequests`; {@link JobEngine.answer} resumes it (the handler runs again with the answers).
   * - Progress events the call emits become the job's `progress`/`total`/`statusMessage`
   *   (via {@link JobEngine.tap}, which the jobs middleware calls from its `onEvent`).
   *
   * With an `idempotencyKey` that a job of the same owner already carries, that job is returned
   * and nothing runs (check `record.id`, or {@link JobEngine.isLocal}). The key is ignored for
   * the anonymous owner and for a client-key owner (`k:`; see {@link isListableOwner}): clients
   * that share such an owner (an address) must not receive each other's jobs.
   * @throws JobLimitError (rejects) when the client already has `maxLivePerClient` live jobs
   *   (`scope: 'client'`) or every client together `maxLive` (`scope: 'global'`)
   * @throws the store's errors (rejects); nothing runs then
   */
  async start(ctx: CallContext, next: Next, options: StartOptions): Promise<JobRecord> {
    if (this.closing) throw new ShuttingDown();
    const remote = this.executor.remote === true;
    const call = remote ? callOf(ctx) : undefined;
    const owner = this.ownerOf(ctx);
    const ttlMs = this.clampTtl(options.ttlMs);
    const pollIntervalMs = options.pollIntervalMs ?? this.pollIntervalMs;
    const now = Date.now();
    const id = newJobId();
    // A telemetry subscriber may fill the carrier with the call's trace context, stored with the job
    // (a worker process or another replica continues that trace).
    const trace: Record<string, string> = {};
    if (diagnostics.job.hasSubscribers)
      diagnostics.job.publish({
        ctx,
        jobId: id,
        tool: ctx.name,
        status: 'created',
        mode: options.mode,
        ageMs: 0,
        trace,
      });
    const { job, created } = await this.store.create(
      {
        id,
        owner,
        client: ctx.clientKey ?? owner,
        mode: options.mode,
        tool: ctx.name,
        status: 'working',
        ttlMs,
        pollIntervalMs,
        ...(options.idempotencyKey !== undefined && isListableOwner(owner)
          ? { idempotencyKey: options.idempotencyKey }
          : {}),
        runner: this.runnerId,
        // A remote executor's queue recovers a job whose worker died; the lease is the in-process runner's.
        ...(this.leaseMs > 0 && !remote ? { leaseUntil: now + this.leaseMs } : {}),
        ...(call !== undefined ? { call } : {}),
        ...(Object.keys(trace).length > 0 ? { trace } : {}),
      },
      { maxLivePerClient: this.maxLivePerClient, maxLive: this.maxLive },
    );
    if (!created) return job;
    const submission: JobSubmission = { job, local: { ctx, next }, ...(call !== undefined ? { call } : {}) };
    if (options.inline === true) this.inlineSubmissions.add(submission);
    try {
      await this.executor.submit(submission);
    } catch (err) {
      // Not accepted: the job will never run. Say so on its record (the caller gets the error).
      await this.store
        .update(job.id, {
          status: 'failed',
          statusMessage: `not started: ${err instanceof Error ? err.message : String(err)}`,
        })
        .catch(this.reportError);
      throw err;
    }
    if (!remote) this.watchHost(ctx);
    else if (options.inline === true) this.queued.set(ctx, job.id);
    return job;
  }

  /** The execution a worker's call carries (a remote executor's claimed attempt, {@link JobExecutor.claimCall}), else `undefined`. */
  executionOf(ctx: CallContext): JobExecution | undefined {
    return this.executor.claimCall?.(ctx);
  }

  /**
   * Run a worker's call as the claimed attempt of `execution` (no new record): the rest of the chain
   * and the handler run detached, as for any job, with `ctx.job.attempt`/`resumeFrom` and writes
   * fenced by the attempt. Resolves at once with a short result for the worker's call.
   */
  adopt(ctx: CallContext, next: Next, execution: JobExecution): Promise<CallResult> {
    this.local.adopt(ctx, next, execution);
    const { job, attempt } = execution.attempt;
    return Promise.resolve({ content: [{ type: 'text', text: `job ${job.id}: attempt ${attempt} running` }] });
  }

  /** The job as its owner sees it; `undefined` for an unknown, foreign or expired id (indistinguishable). */
  get(id: string, owner: string): Promise<JobRecord | undefined> {
    if (typeof id !== 'string' || id === '') return Promise.resolve(undefined);
    return this.store.get(id, owner);
  }

  /** The owner's jobs, newest first (MCP `tasks/list`). */
  list(
    owner: string,
    options?: { cursor?: string; limit?: number },
  ): Promise<{ jobs: JobRecord[]; nextCursor?: string }> {
    return this.store.list(owner, options);
  }

  /**
   * Cancel a job: it is `cancelled` (terminal, `statusMessage` says why) when this resolves, and
   * its runner (here or on another replica) aborts the job's signal. A job already terminal is
   * returned as it is.
   * @returns the job after the cancel; `undefined` for an unknown, foreign or expired id
   */
  async cancel(id: string, owner: string, reason = 'cancelled by the client'): Promise<JobRecord | undefined> {
    const job = await this.get(id, owner);
    if (job === undefined || isTerminal(job.status)) return job;
    await this.store.signal(id, owner, { type: 'cancel', reason });
    const done = await this.store.update(id, { status: 'cancelled', statusMessage: `cancelled: ${reason}` });
    if (done !== undefined && diagnostics.job.hasSubscribers) publishJob(undefined, done, 'cancelled');
    return done ?? (await this.get(id, owner));
  }

  /**
   * Answer the job's outstanding input requests (`tasks/update`, `jobs.status` with answers,
   * `tasks/result` elicitation answers). Keys that were not asked are ignored; a missing key is
   * asked again by the handler.
   * @returns `true` when the answers reached the job; `false` for an unknown, foreign, expired job
   *   or one that is not `input_required`
   * @throws ProtocolError `-32602` (rejects) for malformed answers
   */
  async answer(id: string, owner: string, inputResponses: unknown): Promise<boolean> {
    const job = await this.get(id, owner);
    if (job === undefined || job.status !== 'input_required' || job.inputRequests === undefined) return false;
    const { answers } = checkInputResponses(job.inputRequests, inputResponses);
    return this.store.signal(id, owner, { type: 'input', inputResponses: answers });
  }

  /**
   * Wait until the job reaches `until` (see {@link WaitOptions}), the timeout passes or the signal
   * aborts; resolves with the job as it then is, or `undefined` when it is unknown, foreign or
   * expired. Driven by the store's signals, so it sees jobs run by any replica.
   */
  wait(id: string, owner: string, options: WaitOptions = {}): Promise<JobRecord | undefined> {
    return waitForJob(this.store, (i, o) => this.get(i, o), id, owner, options);
  }

  /**
   * Listen to one job's record after every change (progress, status, result), from whichever
   * replica made it (e.g. for `notifications/tasks/status`). Check the owner first: this does not.
   * @returns the unsubscribe function
   */
  onUpdate(id: string, listener: (job: JobRecord) => void): () => void {
    return this.store.subscribe(id, (s) => {
      if (s.type !== 'update') return;
      try {
        listener(s.job);
      } catch (err) {
        this.reportError(err);
      }
    });
  }

  /**
   * Listen to one job's signals (updates, partial appends, cancels, answers) from every replica
   * sharing the store, once `owner` is checked. Resolves with the unsubscribe function, or
   * `undefined` (nothing subscribed) for an unknown, foreign or expired id; rejects (nothing
   * subscribed) with the store's error.
   */
  async watch(id: string, owner: string, listener: (signal: JobSignal) => void): Promise<(() => void) | undefined> {
    const off = this.store.subscribe(id, listener);
    let job: JobRecord | undefined;
    try {
      job = await this.get(id, owner);
    } finally {
      if (job === undefined) off(); // unknown, foreign, expired, or the store failed (rejects)
    }
    return job === undefined ? undefined : off;
  }

  /**
   * The id of the job this call just queued on a remote executor with `inline: true` (its handler
   * runs in a worker; the call's request is still open), else `undefined` (also for a job an
   * idempotency key matched: that one is not this call's).
   */
  queuedBy(ctx: CallContext): string | undefined {
    return this.queued.get(ctx);
  }

  /** Whether the job is running in this process. */
  isLocal(id: string): boolean {
    return this.runs.has(id);
  }

  /** The job context (`ctx.job`) of a call this engine runs as a job, else `undefined`. */
  jobOf(ctx: CallContext): JobContext | undefined {
    return runOf(ctx)?.api;
  }

  /**
   * The front gave the job's id to the client (handle mode: the inline wait ended unfinished).
   * @returns `false` when the job already finished (answer the request with its outcome instead)
   */
  handOut(id: string): boolean {
    const run = this.runs.get(id);
    if (run === undefined) return false;
    return run.handOut();
  }

  /**
   * Observe one outbound event of a call (from the jobs middleware's `onEvent`): progress of a job
   * becomes its status. Returns `true` when the event must go no further (the request was
   * answered: nothing more may ride its stream).
   */
  tap(ctx: CallContext, event: OutboundEvent): boolean {
    const run = runOf(ctx);
    if (run === undefined) return false;
    if (event.type === 'progress') run.progress(event.progress, event.total, event.message);
    return ctx.completed;
  }

  /**
   * Shut down: new starts are refused (`ShuttingDown`); jobs running in this process may finish
   * within `graceMs`; each one still running then is ended as `cancelled` with a `statusMessage`
   * starting `shutdown:` (a queue executor hands its jobs back instead, see `JobExecutor.close`);
   * resolves once their outcomes are written (so no job of this process is left `working`), then
   * closes the store when the engine made it (or `closeStore: true`). Idempotent.
   *
   * The number form is the older one: every job is ended at once (grace 0), and the handlers are
   * waited for at most `timeoutMs`.
   * @param options `{ graceMs = 10 000, closeStore }`, or a `timeoutMs` number
   */
  close(options: { graceMs?: number; closeStore?: boolean } | number = {}): Promise<void> {
    const graceMs = typeof options === 'number' ? 0 : (options.graceMs ?? 10_000);
    const closeStore = typeof options === 'number' ? false : (options.closeStore ?? this.ownsStore);
    this.closed ??= (async () => {
      this.closing = true;
      if (this.executor !== this.local) await this.executor.close({ graceMs });
      await this.local.close({ graceMs });
      if (closeStore) await this.store.close?.();
    })();
    return this.closed;
  }

  /** @internal */
  get progressEveryMs(): number {
    return this.progressWriteMs;
  }

  /** @internal */
  get lease(): number {
    return this.leaseMs;
  }

  private clampTtl(requested: number | null | undefined): number | null {
    if (requested === undefined) return this.ttlMs;
    if (requested === null) return this.ttlMs === null ? null : this.maxTtlMs;
    if (typeof requested !== 'number' || !Number.isFinite(requested) || requested <= 0) return this.ttlMs;
    return Math.min(Math.floor(requested), this.maxTtlMs);
  }

  /** Jobs owned by a session or a connection die with it (nobody could reach them again). */
  private watchHost(ctx: CallContext): void {
    const host = ctx.host;
    if (this.watchedHosts.has(host)) return;
    this.watchedHosts.add(host);
    host.onClose(() => {
      for (const run of [...this.runs.values()]) {
        // Only the default session/connection owners die with it (a principal's or a custom owner's job goes on).
        const o = run.job.owner;
        if (run.ctx.host === host && (o.startsWith('s:') || o.startsWith('c:')))
          run.ctx.abort(new Disconnected('the session that owns this job closed'));
      }
    });
  }
}

/** What a worker in another process needs to run the call (see `JobCall`). */
function callOf(ctx: CallContext): JobCall {
  const { progressToken: _drop, ...meta } = ctx.meta as Record<string, unknown>;
  return {
    tool: ctx.name,
    args: JSON.parse(JSON.stringify(ctx.args ?? {})) as JsonObject,
    ...(ctx.principal !== undefined ? { principal: ctx.principal } : {}),
    ...(Object.keys(meta).length > 0 ? { meta: JSON.parse(JSON.stringify(meta)) as JsonObject } : {}),
  };
}
