/**
 * What following long work (a job handle or a task) shares: one progress stream for the whole life
 * of the work (strictly increasing, from whatever carries numbers), one total cap for the whole
 * follow (not per request), the caller's signal, and the rule that the client ends the work it
 * gives up on (`jobs.cancel`, `tasks/cancel`) whatever made it give up.
 */
import { CallAbortedError, isCallAborted, JobError, type ProgressReport, reasonText } from './errors.js';
import type { CallTimers, CallToolOptions } from './types.js';

/** Limits of one follow (ms). */
export interface FollowLimits {
  /** Cap for the whole follow, from the first request to the result, every wait and poll included. Default 3 600 000. */
  maxTotalMs?: number;
  /** The caller's abort. */
  signal?: AbortSignal;
  /** Each progress report, strictly increasing over the whole life of the work. */
  onProgress?: (report: ProgressReport) => void;
}

const on = (ms: number) => ms > 0 && Number.isFinite(ms);

/**
 * One follow: `signal` aborts at the caller's abort or at the total cap; {@link Following.giveUp}
 * ends the work and says why.
 */
export class Following {
  readonly startedAt: number;
  /** Aborts when the caller's signal does, or when `maxTotalMs` has passed. */
  readonly signal: AbortSignal;
  private readonly ac = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout> | undefined;
  private readonly maxTotalMs: number;
  private readonly callerSignal: AbortSignal | undefined;
  private readonly onCallerAbort: (() => void) | undefined;
  private lastProgress = Number.NEGATIVE_INFINITY;
  private readonly onProgress: ((report: ProgressReport) => void) | undefined;

  /** @param defaults the wrapper's timers (its `maxTotalMs` is the default cap) */
  constructor(limits: FollowLimits, defaults: CallTimers = {}) {
    this.startedAt = Date.now();
    this.signal = this.ac.signal;
    this.maxTotalMs = limits.maxTotalMs ?? defaults.maxTotalMs ?? 3_600_000;
    this.onProgress = limits.onProgress;
    this.callerSignal = limits.signal;
    if (limits.signal?.aborted) this.ac.abort(limits.signal.reason);
    else if (limits.signal) {
      this.onCallerAbort = () => this.ac.abort(limits.signal!.reason);
      limits.signal.addEventListener('abort', this.onCallerAbort, { once: true });
    }
    if (on(this.maxTotalMs) && !this.ac.signal.aborted) {
      const left = this.startedAt + this.maxTotalMs - Date.now();
      this.timer = setTimeout(() => this.ac.abort(new Error(`the total cap of ${this.maxTotalMs} ms passed`)), left);
    }
  }

  /** True when the total cap (not the caller) ended the follow. */
  get timedOut(): boolean {
    return this.ac.signal.aborted && !this.callerSignal?.aborted;
  }

  /** Milliseconds left of the total cap (`Infinity` without one). */
  remaining(): number {
    return on(this.maxTotalMs) ? Math.max(0, this.startedAt + this.maxTotalMs - Date.now()) : Number.POSITIVE_INFINITY;
  }

  /** The timers of one request of this follow: the caller's, with the total cap shrunk to what is left. */
  timers(base: CallTimers): CallTimers & { signal: AbortSignal } {
    const left = this.remaining();
    const cap = base.maxTotalMs !== undefined && on(base.maxTotalMs) ? Math.min(base.maxTotalMs, left) : left;
    return { ...base, maxTotalMs: Number.isFinite(cap) ? Math.max(cap, 1) : cap, signal: this.signal };
  }

  /**
   * The options of one request this follow makes (a status poll, `tasks/get`, an answer): the
   * caller's timers with the total cap shrunk to what is left, the caller's `_meta`, and a progress
   * route to this follow (a server may stream the work's progress on any of them), not what
   * belonged to the first call.
   */
  requestOptions(o: CallToolOptions): CallToolOptions {
    return {
      ...this.timers({
        silenceMs: o.silenceMs,
        timeoutMs: o.timeoutMs,
        resetTimeoutOnProgress: o.resetTimeoutOnProgress,
        maxTotalMs: o.maxTotalMs,
      }),
      ...(o.meta && { meta: o.meta }),
      onProgress: (p) => this.progress(p),
    };
  }

  /** Report progress from any source; only strictly increasing values reach `onProgress`. */
  progress(report: ProgressReport | undefined): void {
    if (!report || !this.onProgress || !Number.isFinite(report.progress) || report.progress <= this.lastProgress)
      return;
    this.lastProgress = report.progress;
    this.onProgress(report);
  }

  /**
   * The follow failed with `error`: unless the work is known to be over (a {@link JobError} from a
   * terminal status), end it with `cancel` (best effort, bounded), then throw what the caller
   * should see: a {@link CallAbortedError} `cancelled` (caller's signal) or `total` (the cap), or
   * `error` itself (a request that timed out, a protocol error, a closed connection).
   */
  async giveUp(error: unknown, what: string, cancelName: string, cancel: () => Promise<unknown>): Promise<never> {
    const over = error instanceof JobError && error.status !== 'input_required' && error.status !== 'unknown';
    if (!over) await cancel().catch(() => undefined);
    const elapsed = Date.now() - this.startedAt;
    if (this.callerSignal?.aborted)
      throw new CallAbortedError(
        `${what}: cancelled (${reasonText(this.callerSignal.reason)}); ${cancelName} sent`,
        'cancelled',
        what,
        elapsed,
        undefined,
        { cause: error },
      );
    if (this.timedOut || (isCallAborted(error) && error.kind === 'total'))
      throw new CallAbortedError(
        `${what}: exceeded the total cap of ${this.maxTotalMs} ms; ${cancelName} sent`,
        'total',
        what,
        elapsed,
        undefined,
        { cause: error },
      );
    if (isCallAborted(error) && !over)
      throw new CallAbortedError(
        `${error.message}; ${cancelName} sent`,
        error.kind,
        what,
        elapsed,
        error.lastProgress,
        {
          cause: error,
        },
      );
    throw error;
  }

  /** Stop the cap's timer and forget the caller's signal. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.onCallerAbort) this.callerSignal?.removeEventListener('abort', this.onCallerAbort);
  }
}

/** The cancel the client sends for work it gave up on: bounded, never tied to the aborted signal. */
export const CANCEL_TIMERS: CallTimers = { timeoutMs: 10_000, silenceMs: 10_000, maxTotalMs: 10_000 };
