/**
 * The middleware stack, in the one order the packages' READMEs give, built once per process and
 * shared by every server the preset makes (every 2025-era session, every 2026-07-28 request):
 *
 *   cancel → logChannel → heartbeat → progress → ...app.use(...) → ask → mrtr → mutex → jobs
 *
 * Each part is the package's own middleware with the options a tool's registration implies (its
 * lock, its job flag, its deadline): see DESIGN.md for the same stack written by hand.
 */
import { type CancelMiddleware, cancel } from '@mcp-tether/cancel';
import type { CallContext, Middleware } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { JobEngine, type JobsMiddleware, jobs, taskFront } from '@mcp-tether/jobs';
import { type LogChannel, logChannel } from '@mcp-tether/log-channel';
import { type MrtrOptions, mrtr } from '@mcp-tether/mrtr';
import { type LockMiddleware, mutex } from '@mcp-tether/mutex';
import { progressMiddleware } from '@mcp-tether/progress';
import { askFields } from './ask.js';
import type { Stores } from './stores.js';

/** What the stack needs to know of the registered tools (filled by `app.tool(...)`). */
export interface ToolTable {
  /** Does this tool take a lock? */
  hasLock(name: string): boolean;
  /** The lock key of a call of a tool that takes one (throws a TypeError on invalid arguments). */
  lockKey(ctx: CallContext): string | undefined;
  /** Tool name → `'optional'`/`'required'` for job tools, else `undefined`. */
  job(name: string): 'optional' | 'required' | undefined;
  /** Tool name → its own deadline in ms, else `undefined`. */
  timeoutMs(name: string): number | undefined;
}

/** Settings of the stack (the app's options after defaults). */
export interface StackSettings {
  /** Deadline of a call, in ms (a job's inline phase only; a job's limit is its TTL). */
  readonly timeoutMs: number;
  /** Progress silence after which a heartbeat is sent, in ms. */
  readonly heartbeatMs: number;
  /** How long a job tool runs inline before it is answered with a job handle, in ms. */
  readonly inlineMs: number;
  /** How long a job (its result and partial output) is kept, in ms. */
  readonly jobTtlMs: number;
  /** Waiters per lock key before a clean `BUSY` refusal. */
  readonly maxQueue: number;
  /** More options for `mrtr()` (e.g. `keys`). */
  readonly mrtr?: Omit<MrtrOptions, 'oneTime'>;
}

/** The built stack and its parts, for shutdown and hand access. */
export interface Stack {
  /** Outermost first: what `tether(server, middlewares)` gets. */
  readonly middlewares: readonly Middleware[];
  readonly cancellation: CancelMiddleware;
  readonly logs: LogChannel;
  readonly locks: LockMiddleware;
  readonly engine: JobEngine;
  readonly jobs: JobsMiddleware;
}

/**
 * Build the stack.
 * @param notify - 2026-07-28 `subscriptions/listen` delivery of job output (the HTTP front's notifier)
 */
export function buildStack(
  table: ToolTable,
  settings: StackSettings,
  stores: Stores,
  user: readonly Middleware[],
  notify: (uri: string) => void,
): Stack {
  const cancellation = cancel({ timeoutMs: settings.timeoutMs, timeouts: (ctx) => table.timeoutMs(ctx.name) });
  const logs = logChannel();
  const locks = mutex({
    // Only tools registered with a `lock`: never a silent per-tool-name default.
    select: (ctx) => ctx.method === 'tools/call' && table.hasLock(ctx.name),
    key: (ctx) => table.lockKey(ctx) as string,
    maxQueue: settings.maxQueue,
    ...(stores.lockStore && { store: stores.lockStore }),
  });
  const engine = new JobEngine({ ttlMs: settings.jobTtlMs, ...(stores.jobStore && { store: stores.jobStore }) });
  const isJob = (ctx: CallContext) => ctx.method === 'tools/call' && table.job(ctx.name) !== undefined;
  const tasks = taskFront({
    engine,
    taskSupport: (name: string) => table.job(name) ?? 'forbidden',
    ttlMs: settings.jobTtlMs,
  });
  const work = jobs({
    engine,
    select: isJob,
    fronts: [tasks],
    inlineMs: settings.inlineMs,
    notifyResourceUpdated: notify,
  });
  const middlewares: Middleware[] = [
    cancellation, // the call's one signal, deadlines, drain(): first, so it covers every wait below
    logs, // ctx.log; outside the layers that log as themselves
    heartbeat({ silenceMs: settings.heartbeatMs }), // a quiet call stays alive (outside progress)
    progressMiddleware(), // yield progress(...) → throttled notifications/progress
    ...user, // app.use(...): sees each call once, its refusals and handles; its events are sent
    askFields(), // ctx.ask / ctx.confirm
    mrtr({ oneTime: stores.replayStore, ...settings.mrtr }), // outside the lock: none held while the user answers
    locks, // held while the handler runs (a job: until it ends)
    work, // innermost: a job keeps every layer above until it ends
  ];
  return { middlewares, cancellation, logs, locks, engine, jobs: work };
}
