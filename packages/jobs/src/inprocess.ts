/**
 * The in-process executor (the default {@link JobExecutor}): the call's own chain runs as the job in
 * this process, detached from the request (core's `detachCall`). No serialization, no Redis.
 */
import { ShuttingDown, detachCall, type CallContext, type Next } from '@mcp-tether/core';
import type { ExecutorCloseOptions, JobExecution, JobExecutor, JobSubmission } from './executor.js';
import { JobRun, attachRun, type RunSettings } from './run.js';

/** What the in-process executor needs of its engine (beyond {@link RunSettings}). */
export interface InProcessSettings extends RunSettings {
  /** A job started by a call that may still finish inline (handle mode) is not handed out yet. */
  readonly inline: (submission: JobSubmission) => boolean;
}

/** Runs each job in this process, on the chain of the call that started it. */
export class InProcessExecutor implements JobExecutor {
  readonly name = 'in-process';
  /** Jobs running here, by id. */
  readonly runs = new Map<string, JobRun>();
  private closing: Promise<void> | undefined;

  constructor(private readonly settings: InProcessSettings) {}

  get running(): number {
    return this.runs.size;
  }

  /**
   * Start the job on the call's own chain (`submission.local`), detached from the request.
   * @throws ShuttingDown (rejects) after {@link InProcessExecutor.close}
   * @throws TypeError (rejects) without `submission.local` (nothing to run here)
   */
  async submit(submission: JobSubmission): Promise<void> {
    if (this.closing !== undefined) throw new ShuttingDown();
    const { local, job } = submission;
    if (local === undefined)
      throw new TypeError('@mcp-tether/jobs: the in-process executor runs calls of this process');
    const run = new JobRun(this.settings, local.ctx, local.next, job, this.settings.inline(submission));
    this.runs.set(job.id, run);
    attachRun(local.ctx, run);
    void detachCall(local.ctx, () => run.run()).finally(() => {
      this.runs.delete(job.id);
    });
  }

  /**
   * Run a remote executor's claimed attempt on the chain of the worker's call (`ctx`, `next`),
   * detached like any job here; the execution hears of its start, settles its outcome, and is told
   * when it finished.
   */
  adopt(ctx: CallContext, next: Next, execution: JobExecution): void {
    const { job } = execution.attempt;
    const run = new JobRun(this.settings, ctx, next, job, false, execution.attempt, execution);
    this.runs.set(job.id, run);
    attachRun(ctx, run);
    execution.started((reason) => ctx.abort(reason));
    void detachCall(ctx, () => run.run()).finally(() => {
      if (this.runs.get(job.id) === run) this.runs.delete(job.id);
      execution.finished();
    });
  }

  /**
   * Stop taking jobs; let the running ones finish within `graceMs`; then end each one still running
   * as `cancelled` with `statusMessage` `shutdown: …` (nobody else could run it) and wait for that
   * outcome to be written (and, at most 1 s more, for the handlers to unwind).
   */
  close(options: ExecutorCloseOptions): Promise<void> {
    this.closing ??= this.shutdown(Math.max(0, options.graceMs));
    return this.closing;
  }

  private async shutdown(graceMs: number): Promise<void> {
    const all = [...this.runs.values()];
    await within(Promise.all(all.map((r) => r.finished)), graceMs);
    const left = all.filter((r) => !r.isEnded);
    for (const r of left) r.shutdown(`shutdown: the server stopped before this job finished (grace ${graceMs} ms)`);
    await Promise.all(left.map((r) => r.outcomeWritten));
    await within(Promise.all(left.map((r) => r.finished)), 1_000);
  }
}

/** `p`, or nothing after `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
