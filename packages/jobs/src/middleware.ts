/**
 * `jobs()`: the middleware. Selected tools run inline up to `inlineMs`; a call not done by then is
 * answered with a job handle the model polls with `jobs.status` and stops with `jobs.cancel`.
 * Fronts (the MCP task fronts of `./tasks`) are asked first. Partial output is served as the
 * resource `job://{jobId}/partial`, with `resources/subscribe` and `notifications/resources/updated`.
 */
import {
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  contextOf,
  refusal,
  refuse,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Middleware,
  type Next,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { z } from 'zod';
import { JobEngine, partialUriOf, requestOwnerSource, type JobContext, type JobEngineOptions } from './engine.js';
import { isTerminal } from './memory.js';
import { isJobLimit, type JobHandle, type JobRecord } from './store.js';

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

/** Refusal codes of the job tools (in `structuredContent.code` of an `isError` result). */
export const JobErrorCode = {
  /** Unknown, expired, or another principal's job: the same answer for all three. */
  JOB_NOT_FOUND: 'JOB_NOT_FOUND',
  /** The `jobId` is not shaped like a job id. */
  INVALID_JOB_ID: 'INVALID_JOB_ID',
  /** `inputResponses` were malformed. */
  INVALID_INPUT: 'INVALID_INPUT',
} as const;

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

/** The part of an `McpServer` (either SDK line) {@link JobsMiddleware.registerTools} uses. */
export interface ToolServer {
  registerTool(name: string, config: Record<string, unknown>, cb: (...args: any[]) => unknown): unknown;
  registerResource(
    name: string,
    template: any,
    config: Record<string, unknown>,
    cb: (...args: any[]) => unknown,
  ): unknown;
}

const IDEMPOTENCY_META = 'io.github.mcp-tether/idempotencyKey';
const JOB_ID = /^[A-Za-z0-9_-]{16,128}$/;
const MAX_BACKOFF_MS = 15_000;
/** Working answers in a row after which the text tells the model to do other work. */
const PATIENCE = 3;
const STATUS_TOOL = 'jobs.status';
const CANCEL_TOOL = 'jobs.cancel';

/** The job id and read offset of a partial-output URI, or `undefined`. */
export function parsePartialUri(uri: string): { jobId: string; offset: number } | undefined {
  const m = /^job:\/\/([A-Za-z0-9_-]{1,128})\/partial(?:\?(?:offset|cursor)=(\d{1,12}))?$/.exec(uri);
  if (!m) return undefined;
  return { jobId: m[1]!, offset: m[2] === undefined ? 0 : Number(m[2]) };
}

/** A partial-output URI of any query (the template matches it; a bad offset then gets a clear `-32602`). */
const PARTIAL_ANY = /^job:\/\/([A-Za-z0-9_-]{1,128})\/partial(?:\?.*)?$/;

/** `pollAfterMs` after `n` working answers: 1 000 → 2 000 → 4 000 …, at most 15 000. */
export function backoffMs(n: number, base = 1000): number {
  return Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(n, 10));
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
      const k = ctx.meta[IDEMPOTENCY_META];
      return typeof k === 'string' && k.length > 0 && k.length <= 200 ? k : undefined;
    });
  const own = new Set([STATUS_TOOL, CANCEL_TOOL]);
  /** Working answers in a row, per job (for the backoff and the "do other work" hint). */
  const polls = new Map<string, number>();
  const pollsOf = (id: string): number => {
    const n = polls.get(id) ?? 0;
    polls.delete(id);
    polls.set(id, n + 1);
    if (polls.size > 10_000) polls.delete(polls.keys().next().value!);
    return n;
  };

  const handleMode = async (ctx: CallContext, next: Next): Promise<CallResult> => {
    const key = keyOf(ctx);
    let job: JobRecord;
    try {
      job = await engine.start(ctx, next, {
        mode: 'handle',
        inline: true,
        ...(key !== undefined ? { idempotencyKey: key } : {}),
      });
    } catch (err) {
      if (isJobLimit(err)) {
        return refuse(
          ctx,
          ErrorCode.BUSY,
          `Too many of your jobs are running (${err.live}). Wait for one to finish (${STATUS_TOOL}) or stop one (${CANCEL_TOOL}), then try again.`,
          {
            live: err.live,
          },
        );
      }
      throw err;
    }
    const owner = engine.ownerOf(ctx);
    const mine = engine.jobOf(ctx)?.id === job.id;
    if (mine && ctx.era === 'modern' && modernUpdates !== undefined) await modernUpdates.follow(job.id, owner);
    let rec = await engine.wait(job.id, owner, { until: 'settled', timeoutMs: inlineMs, signal: ctx.signal });
    if (ctx.abortReason !== undefined) throw ctx.abortReason;
    if (mine && rec !== undefined && !isTerminal(rec.status) && !engine.handOut(job.id)) {
      // It finished just now: answer with its outcome, as a plain call would.
      rec = await engine.wait(job.id, owner, { until: 'terminal', timeoutMs: 5_000 });
    }
    if (rec === undefined)
      throw (
        ctx.abortReason ??
        new ProtocolError(JsonRpcErrorCode.InternalError, `job ${job.id} expired before it could be answered`)
      );
    if (mine && isTerminal(rec.status)) return inlineOutcome(ctx, rec);
    return handleResult(rec, 0);
  };

  /**
   * The one mode decision of a call: each front (a task front) is asked in order; a call that no
   * front made a job of runs in handle mode when selected. A front that made the call a job (a
   * task) runs the rest of the chain as that job: the same call never becomes a handle-mode job
   * too (its task's result would be a handle).
   */
  const composed = (ctx: CallContext, next: Next): Promise<CallResult> => {
    const last = () => (select(ctx) && engine.jobOf(ctx) === undefined ? handleMode(ctx, next) : next());
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
  };

  const subscriptions = new Subscriptions(engine, notifyIntervalMs);
  const modernUpdates =
    options.notifyResourceUpdated === undefined
      ? undefined
      : new ModernUpdates(engine, notifyIntervalMs, options.notifyResourceUpdated);

  const self: JobsMiddleware = {
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
    when: (ctx) => ctx.method === 'tools/call' && !own.has(ctx.name) && (fronts.length > 0 || select(ctx)),
    handle: (ctx, next) => {
      if (ctx.method !== 'tools/call' || own.has(ctx.name)) return next();
      return composed(ctx, next);
    },
    onEvent(ctx, event, next) {
      if (engine.tap(ctx, event)) return;
      return next(event);
    },
    registerTools(server) {
      server.registerTool(
        STATUS_TOOL,
        {
          title: 'Job status',
          description:
            'Check a job started by a tool that answered with a jobId: its status, progress, and its result once done. Pass waitMs (up to 25000) to wait for it to finish. When the job needs input, pass the answers as inputResponses.',
          inputSchema: {
            jobId: z.string().describe('The jobId from the tool result'),
            waitMs: z
              .number()
              .int()
              .min(0)
              .optional()
              .describe(`Wait up to this many ms (at most ${maxWaitMs}) for the job to finish or need input`),
            inputResponses: z
              .record(z.string(), z.any())
              .optional()
              .describe('Answers to the questions of a job whose status is input_required, by key'),
          },
          annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
        },
        async (args: { jobId: string; waitMs?: number; inputResponses?: Record<string, unknown> }, ctx: CallContext) =>
          status(ctx, args),
      );
      server.registerTool(
        CANCEL_TOOL,
        {
          title: 'Cancel job',
          description: 'Stop a running job (its partial output stays readable until the job expires).',
          inputSchema: { jobId: z.string().describe('The jobId from the tool result') },
          annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
        },
        async (args: { jobId: string }, ctx: CallContext) => cancelJob(ctx, args.jobId),
      );
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
        async (uri: URL | string, _variables: unknown, extra: unknown) => readPartial(String(uri), contextOf(extra)),
      );
    },
  };

  async function status(
    ctx: CallContext,
    args: { jobId: string; waitMs?: number; inputResponses?: Record<string, unknown> },
  ): Promise<CallResult> {
    const id = args.jobId;
    if (!JOB_ID.test(id)) return invalidId(id);
    const owner = engine.ownerOf(ctx);
    let answered = false;
    if (args.inputResponses !== undefined) {
      try {
        answered = await engine.answer(id, owner, args.inputResponses);
      } catch (err) {
        if (err instanceof ProtocolError)
          return refusal(JobErrorCode.INVALID_INPUT, `The answers were not understood: ${err.message}.`);
        throw err;
      }
      if (!answered) {
        const job = await engine.get(id, owner);
        if (job === undefined) return notFound(id);
        return handleResult(
          job,
          polls.get(id) ?? 0,
          `This job is not waiting for input (it is ${job.status}); the answers were ignored.`,
        );
      }
      // Let the job take the answers before reporting.
      await engine.wait(id, owner, { until: 'change', timeoutMs: 2_000, signal: ctx.signal });
    }
    const waitMs = Math.min(args.waitMs ?? 0, maxWaitMs);
    const job =
      waitMs > 0
        ? await engine.wait(id, owner, { until: 'settled', timeoutMs: waitMs, signal: ctx.signal })
        : await engine.get(id, owner);
    if (job === undefined) {
      polls.delete(id);
      return notFound(id);
    }
    if (job.status !== 'working') {
      polls.delete(id);
      return handleResult(job, 0);
    }
    return handleResult(job, pollsOf(id) + 1);
  }

  async function cancelJob(ctx: CallContext, id: string): Promise<CallResult> {
    if (!JOB_ID.test(id)) return invalidId(id);
    const owner = engine.ownerOf(ctx);
    const before = await engine.get(id, owner);
    if (before === undefined) return notFound(id);
    if (isTerminal(before.status))
      return handleResult(before, 0, `Nothing to cancel: the job is already ${before.status}.`);
    const job = await engine.cancel(id, owner, `${CANCEL_TOOL} was called`);
    polls.delete(id);
    if (job === undefined) return notFound(id);
    return handleResult(job, 0);
  }

  async function readPartial(uri: string, ctx: CallContext | undefined): Promise<JsonObject> {
    const parsed = parsePartialUri(uri);
    const notFoundError = () =>
      new ProtocolError(
        ctx?.era === 'modern' ? JsonRpcErrorCode.InvalidParams : -32002,
        `Resource not found: ${uri.slice(0, 200)}`,
        { uri: uri.slice(0, 200) },
      );
    if (ctx === undefined) throw notFoundError();
    if (parsed === undefined) {
      if (!PARTIAL_ANY.test(uri)) throw notFoundError();
      throw new ProtocolError(
        JsonRpcErrorCode.InvalidParams,
        `Invalid partial-output URI ${uri.slice(0, 200)}: the only query is ?offset=N, N a whole number ≥ 0 (the "next" of the last read)`,
        {
          uri: uri.slice(0, 200),
        },
      );
    }
    const owner = engine.ownerOf(ctx);
    const [part, job] = await Promise.all([
      engine.store.readPartial(parsed.jobId, owner, parsed.offset),
      engine.get(parsed.jobId, owner),
    ]);
    if (part === undefined || job === undefined) throw notFoundError();
    return {
      contents: [
        {
          uri,
          mimeType: 'text/plain',
          text: part.chunks.join(''),
          _meta: {
            'io.github.mcp-tether/partial': {
              offset: Math.min(parsed.offset, part.next),
              next: part.next,
              nextUri: `${partialUriOf(parsed.jobId)}?offset=${part.next}`,
              status: job.status,
              done: isTerminal(job.status),
            },
          },
        },
      ],
    };
  }

  return self;
}

