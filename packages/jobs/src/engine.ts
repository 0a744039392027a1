/**
 * The job runner every front uses (job handles here; MCP tasks of both eras in `./tasks`): it turns
 * one call into a job that outlives its request, runs the rest of the chain and the handler as that
 * job (input rounds included), and keeps the job's record in a {@link JobStore}.
 */
import { randomBytes } from 'node:crypto';
import {
  ClientCancelled,
  DeadlineExceeded,
  Disconnected,
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  ShuttingDown,
  detachCall,
  isCallAbortReason,
  isInputRequired,
  lingeringWork,
  refusal,
  type CallAbortReason,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Next,
  type OutboundEvent,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { applyAnswers, checkAnswers } from './input.js';
import { MemoryJobStore, isTerminal } from './memory.js';
import type { JobError, JobMode, JobPatch, JobRecord, JobSignal, JobStore } from './store.js';

/** The URI of a job's partial output (pattern C): `job://{jobId}/partial`. */
export function partialUriOf(jobId: string): string {
  return `job://${jobId}/partial`;
}

/** A fresh job id: 128 random bits, base64url (22 characters). */
export function newJobId(): string {
  return randomBytes(16).toString('base64url');
}

/** The job's TTL passed while it ran: its signal aborts with this (a {@link DeadlineExceeded}, kind `timeout`). */
export class JobExpired extends DeadlineExceeded {
  constructor(ttlMs: number) {
    super(ttlMs);
    this.message = `job expired: its TTL of ${ttlMs} ms passed`;
  }
}

/** Options of {@link JobEngine}. */
export interface JobEngineOptions {
  /** Where jobs live. Default: a new {@link MemoryJobStore}. */
  store?: JobStore;
  /** Default time to live of a job from its creation, ms; `null` = unlimited. Default 3 600 000 (1 h). */
  ttlMs?: number | null;
  /** Longest TTL a front may ask for (a task's requested `ttl`), ms. Default 86 400 000 (24 h). */
  maxTtlMs?: number;
  /** Live (non-terminal) jobs one owner may have; past it `start` rejects with a `JobLimitError`. Default 32. */
  maxLivePerOwner?: number;
  /** Suggested poll interval written on each job (MCP `pollInterval`), ms. Default 1 000. */
  pollIntervalMs?: number;
  /**
   * Who owns a call's jobs. Default {@link defaultOwner}: the principal (`p:<clientId>`), else the
   * session (`s:<sessionId>`), else the connection (`c:<random>`, per server instance), and on a
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

/** Options of {@link JobEngine.wait}. */
export interface WaitOptions {
  /**
   * What to wait for: `terminal` (completed, failed, cancelled), `settled` (terminal or
   * `input_required`: the job needs the client), `change` (status, progress, message, questions
   * or partial length differ from the record seen when the wait began). Default `terminal`.
   */
  until?: 'terminal' | 'settled' | 'change';
  /** Give up after this many ms and return the record as it is. Default: no limit (then pass a signal). */
  timeoutMs?: number;
  /** Stop waiting (resolves with the record as it is). */
  signal?: AbortSignal;
}

/** What the handler sees as `ctx.job` inside a job. */
export interface JobContext {
  /** The job id (also the MCP `taskId`). */
  readonly id: string;
  readonly mode: JobMode;
  /** URI of the partial-output resource (`job://{jobId}/partial` by default). */
  readonly partialUri: string;
  /**
   * Publish a chunk of partial output (pattern C): readable at once as the job's partial resource,
   * subscribers are told with `notifications/resources/updated`. Chunks are stored in call order;
   * after the job ended (cancelled, expired) a chunk is dropped. Resolves with the new chunk count
   * (`-1` when dropped); never rejects (store errors go to `onError`).
   * @throws TypeError (synchronously) if `chunk` is not a string
   */
  append(chunk: string): Promise<number>;
}

/**
 * Who asks: a call context, or a non-call request (`tasks/get`: its `RequestInfo` plus the host).
 * Pass `era` where known: a 2026-07-28 request has no session or connection to bind to.
 */
export interface OwnerSource {
  readonly principal: string | undefined;
  readonly sessionId: string | undefined;
  readonly host: ServerHost;
  readonly era?: 'legacy' | 'modern';
  /**
   * Whether server→client requests can reach the client (`ctx.channel`): `false` on a 2025-era
   * call marks stateless HTTP, where every request is served by a fresh server (no connection to bind to).
   */
  readonly channel?: boolean;
}

/** The {@link OwnerSource} of a non-call request (`tasks/*`, `resources/subscribe`): the fields the owner rule reads of a call. */
export function requestOwnerSource(info: RequestInfo, host: ServerHost): OwnerSource {
  return {
    principal: info.principal,
    sessionId: info.sessionId,
    host,
    era: info.era,
    ...(info.channel !== undefined ? { channel: info.channel } : {}),
  };
}

/** A job this engine runs. */
const RUN = Symbol('mcp-tether.jobs.run');

const hostIds = new WeakMap<ServerHost, string>();

/**
 * The owner of every requestor that cannot be identified (no principal on 2026-07-28 or on stateless
 * 2025 HTTP). All such clients share it, so the engine honours no idempotency key for it (a repeated
 * key would hand one client another's job) and `tasks/list` lists nothing for it (MCP: a server that
 * cannot identify requestors SHOULD NOT offer a list); only the unguessable id reaches such a job.
 */
export const ANONYMOUS_OWNER = 'anonymous';

/** The default owner of a call's jobs (see {@link JobEngineOptions.owner}). */
export function defaultOwner(ctx: OwnerSource): string {
  if (ctx.principal !== undefined) return `p:${ctx.principal}`;
  if (ctx.sessionId !== undefined) return `s:${ctx.sessionId}`;
  // 2026-07-28 and stateless 2025 HTTP: a fresh server per request, no session or connection to bind to.
  if (ctx.era === 'modern' || ctx.channel === false) return ANONYMOUS_OWNER;
  let id = hostIds.get(ctx.host);
  if (id === undefined) hostIds.set(ctx.host, (id = `c:${randomBytes(12).toString('base64url')}`));
  return id;
}

function checkMs(who: string, value: unknown, allowZero = false): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowZero && value === 0)) {
    throw new TypeError(
      `@mcp-tether/jobs: ${who} must be a ${allowZero ? 'non-negative' : 'positive'} number of ms, got ${String(value)}`,
    );
  }
}

