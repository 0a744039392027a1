/**
 * One job running in this process: it runs the rest of the chain and the handler as the job (input
 * rounds included), turns progress into the job's status, keeps its lease and TTL, listens to the
 * store's signals (cancel, answers) and writes the outcome once.
 */
import {
  ClientCancelled,
  DeadlineExceeded,
  Disconnected,
  diagnostics,
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  isCallAbortReason,
  isInputRequired,
  lingeringWork,
  refusal,
  ShuttingDown,
  type CallAbortReason,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Next,
} from '@mcp-tether/core';
import { applyInputRound, capabilityRefusal } from '@mcp-tether/mrtr';
import type { JobAttempt, JobExecution, JobOutcome } from './executor.js';
import { partialUriOf } from './ids.js';
import {
  MAX_CHECKPOINT_BYTES,
  isTerminal,
  type JobError,
  type JobMode,
  type JobPatch,
  type JobRecord,
  type JobSignal,
  type JobStore,
  type WriteOptions,
} from './store.js';

/** The job's TTL passed while it ran: its signal aborts with this (a {@link DeadlineExceeded}, kind `timeout`). */
export class JobExpired extends DeadlineExceeded {
  constructor(ttlMs: number) {
    super(ttlMs);
    this.message = `job expired: its TTL of ${ttlMs} ms passed`;
  }
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
   * @throws PartialLimitError (synchronously) when the job's partial output would pass
   *   `maxPartialBytes` (UTF-8 bytes, default 8 MiB) or `maxPartialChunks` (default 100 000)
   */
  append(chunk: string): Promise<number>;
  /** This run of the job: 1, then 2, 3, … when an executor ran it again (a worker died or handed it back). */
  readonly attempt: number;
  /**
   * The last value an earlier attempt passed to {@link JobContext.checkpoint}, or `undefined`
   * (first attempt, or none stored): continue from it instead of starting over.
   */
  readonly resumeFrom: unknown;
  /**
   * Store a small JSON value (at most `MAX_CHECKPOINT_BYTES`, 65 536, serialized) that a later
   * attempt reads as `resumeFrom`, e.g. `{ done: 120 }` after each document. Written in order with
   * the job's other writes, fenced like them. Resolves `true` once stored, `false` when the job
   * ended (or this attempt was fenced off); never rejects (store errors go to `onError`).
   * @throws TypeError (synchronously) for a value that is not JSON; RangeError over the size cap
   */
  checkpoint(value: unknown): Promise<boolean>;
}

/** What a {@link JobRun} needs of the engine that started it. */
export interface RunSettings {
  readonly store: JobStore;
  /** Input rounds a job may ask for, at most. */
  readonly maxRounds: number;
  /** Progress reaches the store at most this often, ms. */
  readonly progressEveryMs: number;
  /** The runner's lease on a job, ms; `0` = none. */
  readonly lease: number;
  /** Partial output one job may append, in UTF-8 bytes, and in chunks. */
  readonly maxPartialBytes: number;
  readonly maxPartialChunks: number;
  readonly reportError: (error: unknown) => void;
}

/**
 * A job's partial output would pass its bound (`JobEngineOptions.maxPartialBytes` or
 * `maxPartialChunks`): thrown by `ctx.job.append`; nothing of the chunk is stored. Uncaught, the job
 * fails with this message.
 */
export class PartialLimitError extends RangeError {
  override readonly name = 'PartialLimitError';
  constructor(
    readonly jobId: string,
    readonly limit: { bytes: number; chunks: number },
  ) {
    super(
      `partial output of job ${jobId} would exceed its bound (${limit.bytes} bytes, ${limit.chunks} chunks): keep the output in the result, or in your own storage`,
    );
  }
}

/** A job this engine runs. */
const RUN = Symbol('mcp-tether.jobs.run');

const MAX_TIMER_MS = 2_147_483_647;
const noop = () => {};

/** A symbol property, not `ctx.state`: the event tap asks for every event of every call, and `state` is made on first read. */
export function runOf(ctx: CallContext): JobRun | undefined {
  return (ctx as unknown as Record<symbol, JobRun | undefined>)[RUN];
}