/** A resource template both SDK lines accept (they read `uriTemplate.match/toString/variableNames`, `listCallback`, `completeCallback`). */
const partialTemplate = {
  uriTemplate: {
    variableNames: ['jobId'],
    match: (uri: string) => {
      const m = PARTIAL_ANY.exec(uri);
      return m === null ? null : { jobId: m[1]! };
    },
    toString: () => 'job://{jobId}/partial',
  },
  listCallback: undefined,
  completeCallback: () => undefined,
};

function invalidId(id: string): CallResult {
  const shown = JSON.stringify(id.slice(0, 40));
  return refusal(
    JobErrorCode.INVALID_JOB_ID,
    `${shown} is not a job id (a job id is 16 to 128 letters, digits, - and _). Use the jobId exactly as the tool result gave it.`,
  );
}

function notFound(id: string): CallResult {
  return refusal(
    JobErrorCode.JOB_NOT_FOUND,
    `There is no job ${id} for you: it never existed, it expired, or it was started by someone else. Start the tool again if you still need its result.`,
    {
      jobId: id,
    },
  );
}

/** A finished job answered inline: exactly what the call would have returned. */
function inlineOutcome(ctx: CallContext, job: JobRecord): CallResult {
  if (job.status === 'completed') return job.result ?? { content: [] };
  if (job.status === 'failed') {
    const e = job.error ?? { code: JsonRpcErrorCode.InternalError, message: job.statusMessage ?? 'the job failed' };
    throw new ProtocolError(e.code, e.message, e.data);
  }
  throw (
    ctx.abortReason ?? new ProtocolError(JsonRpcErrorCode.InternalError, job.statusMessage ?? 'the job was cancelled')
  );
}

