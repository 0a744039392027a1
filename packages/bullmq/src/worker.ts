/**
 * A worker process's side: a BullMQ `Worker` whose processor runs each job's call through the
 * user's server (in process), as the existing tether job, and maps the run's end onto BullMQ
 * (done, retry after the backoff, back to the queue at shutdown).
 */
import type { JobEngine } from '@mcp-tether/jobs';
import { type Job, WaitingError, Worker } from 'bullmq';
import { Execution, resumedMessage } from './execution.js';
import type { BullmqExecutor, Ticket } from './executor.js';
import { RUN_META } from './executor.js';
import { type ConnectableServer, LocalSession } from './local.js';

/** Options of a worker. */
export interface WorkerOptions {
  /** Jobs this worker runs at once. Default: the executor's `concurrency` (4). */
  concurrency?: number;
  /** Name shown in BullMQ (`processedBy`). Default `tether-<pid>`. */
  name?: string;
}

/** A running worker ({@link BullmqExecutor.startWorker}). */
export class BullmqWorker {
  /** Resolves once {@link BullmqWorker.close} finished. */
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;
  readonly #running = new Set<Execution>();
  #closing: Promise<void> | undefined;

  private constructor(
    private readonly executor: BullmqExecutor,
    private readonly engine: JobEngine,
    private readonly session: LocalSession,
    /** The BullMQ worker. */
    readonly worker: Worker<Ticket>,
    /** This worker's name (the `runner` of the records it claims; BullMQ's `processedBy`). */
    readonly name: string,
  ) {
    this.closed = new Promise<void>((resolve) => (this.#resolveClosed = resolve));
  }

  /** @internal */
  static async start(
    executor: BullmqExecutor,
    engine: JobEngine,
    server: ConnectableServer,
    options: WorkerOptions,
  ): Promise<BullmqWorker> {
    const s = executor.settings;
    const name = options.name ?? `tether-${process.pid}`;
    const session = await LocalSession.open(server, name);
    let self: BullmqWorker | undefined;
    const worker = new Worker<Ticket>(s.queue, (job, token) => self!.process(job, token), {
      connection: s.connection,
      prefix: s.prefix,
      concurrency: options.concurrency ?? s.concurrency,
      name,
      lockDuration: s.lockMs,
      stalledInterval: Math.max(100, Math.floor(s.lockMs / 2)),
      // Crashes are counted by us (maxStalls) so that the record says why it failed.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      autorun: false,
    });
    self = new BullmqWorker(executor, engine, session, worker, name);
    worker.on('error', s.onError);
    void worker.run().catch(s.onError);
    await worker.waitUntilReady();
    return self;
  }

  /** Jobs running on this worker now. */
  get running(): number {
    return this.#running.size;
  }

  private async process(job: Job<Ticket>, token: string | undefined): Promise<void> {
    const s = this.executor.settings;
    const ticket = job.data;
    const id = job.id!;
    const store = this.engine.store;
    if (store.claim === undefined)
      throw new TypeError('@mcp-tether/bullmq: the job store cannot claim attempts (JobStore.claim)');
    // The next attempt: atomically attempt + 1 and a new fencing token; nothing to run when the job is
    // gone (expired), terminal (cancelled while it waited, or finished by an earlier attempt).
    const name = this.name;
    const claimed = await store.claim(id, name, undefined);
    if (claimed === undefined) return;
    const attempt = {
      job: claimed,
      attempt: claimed.attempt ?? 1,
      fence: claimed.fence ?? 0,
      resumeFrom: claimed.checkpoint,
    };
    if (job.stalledCounter > s.maxStalls) {
      const message = `job failed: its worker was lost ${job.stalledCounter} times (crashed, or paused past its lock of ${s.lockMs} ms)`;
      await store.update(
        id,
        { status: 'failed', error: { code: -32603, message }, statusMessage: message },
        { fence: attempt.fence },
      );
      return;
    }
    // A later attempt replaces the last one's message (why it ended: handed back, retrying, its
    // last progress before a crash) with its own.
    if (attempt.attempt > 1)
      await store
        .update(id, { statusMessage: resumedMessage(attempt, name) }, { fence: attempt.fence })
        .catch(s.onError);
    const execution = new Execution(attempt, job.attemptsMade, s.policy(ticket.tool), this.engine.store, s.onError);
    if (this.#closing !== undefined) execution.handBack();
    this.#running.add(execution);
    const key = this.executor.register(execution);
    try {
      const answer = await this.session.request(
        'tools/call',
        { name: ticket.tool, arguments: ticket.args, _meta: { ...ticket.meta, [RUN_META]: key } },
        ticket.principal,
      );
      if (!execution.claimed) {
        this.executor.unregister(key);
        // The call never reached the jobs middleware: an outer middleware refused it, or the
        // arguments were invalid. That fails the job.
        const why =
          'error' in answer ? answer.error.message : (textOf(answer.result) ?? 'the worker could not start the job');
        const message = `job could not start on the worker: ${why}`;
        await store.update(
          id,
          { status: 'failed', error: { code: -32603, message }, statusMessage: message },
          { fence: attempt.fence },
        );
        return;
      }
      const ending = await execution.ended;
      if (ending.type === 'retry') throw ending.error;
      if (ending.type === 'handback') {
        await job.moveToWait(token);
        throw new WaitingError();
      }
    } finally {
      this.#running.delete(execution);
    }
  }

  /**
   * Graceful shutdown: take no more jobs; let running ones finish within `graceMs`; then abort the
   * rest (`ShuttingDown`: their `finally` runs once) and put them back in the queue for another
   * worker, their records still `working` (the next run gets `attempt` + 1 and the last checkpoint).
   * Then close the worker's server and BullMQ connections. Idempotent.
   */
  close(graceMs = this.executor.settings.graceMs): Promise<void> {
    this.#closing ??= (async () => {
      const done = this.worker.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const graceOver = new Promise<'grace'>((resolve) => (timer = setTimeout(() => resolve('grace'), graceMs)));
      const first = await Promise.race([done.then(() => 'done' as const), graceOver]);
      clearTimeout(timer);
      if (first === 'grace') for (const execution of this.#running) execution.handBack();
      await done.catch(this.executor.settings.onError);
      await this.session.close();
      this.#resolveClosed();
    })();
    return this.#closing;
  }
}

function textOf(result: Record<string, unknown>): string | undefined {
  const content = result.content;
  if (!Array.isArray(content)) return undefined;
  const first = content[0] as { type?: unknown; text?: unknown } | undefined;
  return first?.type === 'text' && typeof first.text === 'string' ? first.text : undefined;
}
