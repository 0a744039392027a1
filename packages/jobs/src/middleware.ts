/**
 * `jobs()`: the middleware. Selected tools run inline up to `inlineMs`; a call not done by then is
 * answered with a job handle the model polls with `jobs.status` and stops with `jobs.cancel`
 * (`./handle.ts`, `./tools.ts`). Fronts (the MCP task fronts of `./tasks`) are asked first. Partial
 * output is served as the resource `job://{jobId}/partial`, with `resources/subscribe` and
 * `notifications/resources/updated` (`./partial.ts`).
 */
import {
  IDEMPOTENCY_KEY_META,
  contextOf,
  type CallContext,
  type CallResult,
  type Middleware,
  type Next,
} from '@mcp-tether/core';
import { JobEngine, type JobEngineOptions } from './engine.js';
import { handleMode, type HandleModeOptions } from './handle.js';
import { ModernUpdates, Subscriptions, partialTemplate, readPartial } from './partial.js';
import type { JobContext } from './context.js';
import type { JobHandle } from './store.js';
import { JobTools, type ToolServer } from './tools.js';

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * The job this call runs as (added by `@mcp-tether/jobs`), or `undefined` when it is not a job
     * (yet: a handle-mode job exists from the call's start; read it inside the handler).
     * `ctx.job.append(chunk)` publishes partial output.
     */
    readonly job: JobContext | undefined;
  }
}

/** Options of {@link jobs}. */
export interface JobsOptions extends JobEngineOptions {
  /** The runner (share one with other fronts or servers). Default: a new {@link JobEngine} from the other options. */
  engine?: JobEngine;
  /** Tools that run as jobs in handle mode (by name). */
  tools?: readonly string[];
  /** Or decide per call (takes precedence over `tools`). */
  select?: (ctx: CallContext) => boolean;
  /** How long a call runs inline before it is answered with a handle, ms. Default 20 000. */
  inlineMs?: number;
  /** Longest `jobs.status` long-poll (`waitMs`), ms. Default 25 000. */
  maxWaitMs?: number;
  /**
   * The idempotency key of a call (a repeated start returns the existing job). Default: the
   * string `_meta["io.github.mcp-tether/idempotencyKey"]` of the request (≤ 200 characters).
   */
  idempotencyKey?: (ctx: CallContext) => string | undefined;
  /**
   * Fronts asked before handle mode, in order (the MCP task fronts: `taskFront({ engine })`). Each
   * is a middleware whose `when`/`handle` take the calls it serves and pass the others on; its
   * `setup` runs with the jobs middleware's. Their `fields`, `onEvent` and `onEnd` are not used.
   */
  fronts?: readonly Middleware[];
  /** At most one `notifications/resources/updated` per subscription this often, ms (the last one is never lost). Default 200. */
  notifyIntervalMs?: number;
  /**
   * 2026-07-28 has no `resources/subscribe`: its `subscriptions/listen` streams are served by
   * `createMcpHandler`. Pass `(uri) => handler.notify.resourceUpdated(uri)` and the partial output
   * of jobs started on 2026-07-28 requests is announced there (throttled like the 2025 updates, to
   * every listen stream whose `resourceSubscriptions` names the URI).
   */
  notifyResourceUpdated?: (uri: string) => void | Promise<void>;
}

/** The middleware returned by {@link jobs}. */
export interface JobsMiddleware extends Middleware {
  readonly name: 'jobs';
  readonly engine: JobEngine;
  /**
   * Register `jobs.status`, `jobs.cancel` and the partial-output resource template
   * (`job://{jobId}/partial`) on a server. Call it once per server, before `connect()` (on v2
   * HTTP, inside the per-request factory, like `tether()`).
   */
  registerTools(server: ToolServer): void;
}

function checkMs(who: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
    throw new TypeError(`@mcp-tether/jobs: ${who} must be a non-negative number of ms, got ${String(v)}`);
  return v;
}

/**
 * Work that outlives the request. Selected tools (`tools` or `select`) run inline for up to
 * `inlineMs`; if the call is not done by then it is answered with a **job handle**
 * (`structuredContent`: {@link JobHandle}; a text the model can act on) and the work goes on as a
 * job. The model polls `jobs.status { jobId, waitMs? }` and stops it with `jobs.cancel { jobId }`.
 *
 * Put it inside `cancel()` (drain aborts and waits for jobs), `progress()` and `heartbeat()`
 * (they serve the inline phase), `mrtr()` (jobs serve their own input rounds) and `mutex()` (an
 * outer lock is held for the whole job): `[cancel(), progress(), heartbeat(), mrtr(), mutex(), jobs()]`.
 * Create it once (outside per-request factories) and call {@link JobsMiddleware.registerTools} on
 * every server.
 *
 * @throws TypeError for bad options, or when neither `tools`, `select` nor `fronts` is given
 */