function describeFields(request: InputRequest): string {
  const params = (request.params ?? {}) as JsonObject;
  const schema = (params.requestedSchema ?? {}) as {
    properties?: Record<string, { type?: string; enum?: unknown[] }>;
    required?: string[];
  };
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .map(
      ([name, p]) =>
        `${name} (${Array.isArray(p.enum) ? `one of ${p.enum.map((x) => JSON.stringify(x)).join(', ')}` : (p.type ?? 'value')}${required.has(name) ? ', required' : ''})`,
    )
    .join('; ');
}

function elapsed(job: JobRecord): string {
  const s = Math.max(0, Math.round((Date.now() - job.createdAt) / 1000));
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
}

/**
 * The answer about a job: a text the model can act on, and the {@link JobHandle} as
 * `structuredContent`. `n` = working answers in a row so far (drives `pollAfterMs`).
 */
export function handleResult(job: JobRecord, n: number, note?: string): CallResult {
  const handle: JobHandle = {
    jobId: job.id,
    status: job.status,
    pollAfterMs: job.status === 'working' ? backoffMs(n, job.pollIntervalMs ?? 1000) : 0,
  };
  if (job.progress !== undefined) handle.progress = job.progress;
  if (job.total !== undefined) handle.total = job.total;
  if (job.statusMessage !== undefined) handle.message = job.statusMessage;
  handle.partialUri = partialUriOf(job.id);
  const lead = note === undefined ? '' : `${note} `;
  const ask = `${STATUS_TOOL} {"jobId":"${job.id}"}`;
  switch (job.status) {
    case 'working': {
      const secs = Math.round(handle.pollAfterMs / 1000);
      const pct =
        job.progress !== undefined && job.total !== undefined && job.total > 0
          ? ` ${Math.floor((job.progress / job.total) * 100)}% done (${job.progress}/${job.total})`
          : '';
      const msg = job.statusMessage !== undefined ? `, now at: ${job.statusMessage}` : '';
      const patience =
        n > PATIENCE
          ? ` It has been running for ${elapsed(job)} and you have checked ${n} times in a row. Do other work now and check back later (in ${secs} s or more): checking more often will not make it finish sooner.`
          : '';
      const text = `${lead}Job ${job.id} (${job.tool}) is still running${pct}${msg}. Call ${ask} in about ${secs} s to get the result (add "waitMs": 20000 to wait for it), or jobs.cancel to stop it. Partial output so far: ${handle.partialUri}.${patience}`;
      return { content: [{ type: 'text', text }], structuredContent: handle as unknown as JsonObject };
    }
    case 'input_required': {
      const requests = job.inputRequests ?? {};
      handle.inputRequests = requests;
      const parts = Object.entries(requests).map(([key, r]) => {
        const message = typeof r.params?.message === 'string' ? r.params.message : 'input needed';
        const fields = describeFields(r);
        return `"${key}": ${JSON.stringify(message)}${fields ? ` — fields: ${fields}` : ''}`;
      });
      const firstKey = Object.keys(requests)[0] ?? 'key';
      const text = `${lead}Job ${job.id} (${job.tool}) is waiting for input before it can go on. Questions: ${parts.join('; ')}. Ask the user, then answer with ${STATUS_TOOL} {"jobId":"${job.id}","inputResponses":{"${firstKey}":{"action":"accept","content":{...}}}} (or "action":"decline" / "cancel").`;
      return { content: [{ type: 'text', text }], structuredContent: handle as unknown as JsonObject };
    }
    case 'completed': {
      const result = job.result ?? { content: [] };
      handle.result = result;
      const produced =
        Array.isArray(result.content) && result.content.length > 0
          ? (result.content as unknown[])
          : [{ type: 'text', text: `Job ${job.id} completed.` }];
      const out: JsonObject = {
        content: lead ? [{ type: 'text', text: lead.trim() }, ...produced] : produced,
        structuredContent: handle as unknown as JsonObject,
      };
      if (result.isError === true) out.isError = true;
      return out;
    }
    case 'failed': {
      if (job.error !== undefined) handle.error = job.error;
      const why = job.error?.message ?? job.statusMessage ?? 'unknown error';
      return {
        content: [{ type: 'text', text: `${lead}Job ${job.id} (${job.tool}) failed: ${why}` }],
        isError: true,
        structuredContent: handle as unknown as JsonObject,
      };
    }
    case 'cancelled':
      return {
        content: [
          {
            type: 'text',
            text: `${lead}Job ${job.id} (${job.tool}) was cancelled (${job.statusMessage ?? 'no reason given'}). It will not produce a result.`,
          },
        ],
        structuredContent: handle as unknown as JsonObject,
      };
  }
}

