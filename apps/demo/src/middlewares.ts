/**
 * The demo's middleware stack, outermost first. One instance per process, shared by every session
 * (that is how the mutex and shutdown draining span sessions). The order and its reasons are in
 * README.md ("Middleware order").
 */
import { cancel, type CancelMiddleware, type DrainResult } from '@mcp-tether/cancel';
import type { CallContext, Middleware } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { JobEngine, jobs, taskFront, type JobExecutor, type JobStore, type JobsMiddleware } from '@mcp-tether/jobs';
import { otel } from '@mcp-tether/otel';
import { logChannel, type LogChannel } from '@mcp-tether/log-channel';
import { mrtr, type ReplayStore } from '@mcp-tether/mrtr';
import { mutex, type LockMiddleware, type LockStore } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { protocolFault, TASK_FIXTURE_ASK_FIRST, TASK_FIXTURE_SUPPORT } from './tools/taskFixtures.js';

/** The stack and the process-level controls that come with it. */
export interface DemoStack {
  /** Middlewares in attach order (outermost first). */
  readonly middlewares: readonly Middleware[];
  /** Names, in order, for the startup banner. */
  readonly names: readonly string[];
  /** The cancel middleware (deadlines, `drain()`, `inFlight`). */
  readonly cancellation: CancelMiddleware;
  /** The log channel (its `logger` reaches every session). */
  readonly logs: LogChannel;
  /** The mutex of destructive tools (`stats()`). */
  readonly writes: LockMiddleware;
  /** Work that outlives the request (`corpus.reindex`): MCP tasks (2025-11-25, 2026 extension), job handles, partial output. */
  readonly jobs: JobsMiddleware;
  /** Refuse new calls, abort running ones, wait for them at most `timeoutMs` ms. */
  drain(timeoutMs: number): Promise<DrainResult>;
}

/** Options of {@link createStack}. */
export interface StackOptions {
  /**
   * Silence after which a quiet call with a progress token gets a heartbeat, in ms. Default 1000:
   * short, so the walkthrough shows heartbeats within seconds (a production server would use ~10 s).
   */
  heartbeatSilenceMs?: number;
  /** Deadline of every call, in ms. Default 300 000 (5 min); see {@link DEADLINES} for the exceptions. */
  deadlineMs?: number;
  /** How long a job tool (`corpus.reindex`) runs inline before it is answered with a job handle, in ms. Default 20 000. */
  inlineMs?: number;
  /** Where jobs live. Default: this process (`MemoryJobStore`); `--redis`: `RedisJobStore`. */
  jobStore?: JobStore;
  /** Where job handlers run. Default: this process; `--redis`: BullMQ workers (`bullmqExecutor`). */
  executor?: JobExecutor;
  /**
   * 2026-07-28: announce a job's (or task's) partial-output change to `subscriptions/listen` streams
   * (a `createMcpHandler`'s `handler.notify.resourceUpdated`). Called with the `job://{jobId}/partial`
   * URI, throttled. Default: none (2026 clients read with the offset). The bin passes none yet:
   * `@mcp-tether/http` does not expose its handler's notifier.
   */
  notifyResourceUpdated?: (uri: string) => void | Promise<void>;
  /**
   * Serve the conformance suite's tasks-extension fixtures as tasks (their `taskSupport`, the MRTR-first
   * `test_tool_with_task`, the protocol fault of `protocol_error_job`). Set with the fixtures
   * themselves (`createDemoApp({ conformanceFixtures: true })`). Default false.
   */
  taskFixtures?: boolean;
  /** Waiters per lock key past which a destructive call is refused with `BUSY`. Default 100 (`DEMO_MAX_QUEUE` in the bin). */
  maxQueue?: number;
  /** Where the mutex's locks live. Default: this process (`MemoryLockStore`); `--redis`: `RedisLockStore`. */
  lockStore?: LockStore;
  /** Where consumed 2026-07-28 `requestState`s are recorded (one-time use). Default: this process; `--redis`: `RedisReplayStore`. */
  replayStore?: ReplayStore;
}

/**
 * Per-tool deadlines, in ms, where the 5-minute default does not fit: `job.quiet` may wait up to
 * 10 minutes by contract; the interactive tools wait for a person (mrtr waits 10 min per answer).
 */