export function jobs(options: JobsOptions = {}): JobsMiddleware {
  const engine = options.engine ?? new JobEngine(options);
  const inlineMs = checkMs('inlineMs', options.inlineMs ?? 20_000);
  const maxWaitMs = checkMs('maxWaitMs', options.maxWaitMs ?? 25_000);
  const notifyIntervalMs = checkMs('notifyIntervalMs', options.notifyIntervalMs ?? 200);
  const fronts = [...(options.fronts ?? [])];
  if (options.tools === undefined && options.select === undefined && fronts.length === 0) {
    throw new TypeError('@mcp-tether/jobs: say which tools run as jobs (options.tools or options.select)');
  }
  const toolSet = new Set(options.tools ?? []);
  const select = options.select ?? ((ctx: CallContext) => toolSet.has(ctx.name));
  const keyOf =
    options.idempotencyKey ??
    ((ctx: CallContext) => {
      const k = ctx.meta[IDEMPOTENCY_KEY_META];
      return typeof k === 'string' && k.length > 0 && k.length <= 200 ? k : undefined;
    });
  const own = JobTools.names;
  const tools = new JobTools(engine, maxWaitMs);
  const subscriptions = new Subscriptions(engine, notifyIntervalMs);
  const modernUpdates =
    options.notifyResourceUpdated === undefined
      ? undefined
      : new ModernUpdates(engine, notifyIntervalMs, options.notifyResourceUpdated);
  const handles: HandleModeOptions = { engine, inlineMs, keyOf, modernUpdates };
  const mode = (ctx: CallContext, next: Next) => decideMode(handles, fronts, select, ctx, next);

  return {
    name: 'jobs',
    // A job's handler reads its answers with mrtr's readInput() & co. (free functions): the server's
    // calls run in async context, as with mrtr itself.
    asyncContext: true,
    engine,
    fields: { job: (ctx) => engine.jobOf(ctx) },
    setup(host) {
      for (const f of fronts) f.setup?.(host);
      host.registerCapabilities({ resources: { subscribe: true } });
      host.handleRequest('resources/subscribe', (params, info) => subscriptions.subscribe(host, params, info));
      host.handleRequest('resources/unsubscribe', (params, info) => subscriptions.unsubscribe(host, params, info));
      host.onClose(() => subscriptions.closeHost(host));
    },
    when: (ctx) =>
      ctx.method === 'tools/call' &&
      !own.has(ctx.name) &&
      (fronts.length > 0 || select(ctx) || engine.executionOf(ctx) !== undefined),
    handle: (ctx, next) => {
      if (ctx.method !== 'tools/call' || own.has(ctx.name)) return next();
      // A remote executor's worker running a claimed attempt: no front, no new job.
      const execution = engine.executionOf(ctx);
      if (execution !== undefined) return engine.adopt(ctx, next, execution);
      return mode(ctx, next);
    },
    onEvent(ctx, event, next) {
      if (engine.tap(ctx, event)) return;
      return next(event);
    },
    registerTools(server) {
      tools.register(server);
      server.registerResource(
        'job-partial',
        partialTemplate,
        {
          title: 'Partial output of a job',
          description:
            'What a running job has produced so far. Add ?offset=N to read only the chunks from N on (_meta next gives the offset to read next).',
          mimeType: 'text/plain',
        },
        // The SDK hands the request's own object on as the last argument: the call is found through it
        // (no async context needed).
        async (uri: URL | string, _variables: unknown, extra: unknown) =>
          readPartial(engine, String(uri), contextOf(extra)),
      );
    },
  };
}

/**
 * The one mode decision of a call: each front (a task front) is asked in order; a call that no
 * front made a job of runs in handle mode when selected. A front that made the call a job (a
 * task) runs the rest of the chain as that job: the same call never becomes a handle-mode job
 * too (its task's result would be a handle).
 */
function decideMode(
  handles: HandleModeOptions,
  fronts: readonly Middleware[],
  select: (ctx: CallContext) => boolean,
  ctx: CallContext,
  next: Next,
): Promise<CallResult> {
  const { engine, modernUpdates } = handles;
  const last = () => (select(ctx) && engine.jobOf(ctx) === undefined ? handleMode(handles, ctx, next) : next());
  const step = (i: number): Promise<CallResult> => {
    let f = fronts[i];
    while (f !== undefined && (typeof f.handle !== 'function' || (f.when !== undefined && !f.when(ctx))))
      f = fronts[++i];
    if (f === undefined) return last();
    return f.handle!(ctx, () => step(i + 1));
  };
  const answered = step(0);
  if (modernUpdates === undefined || ctx.era !== 'modern') return answered;
  // A 2026 task a front made of this call: its partial output is announced like a handle-mode
  // job's (handleMode follows its own jobs), before the CreateTaskResult goes out.
  return answered.then(async (result) => {
    const job = engine.jobOf(ctx);
    if (job !== undefined && job.mode === 'task-2026') await modernUpdates.follow(job.id, engine.ownerOf(ctx));
    return result;
  });
}