interface Sub {
  readonly uri: string;
  off: (() => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  lastSent: number;
  closed: boolean;
}

/**
 * Throttled: at most one notice per interval; a change inside the interval is sent at its end.
 * `last` (the job ended): stop listening once the final notice went out.
 */
function throttled(
  sub: Sub,
  last: boolean,
  intervalMs: number,
  notify: () => Promise<void> | void,
  onError: (e: unknown) => void,
): void {
  if (sub.closed) return;
  if (last) {
    sub.off?.();
    sub.off = undefined;
  }
  if (sub.timer !== undefined) return;
  const wait = sub.lastSent + intervalMs - Date.now();
  const send = () => {
    sub.timer = undefined;
    if (sub.closed) return;
    sub.lastSent = Date.now();
    try {
      void Promise.resolve(notify()).catch(onError);
    } catch (err) {
      onError(err);
    }
  };
  if (wait <= 0) send();
  else {
    sub.timer = setTimeout(send, wait);
    sub.timer.unref?.();
  }
}

/**
 * 2026-07-28: partial-output changes of jobs started on modern requests, told through the user's
 * `notifyResourceUpdated` (e.g. `createMcpHandler`'s `handler.notify.resourceUpdated`), which
 * reaches the `subscriptions/listen` streams whose `resourceSubscriptions` name the URI.
 */
class ModernUpdates {
  constructor(
    private readonly engine: JobEngine,
    private readonly intervalMs: number,
    private readonly notify: (uri: string) => void | Promise<void>,
  ) {}

