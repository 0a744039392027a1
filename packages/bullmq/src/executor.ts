/**
 * `bullmqExecutor()`: the `JobExecutor` of `@mcp-tether/jobs` on BullMQ. Fronts add one BullMQ job
 * (an execution ticket) per tether job; any process that calls `startWorker()` runs them.
 */
import { randomBytes } from 'node:crypto';
import type { CallContext } from '@mcp-tether/core';
import type { JobCall, JobEngine, JobExecution, JobExecutor, JobSubmission } from '@mcp-tether/jobs';
import { ShuttingDown } from '@mcp-tether/core';
import { Queue } from 'bullmq';
import type { ConnectableServer } from './local.js';
import { type BullmqExecutorOptions, type Settings, settle } from './options.js';
import { BullmqWorker, type WorkerOptions } from './worker.js';

/** `_meta` key of a worker's call that runs an existing job: a one-time key known only to the worker process. */
export const RUN_META = 'io.github.mcp-tether/run';

/** The data of a BullMQ job (the execution ticket): what a worker needs to run the call again. */
export interface Ticket extends JobCall {
  /** The tether job's owner (the record is read with it). */
  readonly owner: string;
}

/** Options of {@link BullmqExecutor.startWorker}. */
export interface StartWorkerOptions extends WorkerOptions {
  /**
   * Builds the server the worker runs calls on: the same tools and middleware stack as the fronts
   * (`tether(new McpServer(...), [...])` with the same `jobs()` instance, whose engine has this
   * executor). Called once per worker.
   */
  server: () => ConnectableServer | Promise<ConnectableServer>;
  /** The engine of that stack (`jobs(...).engine`): the worker reads and fences records through its store. */
  engine: JobEngine;
}

/**
 * Runs `@mcp-tether/jobs` jobs on BullMQ. Give the same executor to the engine on every process
 * (`jobs({ executor, store: RedisJobStore })`); call {@link BullmqExecutor.startWorker} on the
 * processes that run jobs.
 */
export class BullmqExecutor implements JobExecutor {
  readonly name = 'bullmq';
  /** Jobs run in worker processes: the engine stores the call on the record and hands it over. */
  readonly remote = true;
  /** The checked options. */
  readonly settings: Settings;
  #queue: Queue | undefined;
  readonly #executions = new Map<string, JobExecution>();
  readonly #workers = new Set<BullmqWorker>();
  #closed = false;

  constructor(options: BullmqExecutorOptions = {}) {
    this.settings = settle(options);
  }

  /** The BullMQ queue (made on first use). Fronts add to it; tests and benchmarks read it. */
  get queue(): Queue {
    if (this.#queue === undefined) {
      const s = this.settings;
      this.#queue = new Queue(s.queue, {
        connection: s.queueConnection,
        prefix: s.prefix,
        streams: { events: { maxLen: 1_000 } },
      });
      this.#queue.on('error', s.onError);
    }
    return this.#queue;
  }

  /** Jobs this process's workers run now. */
  get running(): number {
    let n = 0;
    for (const w of this.#workers) n += w.running;
    return n;
  }

  async submit({ job, call }: JobSubmission): Promise<void> {
    if (this.#closed) throw new ShuttingDown();
    if (call === undefined) throw new TypeError('@mcp-tether/bullmq: a remote executor needs the job call');
    const policy = this.settings.policy(call.tool);
    const ticket: Ticket = { ...call, owner: job.owner };
    await this.queue.add(call.tool, ticket, {
      jobId: job.id,
      attempts: policy.attempts,
      backoff: { type: policy.backoff.type, delay: policy.backoff.delayMs },
      // The result lives in the tether record: the ticket goes as soon as the attempt ends.
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  claimCall(ctx: CallContext): JobExecution | undefined {
    const key = ctx.meta[RUN_META];
    if (typeof key !== 'string') return undefined;
    const execution = this.#executions.get(key);
    if (execution !== undefined) this.#executions.delete(key); // one time
    return execution;
  }

  /** @internal The worker registers an execution and gets its key for the call's `_meta`. */
  register(execution: JobExecution): string {
    const key = randomBytes(16).toString('base64url');
    this.#executions.set(key, execution);
    return key;
  }

  /** @internal */
  unregister(key: string): void {
    this.#executions.delete(key);
  }

  /**
   * Make this process a worker: it takes jobs from the queue (`concurrency` at a time) and runs each
   * through a server built by `server()`, until {@link BullmqWorker.close}.
   * @throws TypeError when `engine` does not run on this executor
   */
  async startWorker(options: StartWorkerOptions): Promise<BullmqWorker> {
    if (this.#closed) throw new Error('@mcp-tether/bullmq: the executor is closed');
    if (options.engine?.executor !== this)
      throw new TypeError(
        '@mcp-tether/bullmq: startWorker needs the engine that runs on this executor (jobs({ executor }).engine)',
      );
    const worker = await BullmqWorker.start(this, options.engine, await options.server(), options);
    this.#workers.add(worker);
    worker.closed.then(() => this.#workers.delete(worker));
    return worker;
  }

  /**
   * Close this process's workers (each hands back what it cannot finish within `graceMs`: no job of
   * theirs stays `working` here, another worker takes it up) and the queue. Idempotent.
   */
  async close(options: { graceMs?: number } = {}): Promise<void> {
    this.#closed = true;
    const graceMs = options.graceMs ?? this.settings.graceMs;
    await Promise.all([...this.#workers].map((w) => w.close(graceMs)));
    await this.#queue?.close().catch(() => {});
  }
}

/** A {@link BullmqExecutor} from options (see {@link BullmqExecutorOptions}). */
export function bullmqExecutor(options: BullmqExecutorOptions = {}): BullmqExecutor {
  return new BullmqExecutor(options);
}