/** Mark `ctx` as the call `run` runs (see {@link runOf}). */
export function attachRun(ctx: CallContext, run: JobRun): void {
  (ctx as unknown as Record<symbol, JobRun | undefined>)[RUN] = run;
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
/** `tether:job` for a job's status (its record's stored trace context travels along). */
export function publishJob(
  ctx: CallContext | undefined,
  job: JobRecord,
  status: JobRecord['status'] | 'started',
): void {
  diagnostics.job.publish({
    ctx,
    jobId: job.id,
    tool: job.tool,
    status,
    mode: job.mode,
    ageMs: Date.now() - job.createdAt,
    trace: job.trace,
  });
}

export class JobRun {
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
  /** The fence of this attempt's writes (contract rule 8), when it was claimed. */
  private readonly fence: number | undefined;
  /** Set by {@link JobRun.shutdown}: the `statusMessage` of the `cancelled` outcome. */
  private shutdownMessage: string | undefined;
  private resolveOutcome: () => void = noop;
  /** Resolves once the outcome (result, error, cancel) was written. */
  readonly outcomeWritten: Promise<void>;

  /**
   * @param attempt the claimed attempt this run is (a queue worker); without it, attempt 1, unfenced
   */
  constructor(
    private readonly engine: RunSettings,
    readonly ctx: CallContext,
    private readonly next: Next,
    public job: JobRecord,
    inline: boolean,
    attempt?: JobAttempt,
    /** A remote executor's worker runs this attempt: it decides on the outcome before it is written. */
    private readonly execution?: JobExecution,
  ) {
    this.handedOut = !inline;
    this.finished = new Promise<void>((resolve) => (this.resolveFinished = resolve));
    this.outcomeWritten = new Promise<void>((resolve) => (this.resolveOutcome = resolve));
    this.fence = attempt?.fence;
    const self = this;
    this.api = {
      id: job.id,
      mode: job.mode,
      partialUri: partialUriOf(job.id),
      attempt: attempt?.attempt ?? job.attempt ?? 1,
      resumeFrom: attempt?.resumeFrom ?? job.checkpoint,
      append(chunk: string): Promise<number> {
        if (typeof chunk !== 'string') throw new TypeError('ctx.job.append(chunk): chunk must be a string');
        return self.append(chunk);
      },
      checkpoint(value: unknown): Promise<boolean> {
        return self.checkpoint(value);
      },
    };
  }

  /** The outcome was decided (written or being written). */
  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * End the job now because this process stops: its signal aborts (`ShuttingDown`) and, unless it
   * already ended, the outcome is `cancelled` with `message` as `statusMessage`.
   */
  shutdown(message: string): void {
    if (this.ended) return;
    this.shutdownMessage = message;
    this.ctx.abort(new ShuttingDown());
  }

  checkpoint(value: unknown): Promise<boolean> {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      json = undefined;
    }
    if (json === undefined) throw new TypeError('ctx.job.checkpoint(value): value must be JSON');
    const bytes = Buffer.byteLength(json);
    if (bytes > MAX_CHECKPOINT_BYTES)
      throw new RangeError(`ctx.job.checkpoint(value): ${bytes} bytes, at most ${MAX_CHECKPOINT_BYTES}`);
    if (this.ended) return Promise.resolve(false);
    return this.write({ checkpoint: JSON.parse(json) as unknown }).then((job) => job !== undefined);
  }

  handOut(): boolean {
    if (this.ended) return false;
    this.handedOut = true;
    return true;
  }

  async run(): Promise<void> {
    const { ctx, engine, job } = this;
    if (diagnostics.job.hasSubscribers) publishJob(ctx, job, 'started');
    this.off = engine.store.subscribe(job.id, (s) => this.onSignal(s));
    if (job.ttlMs !== null) {
      const left = job.createdAt + job.ttlMs - Date.now();
      this.ttlTimer = setTimeout(
        () => ctx.abort(new JobExpired(job.ttlMs!)),
        Math.max(0, Math.min(left, MAX_TIMER_MS)),
      );
      this.ttlTimer.unref?.();
    }
    // A remote executor's lock is the lease of its attempts (the record carries none).
    if (engine.lease > 0 && this.execution === undefined) {
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
        // Never ask a client in a mode it did not declare (issue 26, fault 1): the task ends at once
        // with the refusal a plain call gets (2025: ELICITATION_UNSUPPORTED; 2026-07-28: -32021),
        // instead of waiting in input_required for an answer that cannot come.
        // (Handle mode is exempt: there the model answers through jobs.status, no client capability involved.)
        const unsupported = this.job.mode === 'handle' ? undefined : capabilityRefusal(ctx, Object.entries(asked));
        if (unsupported !== undefined) {
          if ('error' in unsupported) await this.end(unsupported.error);
          else await this.end(undefined, unsupported.result);
          return;
        }
        let answers: Record<string, JsonObject>;
        try {
          answers = await this.askInput(asked);
        } catch (err) {
          await this.end(err);
          return;
        }
        applyInputRound(ctx, asked, answers, result.requestState);
      }
    } finally {
      this.stopTimers();
      this.off();
      this.resolveOutcome();
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
    if (wait <= 0) {
      this.flushProgress();
      return;
    }
    if (this.progressTimer === undefined) {
      this.progressTimer = setTimeout(() => this.flushProgress(), wait);
      this.progressTimer.unref?.();
    }
  }

  /** Partial output appended by this run so far: UTF-8 bytes and chunks. */
  private partialBytes = 0;
  private partialChunks = 0;

  append(chunk: string): Promise<number> {
    if (this.ended) return Promise.resolve(-1);
    const bytes = Buffer.byteLength(chunk, 'utf8');
    const { maxPartialBytes, maxPartialChunks } = this.engine;
    if (this.partialBytes + bytes > maxPartialBytes || this.partialChunks + 1 > maxPartialChunks)
      throw new PartialLimitError(this.job.id, { bytes: maxPartialBytes, chunks: maxPartialChunks });
    this.partialBytes += bytes;
    this.partialChunks++;
    this.flushProgress();
    const p = this.writes.then(() => this.engine.store.appendPartial(this.job.id, chunk, this.fenced()));
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
    const p = this.writes.then(() => this.engine.store.update(this.job.id, patch, this.fenced()));
    this.writes = p.catch(noop);
    return p.then(
      (job) => {
        if (job !== undefined && patch.status !== undefined && diagnostics.job.hasSubscribers)
          publishJob(this.ctx, job, job.status);
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
    if (this.execution !== undefined) {
      const outcome: JobOutcome =
        result !== undefined
          ? { type: 'result', result }
          : aborted !== undefined
            ? { type: 'aborted', reason: aborted }
            : { type: 'error', error: err };
      let verdict: 'write' | 'keep' = 'write';
      try {
        verdict = await this.execution.settle(outcome);
      } catch (e) {
        this.engine.reportError(e);
      }
      if (verdict === 'keep') {
        await this.writes;
        this.resolveOutcome();
        return;
      }
    }
    let patch: JobPatch;
    if (result !== undefined) patch = { status: 'completed', result: jsonResult(result), ...short };
    else if (aborted !== undefined)
      patch = { status: 'cancelled', statusMessage: this.shutdownMessage ?? aborted.message, ...short };
    else
      patch = {
        status: 'failed',
        error: jobError(err),
        statusMessage: err instanceof Error ? err.message : String(err),
        ...short,
      };
    await this.write(patch);
    this.resolveOutcome();
  }

  private fenced(): WriteOptions | undefined {
    return this.fence === undefined ? undefined : { fence: this.fence };
  }

  private stopTimers(): void {
    if (this.ttlTimer !== undefined) clearTimeout(this.ttlTimer);
    if (this.leaseTimer !== undefined) clearInterval(this.leaseTimer);
    this.ttlTimer = this.leaseTimer = undefined;
  }
}