export const DEADLINES: Readonly<Record<string, number>> = {
  'job.quiet': 11 * 60_000,
  'billing.refund': 15 * 60_000,
  'account.connect': 15 * 60_000,
};

/** The lock a destructive call takes: one per counter key, one per invoice. */
export function lockKey(ctx: CallContext): string {
  const args = ctx.args as { key?: unknown; invoiceId?: unknown };
  const resource = args.key ?? args.invoiceId;
  if (resource === undefined) return ctx.name;
  // Arguments are not validated yet when the mutex runs: never call toString on a client's object.
  return `${ctx.name}:${typeof resource === 'string' ? resource : (JSON.stringify(resource) ?? '')}`;
}

/** Build the middleware stack. */
export function createStack(options: StackOptions = {}): DemoStack {
  const cancellation = cancel({
    timeoutMs: options.deadlineMs ?? 300_000,
    timeouts: (ctx) =>
      options.deadlineMs === undefined
        ? Object.hasOwn(DEADLINES, ctx.name)
          ? DEADLINES[ctx.name]
          : undefined
        : undefined,
  });
  // Levels per session (default info until logging/setLevel), 100 burst / 20 per second per session.
  const logs = logChannel();
  // destructiveHint tools (records.increment, billing.refund), FIFO per key, at most 100 waiting per key.
  const writes = mutex({
    key: lockKey,
    maxQueue: options.maxQueue ?? 100,
    ...(options.lockStore && { store: options.lockStore }),
  });
  // corpus.reindex in every mode, one engine: an MCP task when the client asks for one (2025-11-25
  // params.task; a 2026-07-28 request that declares the tasks extension), else inline up to
  // inlineMs, then a job handle polled with jobs.status.
  const engine = new JobEngine({
    ...(options.jobStore && { store: options.jobStore }),
    ...(options.executor && { executor: options.executor }),
  });
  const tasks = taskFront({
    engine,
    taskSupport: { 'corpus.reindex': 'optional', ...(options.taskFixtures && TASK_FIXTURE_SUPPORT) },
    ...(options.taskFixtures && { askFirst: TASK_FIXTURE_ASK_FIRST }),
  });
  const telemetry = otel();
  const work = jobs({
    engine,
    tools: ['corpus.reindex'],
    fronts: [tasks],
    inlineMs: options.inlineMs ?? 20_000,
    ...(options.notifyResourceUpdated && { notifyResourceUpdated: options.notifyResourceUpdated }),
  });
  const middlewares: Middleware[] = [
    // Outermost: the MCP span and mcp.server.operation.duration cover every layer below (zero cost
    // while no OpenTelemetry SDK is registered: see src/telemetry.ts).
    telemetry,
    // The call's one signal and its deadline, first: they cover every wait below (queue, user, handler),
    // and drain() at shutdown sees every call, also those still waiting.
    cancellation,
    // Outside the layers that may emit log events as themselves (they travel outward only), so
    // those pass its level filter and rate limit too; ctx.log itself works at any position.
    logs,
    // Speaks for a call gone quiet (waiting on I/O, the mutex or the user); outside progress, as its README recommends.
    heartbeat({ silenceMs: options.heartbeatSilenceMs ?? 1_000 }),
    // yield progress(...) -> throttled, strictly increasing notifications/progress (200 ms and 1% both).
    progressMiddleware(),
    // Ask the user mid-call; outside the mutex so no lock is held while the user answers. Each
    // 2026-07-28 requestState is good for one retry (a captured one replayed is refused). Sealing
    // keys: MRTR_KEYS (every replica must share them).
    mrtr({ oneTime: options.replayStore ?? true }),
    // The lock is held only while the handler really runs (for a job: until the job ends).
    writes,
    // Innermost: a job keeps every layer above (the lock, the drain) until it ends; it serves its
    // own input rounds (jobs.status answers) and turns progress into job status after the handle.
    work,
    // Conformance only: protocol_error_job's protocol-level fault, inside its task.
    ...(options.taskFixtures ? [protocolFault] : []),
  ];
  return {
    middlewares,
    names: middlewares.map((m) => m.name),
    cancellation,
    logs,
    writes,
    jobs: work,
    drain: (timeoutMs) => cancellation.drain(timeoutMs),
  };
}
