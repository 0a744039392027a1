/**
 * One job running in this process: it runs the rest of the chain and the handler as the job (input
 * rounds included), turns progress into the job's status, keeps its lease and TTL, listens to the
 * store's signals (cancel, answers) and writes the outcome once.
 */
import {
  ClientCancelled,
  Disconnected,
  diagnostics,
  isCallAbortReason,
  lingeringWork,
  ShuttingDown,
  type CallAbortReason,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Next,
} from '@mcp-tether/core';
import { applyInputRound } from '@mcp-tether/mrtr';
import { JobExpired, type JobContext } from './context.js';
import type { JobAttempt, JobExecution } from './executor.js';
import { partialUriOf } from './ids.js';
import { outcomeOf, outcomePatch, roundStep } from './outcome.js';
import { MAX_CHECKPOINT_BYTES, isTerminal, type JobPatch, type JobRecord, type JobSignal } from './store.js';
import { RunWrites, type WriteSettings } from './writes.js';

/** What a {@link JobRun} needs of the engine that started it. */
export interface RunSettings extends WriteSettings {
  /** Input rounds a job may ask for, at most. */
  readonly maxRounds: number;
  /** The runner's lease on a job, ms; `0` = none. */
  readonly lease: number;
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

/** One job running in this process. */
export class JobRun {
  readonly api: JobContext;
  /** Resolves when the handler has really finished (its abandoned generator included). */
  readonly finished: Promise<void>;
  private resolveFinished: () => void = noop;
  /** This attempt's store writes, in order and fenced. */
  private readonly writes: RunWrites;
  private ended = false;
  private handedOut: boolean;
  private inputWaiter: ((answers: Record<string, JsonObject>) => void) | undefined;
  private ttlTimer: ReturnType<typeof setTimeout> | undefined;
  private leaseTimer: ReturnType<typeof setInterval> | undefined;
  private off: () => void = noop;
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
    this.writes = new RunWrites(engine, job.id, attempt?.fence, (patch, written) => this.written(patch, written));
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
    return this.writes.write({ checkpoint: JSON.parse(json) as unknown }).then((job) => job !== undefined);
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
    this.startTimers();
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
        const step = roundStep(ctx, this.job.mode, result, round, engine.maxRounds);
        if (step.type === 'end') {
          await this.end(step.error, step.result);
          return;
        }
        let answers: Record<string, JsonObject>;
        try {
          answers = await this.askInput(step.asked);
        } catch (err) {
          await this.end(err);
          return;
        }
        applyInputRound(ctx, step.asked, answers, result.requestState);
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
    this.writes.progress(patch);
  }

  append(chunk: string): Promise<number> {
    if (this.ended) return Promise.resolve(-1);
    return this.writes.append(chunk);
  }

  /** The store answered an update: keep the new record and tell listeners, or stop when it was refused. */
  private written(patch: JobPatch, job: JobRecord | undefined): void {
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
        void this.writes.write({ status: 'working' }).then(() => resolve(answers));
      };
      this.writes.flushProgress();
      const first = Object.values(asked)[0];
      const message = typeof first?.params?.message === 'string' ? first.params.message : undefined;
      void this.writes.write({
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
    this.writes.flushProgress();
    const { ctx, job } = this;
    // A job nobody holds the id of (it finished inline) is kept briefly only.
    const short =
      !this.handedOut && job.idempotencyKey === undefined ? { ttlMs: Date.now() - job.createdAt + 5_000 } : {};
    const aborted: CallAbortReason | undefined = ctx.abortReason ?? (isCallAbortReason(err) ? err : undefined);
    if (this.execution !== undefined) {
      // The executor may note on the record why it stays `working` (a hand-back, a retry): that note
      // must land after this run's last progress write, or the progress message would cover it.
      await this.writes.idle;
      let verdict: 'write' | 'keep' = 'write';
      try {
        verdict = await this.execution.settle(outcomeOf(err, result, aborted));
      } catch (e) {
        this.engine.reportError(e);
      }
      if (verdict === 'keep') {
        await this.writes.idle;
        this.resolveOutcome();
        return;
      }
    }
    await this.writes.write(outcomePatch(err, result, aborted, this.shutdownMessage, short));
    this.resolveOutcome();
  }

  /** The TTL (aborts with {@link JobExpired}) and the lease renewal (a third of the lease). */
  private startTimers(): void {
    const { ctx, engine, job } = this;
    const { ttlMs } = job;
    if (ttlMs !== null) {
      const left = job.createdAt + ttlMs - Date.now();
      this.ttlTimer = setTimeout(() => ctx.abort(new JobExpired(ttlMs)), Math.max(0, Math.min(left, MAX_TIMER_MS)));
      this.ttlTimer.unref?.();
    }
    // A remote executor's lock is the lease of its attempts (the record carries none).
    if (engine.lease > 0 && this.execution === undefined) {
      this.leaseTimer = setInterval(
        () => this.writes.write({ leaseUntil: Date.now() + engine.lease }),
        Math.max(1, Math.floor(engine.lease / 3)),
      );
      this.leaseTimer.unref?.();
    }
  }

  private stopTimers(): void {
    if (this.ttlTimer !== undefined) clearTimeout(this.ttlTimer);
    if (this.leaseTimer !== undefined) clearInterval(this.leaseTimer);
    this.ttlTimer = this.leaseTimer = undefined;
  }
}