  async follow(jobId: string, owner: string): Promise<void> {
    const sub: Sub = { uri: partialUriOf(jobId), off: undefined, timer: undefined, lastSent: 0, closed: false };
    const send = () => this.notify(sub.uri);
    sub.off = await this.engine.watch(jobId, owner, (s) => {
      if (s.type === 'partial') throttled(sub, false, this.intervalMs, send, this.engine.reportError);
      else if (s.type === 'update' && isTerminal(s.job.status))
        throttled(sub, true, this.intervalMs, send, this.engine.reportError);
    });
  }
}

/** `resources/subscribe` for partial-output resources, per session; updates driven by the store's signals. */
class Subscriptions {
  private readonly byHost = new WeakMap<ServerHost, Map<string, Sub>>();

  constructor(
    private readonly engine: JobEngine,
    private readonly intervalMs: number,
  ) {}

  async subscribe(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri === undefined)
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'resources/subscribe: uri must be a string');
    const parsed = parsePartialUri(uri);
    const notFound = () =>
      new ProtocolError(
        info.era === 'modern' ? JsonRpcErrorCode.InvalidParams : -32002,
        `Resource not found: ${uri.slice(0, 200)}`,
        { uri: uri.slice(0, 200) },
      );
    if (parsed === undefined) throw notFound();
    const canonical = partialUriOf(parsed.jobId);
    let subs = this.byHost.get(host);
    if (subs === undefined) this.byHost.set(host, (subs = new Map()));
    if (subs.has(canonical)) return {};
    const owner = this.engine.ownerOf(requestOwnerSource(info, host));
    const sub: Sub = { uri: canonical, off: undefined, timer: undefined, lastSent: 0, closed: false };
    subs.set(canonical, sub);
    let off: (() => void) | undefined;
    try {
      off = await this.engine.watch(parsed.jobId, owner, (s) => {
        if (s.type === 'partial') this.schedule(host, sub, false);
        else if (s.type === 'update' && isTerminal(s.job.status)) this.schedule(host, sub, true);
      });
    } catch (err) {
      if (subs.get(canonical) === sub) subs.delete(canonical); // a retry subscribes anew
      throw err;
    }
    if (off === undefined) {
      subs.delete(canonical);
      throw notFound();
    }
    if (sub.closed) off();
    else sub.off = off;
    return {};
  }

  async unsubscribe(host: ServerHost, params: JsonObject, _info: RequestInfo): Promise<JsonObject> {
    const uri = typeof params.uri === 'string' ? params.uri : undefined;
    if (uri === undefined)
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'resources/unsubscribe: uri must be a string');
    const parsed = parsePartialUri(uri);
    const sub = parsed === undefined ? undefined : this.byHost.get(host)?.get(partialUriOf(parsed.jobId));
    if (sub !== undefined) this.drop(host, sub);
    return {};
  }

  closeHost(host: ServerHost): void {
    const subs = this.byHost.get(host);
    if (subs === undefined) return;
    for (const sub of [...subs.values()]) this.drop(host, sub);
  }

  private drop(host: ServerHost, sub: Sub): void {
    sub.closed = true;
    sub.off?.();
    sub.off = undefined;
    if (sub.timer !== undefined) clearTimeout(sub.timer);
    sub.timer = undefined;
    const subs = this.byHost.get(host);
    if (subs?.get(sub.uri) === sub) subs.delete(sub.uri);
  }

  private schedule(host: ServerHost, sub: Sub, last: boolean): void {
    throttled(
      sub,
      last,
      this.intervalMs,
      () => host.notify({ method: 'notifications/resources/updated', params: { uri: sub.uri } }),
      this.engine.reportError,
    );
  }
}