const MAX_TIMER_MS = 2_147_483_647;
const noop = () => {};

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
  private readonly maxLivePerOwner: number;
  private readonly leaseMs: number;
  readonly maxRounds: number;
  private readonly progressWriteMs: number;
  private readonly ownerFn: (who: OwnerSource) => string;
  /** @internal */
  readonly reportError: (error: unknown) => void;
  /** Jobs running in this process, by id. */
  private readonly runs = new Map<string, JobRun>();
  private readonly watchedHosts = new WeakSet<ServerHost>();
  private closing = false;

  constructor(options: JobEngineOptions = {}) {
    this.store = options.store ?? new MemoryJobStore();
    this.runnerId = options.runnerId ?? randomBytes(9).toString('base64url');
    const ttl = options.ttlMs === undefined ? 3_600_000 : options.ttlMs;
    if (ttl !== null) checkMs('ttlMs', ttl);
    this.ttlMs = ttl;
    this.maxTtlMs = options.maxTtlMs ?? 86_400_000;
    checkMs('maxTtlMs', this.maxTtlMs);
    this.maxLivePerOwner = options.maxLivePerOwner ?? 32;
    if (!Number.isInteger(this.maxLivePerOwner) || this.maxLivePerOwner < 1)
      throw new TypeError('@mcp-tether/jobs: maxLivePerOwner must be a positive integer');
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
   * {@link ANONYMOUS_OWNER} (every unidentified client shares that owner).
   * @throws JobLimitError (rejects) when the owner already has `maxLivePerOwner` live jobs
   * @throws the store's errors (rejects); nothing runs then
   */
  async start(ctx: CallContext, next: Next, options: StartOptions): Promise<JobRecord> {
    if (this.closing) throw new ShuttingDown();
    const owner = this.ownerOf(ctx);
    const ttlMs = this.clampTtl(options.ttlMs);
    const pollIntervalMs = options.pollIntervalMs ?? this.pollIntervalMs;
    const now = Date.now();
    const { job, created } = await this.store.create(
      {
        id: newJobId(),
        owner,
        mode: options.mode,
        tool: ctx.name,
        status: 'working',
        ttlMs,
        pollIntervalMs,
        ...(options.idempotencyKey !== undefined && owner !== ANONYMOUS_OWNER
          ? { idempotencyKey: options.idempotencyKey }
          : {}),
        runner: this.runnerId,
        ...(this.leaseMs > 0 ? { leaseUntil: now + this.leaseMs } : {}),
      },
      { maxLivePerOwner: this.maxLivePerOwner },
    );
    if (!created) return job;
    const run = new JobRun(this, ctx, next, job, options.inline === true);
    this.runs.set(job.id, run);
    (ctx as unknown as Record<symbol, JobRun | undefined>)[RUN] = run;
    this.watchHost(ctx);
    void detachCall(ctx, () => run.run()).finally(() => {
      this.runs.delete(job.id);
    });
    return job;
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
    const answers = checkAnswers(job.inputRequests, inputResponses);
    return this.store.signal(id, owner, { type: 'input', inputResponses: answers });
  }

  /**
   * Wait until the job reaches `until` (see {@link WaitOptions}), the timeout passes or the signal
   * aborts; resolves with the job as it then is, or `undefined` when it is unknown, foreign or
   * expired. Driven by the store's signals, so it sees jobs run by any replica.
   */
  async wait(id: string, owner: string, options: WaitOptions = {}): Promise<JobRecord | undefined> {
    const until = options.until ?? 'terminal';
    const { signal } = options;
    let dirty = false;
    let wake: (() => void) | undefined;
    // Subscribed before the first read: no change can slip in between.
    const off = this.store.subscribe(id, (s) => {
      if (s.type !== 'update' && s.type !== 'partial') return;
      dirty = true;
      wake?.();
    });
    try {
      const first = await this.get(id, owner);
      if (first === undefined) return undefined;
      const done = (job: JobRecord): boolean =>
        isTerminal(job.status) ||
        (until === 'settled' && job.status === 'input_required') ||
        (until === 'change' && changed(first, job));
      if (done(first)) return first;
      const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
      for (;;) {
        if (!dirty) {
          if (signal?.aborted) break;
          const left = deadline === undefined ? undefined : deadline - Date.now();
          if (left !== undefined && left <= 0) break;
          await new Promise<void>((resolve) => {
            const timer = left === undefined ? undefined : setTimeout(finish, Math.min(left, MAX_TIMER_MS));
            function finish() {
              if (timer !== undefined) clearTimeout(timer);
              signal?.removeEventListener('abort', finish);
              wake = undefined;
              resolve();
            }
            wake = finish;
            signal?.addEventListener('abort', finish, { once: true });
          });
          if (!dirty) continue;
        }
        dirty = false;
        const current = await this.get(id, owner);
        if (current === undefined) return undefined;
        if (done(current)) return current;
      }
      return await this.get(id, owner);
    } finally {
      off();
    }
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
   * Abort every job this process runs (`ShuttingDown`) and wait until their handlers finished, at
   * most `timeoutMs`. New starts are refused. (`cancel().drain()` does the same for the calls it
   * covers; this is for a server without it.)
   */
  async close(timeoutMs = 10_000): Promise<void> {
    this.closing = true;
    const runs = [...this.runs.values()];
    for (const r of runs) r.ctx.abort(new ShuttingDown());
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(runs.map((r) => r.finished)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
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

/** A symbol property, not `ctx.state`: the event tap asks for every event of every call, and `state` is made on first read. */
function runOf(ctx: CallContext): JobRun | undefined {
  return (ctx as unknown as Record<symbol, JobRun | undefined>)[RUN];
}

function changed(a: JobRecord, b: JobRecord): boolean {
  return (
    a.status !== b.status ||
    a.progress !== b.progress ||
    a.total !== b.total ||
    a.statusMessage !== b.statusMessage ||
    a.partialLength !== b.partialLength ||
    JSON.stringify(a.inputRequests) !== JSON.stringify(b.inputRequests)
  );
}

/** A result the store can keep (plain JSON). */
function jsonResult(result: CallResult): JsonObject {
  return JSON.parse(JSON.stringify(result)) as JsonObject;
}

function jobError(err: unknown): JobError {
  if (err instanceof ProtocolError || (err instanceof Error && typeof (err as { code?: unknown }).code === 'number')) {
    const e = err as Error & { code: number; data?: unknown };
    return {
      code: e.code,
      message: e.message,
      ...(e.data !== undefined ? { data: JSON.parse(JSON.stringify(e.data)) as unknown } : {}),
    };
  }
  return { code: JsonRpcErrorCode.InternalError, message: err instanceof Error ? err.message : String(err) };
}

/** One job running in this process. */
class JobRun {
  readonly api: JobContext;
  /** Resolves when the handler has really finished (its abandoned generator included). */
  readonly finished: Promise<void>;
  private resolveFinished: () => void = noop;
  /** Store writes, in order. */
  private writes: Promise<unknown> = Promise.resolve();
  private ended = false;
  private handedOut: boolean;
  private inputWaiter: ((answers: Record<string, JsonObject>) => void) | undefined;
  private pendingProgress: JobPatch | undefined;
  private progressTimer: ReturnType<typeof setTimeout> | undefined;
  private lastProgressWrite = 0;
  private ttlTimer: ReturnType<typeof setTimeout> | undefined;
  private leaseTimer: ReturnType<typeof setInterval> | undefined;
  private off: () => void = noop;

  constructor(
    private readonly engine: JobEngine,
    readonly ctx: CallContext,
    private readonly next: Next,
    public job: JobRecord,
    inline: boolean,
  ) {
    this.handedOut = !inline;
    this.finished = new Promise<void>((resolve) => (this.resolveFinished = resolve));
    const self = this;
    this.api = {
      id: job.id,
      mode: job.mode,
      partialUri: partialUriOf(job.id),
      append(chunk: string): Promise<number> {
        if (typeof chunk !== 'string') throw new TypeError('ctx.job.append(chunk): chunk must be a string');
        return self.append(chunk);
      },
    };
  }

  handOut(): boolean {
    if (this.ended) return false;
    this.handedOut = true;
    return true;
  }

  async run(): Promise<void> {
    const { ctx, engine, job } = this;
    this.off = engine.store.subscribe(job.id, (s) => this.onSignal(s));
    if (job.ttlMs !== null) {
      const left = job.createdAt + job.ttlMs - Date.now();
      this.ttlTimer = setTimeout(
        () => ctx.abort(new JobExpired(job.ttlMs!)),
        Math.max(0, Math.min(left, MAX_TIMER_MS)),
      );
      this.ttlTimer.unref?.();
    }
    if (engine.lease > 0) {
      this.leaseTimer = setInterval(
        () => this.write({ leaseUntil: Date.now() + engine.lease }),
        Math.max(1, Math.floor(engine.lease / 3)),
      );
      this.leaseTimer.unref?.();
    }
    try {
      for (let round = 1; ; round++) {
        let result: CallResult;
        try {
          result = await this.next();
        } catch (err) {
          await this.end(err);
          return;
        }
        // An aborted job has no result, whatever the SDK made of the abort (v1 McpServer turns a
        // handler's rejection into an isError result).
        if (ctx.abortReason !== undefined) {
          await this.end(ctx.abortReason);
          return;
        }
        if (!isInputRequired(result)) {
          await this.end(undefined, result);
          return;
        }
        if (round > engine.maxRounds) {
          await this.end(
            undefined,
            refusal(
              ErrorCode.MAX_ROUNDS,
              `Gave up asking: this job needed more than ${engine.maxRounds} rounds of input.`,
              { maxRounds: engine.maxRounds },
            ),
          );
          return;
        }
        const asked = (
          typeof result.inputRequests === 'object' && result.inputRequests !== null ? result.inputRequests : {}
        ) as Record<string, InputRequest>;
        if (Object.keys(asked).length === 0) {
          await this.end(
            new ProtocolError(
              JsonRpcErrorCode.InternalError,
              'the handler returned input_required without inputRequests',
            ),
          );
          return;
        }
        let answers: Record<string, JsonObject>;
        try {
          answers = await this.askInput(asked);
        } catch (err) {
          await this.end(err);
          return;
        }
        applyAnswers(ctx, asked, answers, result.requestState);
      }
    } finally {
      this.stopTimers();
      this.off();
      // The job's outcome is written; its handler may still be unwinding (an aborted generator's finally).
      const lingering = lingeringWork(ctx);
      if (lingering !== undefined) await lingering;
      this.resolveFinished();
    }
  }

  progress(progress: number, total: number | undefined, message: string | undefined): void {
    if (this.ended || !Number.isFinite(progress)) return;
    const patch: JobPatch = { progress };
    if (total !== undefined) patch.total = total;
    if (message !== undefined) patch.statusMessage = message;
    this.pendingProgress = { ...this.pendingProgress, ...patch };
    const every = this.engine.progressEveryMs;
    const wait = this.lastProgressWrite + every - Date.now();
    if (wait <= 0) return this.flushProgress();
    if (this.progressTimer === undefined) {
      this.progressTimer = setTimeout(() => this.flushProgress(), wait);
      this.progressTimer.unref?.();
    }
  }

  append(chunk: string): Promise<number> {
    if (this.ended) return Promise.resolve(-1);
    this.flushProgress();
    const p = this.writes.then(() => this.engine.store.appendPartial(this.job.id, chunk));
    this.writes = p.catch(noop);
    return p.catch((err: unknown) => {
      this.engine.reportError(err);
      return -1;
    });
  }

  private flushProgress(): void {
    if (this.progressTimer !== undefined) clearTimeout(this.progressTimer);
    this.progressTimer = undefined;
    const patch = this.pendingProgress;
    if (patch === undefined) return;
    this.pendingProgress = undefined;
    this.lastProgressWrite = Date.now();
    this.write(patch);
  }

  /** Queue a store write (in order); the new record is kept and told to listeners. */
  private write(patch: JobPatch): Promise<JobRecord | undefined> {
    const p = this.writes.then(() => this.engine.store.update(this.job.id, patch));
    this.writes = p.catch(noop);
    return p.then(
      (job) => {
        if (job !== undefined) this.job = job;
        // Refused while the job still runs here: it was made terminal elsewhere (a cancel whose
        // signal this replica missed, a lost lease) or it expired. Stop.
        else if (!this.ended) {
          const { ttlMs, createdAt } = this.job;
          this.ctx.abort(
            ttlMs !== null && Date.now() >= createdAt + ttlMs
              ? new JobExpired(ttlMs)
              : new ClientCancelled('the job ended elsewhere'),
          );
        }
        return job;
      },
      (err: unknown) => {
        this.engine.reportError(err);
        return undefined;
      },
    );
  }

  private askInput(asked: Record<string, InputRequest>): Promise<Record<string, JsonObject>> {
    const { ctx } = this;
    return new Promise<Record<string, JsonObject>>((resolve, reject) => {
      const aborted = ctx.abortReason;
      if (aborted !== undefined) return reject(aborted);
      const onAbort = () => {
        this.inputWaiter = undefined;
        reject(ctx.abortReason);
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      this.inputWaiter = (answers) => {
        ctx.signal.removeEventListener('abort', onAbort);
        this.inputWaiter = undefined;
        void this.write({ status: 'working' }).then(() => resolve(answers));
      };
      this.flushProgress();
      const first = Object.values(asked)[0];
      const message = typeof first?.params?.message === 'string' ? first.params.message : undefined;
      void this.write({
        status: 'input_required',
        inputRequests: asked,
        ...(message !== undefined ? { statusMessage: message } : {}),
      });
    });
  }

  private onSignal(s: JobSignal): void {
    if (s.type === 'cancel') {
      this.ctx.abort(new ClientCancelled(s.reason));
    } else if (s.type === 'input') {
      this.inputWaiter?.(s.inputResponses);
    } else if (s.type === 'update' && isTerminal(s.job.status) && !this.ended) {
      // Made terminal by someone else (a front's cancel on any replica, a lost lease): stop.
      this.job = s.job;
      this.ctx.abort(
        s.job.status === 'cancelled' ? new ClientCancelled(s.job.statusMessage) : new Disconnected(s.job.statusMessage),
      );
    }
  }

  /** Write the outcome: a result, or why it failed or was cancelled. */
  private async end(err: unknown, result?: CallResult): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.stopTimers();
    this.flushProgress();
    const { ctx, job } = this;
    // A job nobody holds the id of (it finished inline) is kept briefly only.
    const short =
      !this.handedOut && job.idempotencyKey === undefined ? { ttlMs: Date.now() - job.createdAt + 5_000 } : {};
    const aborted: CallAbortReason | undefined = ctx.abortReason ?? (isCallAbortReason(err) ? err : undefined);
    let patch: JobPatch;
    if (result !== undefined) patch = { status: 'completed', result: jsonResult(result), ...short };
    else if (aborted !== undefined) patch = { status: 'cancelled', statusMessage: aborted.message, ...short };
    else
      patch = {
        status: 'failed',
        error: jobError(err),
        statusMessage: err instanceof Error ? err.message : String(err),
        ...short,
      };
    await this.write(patch);
  }

  private stopTimers(): void {
    if (this.ttlTimer !== undefined) clearTimeout(this.ttlTimer);
    if (this.leaseTimer !== undefined) clearInterval(this.leaseTimer);
    this.ttlTimer = this.leaseTimer = undefined;
  }
}
