/**
 * One run of a job on a worker: the `JobExecution` the engine reports to, and what the BullMQ
 * processor does with its outcome (final, retry after a throw, hand-back at shutdown).
 */
import { refusalCode, ShuttingDown, type CallAbortReason } from '@mcp-tether/core';
import type { JobAttempt, JobExecution, JobOutcome, JobStore } from '@mcp-tether/jobs';
import type { RetryPolicy } from './options.js';

/** What the processor does once the run is over. */
export type Ending =
  /** The outcome was written (completed, failed, cancelled). */
  | { type: 'final' }
  /** The handler threw and the tool has attempts left: BullMQ retries after the backoff. */
  | { type: 'retry'; error: Error }
  /** The worker is shutting down: the job goes back to the queue for another worker. */
  | { type: 'handback' };

/** The worker side of one attempt. */
export class Execution implements JobExecution {
  readonly ended: Promise<Ending>;
  #end!: (ending: Ending) => void;
  #ending: Ending = { type: 'final' };
  #abort: ((reason: CallAbortReason) => void) | undefined;
  #claimed = false;
  #handingBack = false;

  constructor(
    /** The claimed attempt (its record, number, fencing token, last checkpoint). */
    readonly attempt: JobAttempt,
    /** Failed runs before this one (BullMQ's `attemptsMade`). */
    private readonly failedBefore: number,
    private readonly policy: Required<RetryPolicy>,
    private readonly store: JobStore,
    private readonly report: (error: unknown) => void,
  ) {
    this.ended = new Promise<Ending>((resolve) => (this.#end = resolve));
  }

  /** Whether the engine runs the attempt (the call reached the jobs middleware). */
  get claimed(): boolean {
    return this.#claimed;
  }

  started(abort: (reason: CallAbortReason) => void): void {
    this.#claimed = true;
    this.#abort = abort;
    if (this.#handingBack) abort(new ShuttingDown());
  }

  async settle(outcome: JobOutcome): Promise<'write' | 'keep'> {
    if (outcome.type === 'aborted' && this.#handingBack) {
      this.#ending = { type: 'handback' };
      await this.#note(handBackMessage(this.attempt));
      return 'keep';
    }
    const error = failureOf(outcome);
    if (error !== undefined && this.failedBefore + 1 < this.policy.attempts) {
      this.#ending = { type: 'retry', error };
      await this.#note(
        `attempt ${this.failedBefore + 1} of ${this.policy.attempts} failed (${error.message.slice(0, 200)}); retrying`,
      );
      return 'keep';
    }
    this.#ending = { type: 'final' };
    return 'write';
  }

  finished(): void {
    this.#end(this.#ending);
  }

  /** Shutdown: abort the run and hand the job back (now, or as soon as it is claimed). */
  handBack(): void {
    this.#handingBack = true;
    this.#abort?.(new ShuttingDown());
  }

  /** A message on the record that stays `working` (fenced: a stale attempt writes nothing). */
  async #note(statusMessage: string): Promise<void> {
    try {
      await this.store.update(this.attempt.job.id, { statusMessage }, { fence: this.attempt.fence });
    } catch (err) {
      this.report(err);
    }
  }
}

/**
 * The `statusMessage` of a job handed back at shutdown (reason `shutdown`, like the in-process
 * executor's `cancelled` jobs): it stays on the `working` record until another worker claims the job.
 */
export function handBackMessage(attempt: JobAttempt): string {
  const by = attempt.job.runner === undefined ? 'its worker' : `worker ${attempt.job.runner}`;
  return `shutdown: handed back to the queue by ${by} (attempt ${attempt.attempt}); another worker resumes it from its last checkpoint`;
}

/** The `statusMessage` a worker writes when it claims attempt 2 or later (it replaces the last attempt's). */
export function resumedMessage(attempt: JobAttempt, worker: string): string {
  return `attempt ${attempt.attempt} running on worker ${worker}`;
}

/**
 * The error of a run that failed, else `undefined`: a rejection (a JSON-RPC error), or an `isError`
 * result without a refusal code (the SDK answers a handler's throw with such a result, so it is how
 * a throw looks from the chain; a deliberate refusal carries a code and is final).
 */
export function failureOf(outcome: JobOutcome): Error | undefined {
  if (outcome.type === 'error')
    return outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
  if (outcome.type !== 'result' || outcome.result.isError !== true || refusalCode(outcome.result) !== undefined)
    return undefined;
  const content = outcome.result.content;
  const first = Array.isArray(content) ? (content[0] as { text?: unknown } | undefined) : undefined;
  return new Error(typeof first?.text === 'string' ? first.text : 'the handler failed');
}
