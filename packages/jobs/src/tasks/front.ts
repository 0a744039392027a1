/**
 * The MCP task fronts: one middleware that answers a `tools/call` with a task and serves the
 * `tasks/*` methods, for both task protocols:
 *
 * - **2025-11-25** (experimental core tasks, spec `basic/utilities/tasks`): the request carries
 *   `params.task`; the answer is the nested `CreateTaskResult`; `tasks/get|result|list|cancel`;
 *   `notifications/tasks/status`; progress keeps flowing with the request's own token until the
 *   task is terminal; every message related to the task carries `_meta["io.modelcontextprotocol/related-task"]`;
 *   an `input_required` task's elicitations are delivered on the stream of a waiting `tasks/result`.
 * - **2026-07-28 tasks extension** `io.modelcontextprotocol/tasks` (SEP-2663): the request declares the
 *   extension in its `_meta` client capabilities; the answer is the flat `CreateTaskResult`
 *   (`resultType: "task"`), sent only once the task is stored; `tasks/get` (DetailedTask),
 *   `tasks/update` (answers reach the handler through `readInput`), `tasks/cancel`; `tasks/result`
 *   and `tasks/list` do not exist (the SDK's era gate answers `-32601`).
 *
 * Running the job (detached from the request, its signal, TTL, re-entry with answers) is the
 * engine's ({@link TaskEngine}).
 */
import {
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  refuse,
  type CallContext,
  type CallResult,
  type JsonObject,
  type Middleware,
  type Next,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { ANONYMOUS_OWNER, requestOwnerSource } from '../engine.js';
import { isJobLimit, type JobRecord } from '../store.js';
import type { TaskEngine } from './port.js';
import {
  TASKS_EXTENSION,
  createTaskResult2025,
  createTaskResult2026,
  declaresTasksExtension,
  detailedTask2026,
  missingTasksExtension,
  relatedMeta,
  status2025,
  task2025,
  taskIdOf,
  taskNotFound,
  terminal,
} from './wire.js';

/** MCP `Tool.execution.taskSupport`. */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** Options of {@link taskFront}. */
export interface TaskFrontOptions {
  /** The job runner. */
  engine: TaskEngine;
  /**
   * Which tools may run as tasks (MCP `execution.taskSupport`), by tool name, or a function of the
   * name. A tool not named is `forbidden`. `optional`: a task when the client asks for one (2025
   * `params.task`) or declares the extension (2026); else the call runs inline as usual.
   * `required`: a call that cannot become a task is refused (2025: `-32601`; 2026: `-32021`).
   */
  taskSupport: Readonly<Record<string, Exclude<TaskSupport, 'forbidden'>>> | ((tool: string) => TaskSupport);
  /**
   * 2026-07-28: tools whose first round asks the user over MRTR before any task exists (SEP-2663:
   * MRTR exchanges SHOULD finish before the task is created). A request to such a tool that carries
   * no `inputResponses` runs inline as usual (its `input_required` goes back to the client, sealed
   * by `@mcp-tether/mrtr` placed before this front); the retry with the answers becomes the task.
   * Other tools become a task on the first request and ask inside it (`tasks/get` → `tasks/update`).
   */
  askFirst?: readonly string[] | ((tool: string) => boolean);
  /** TTL of a task whose client asks for none (2025) and of every 2026 task, ms. Default 3 600 000 (1 h). */
  ttlMs?: number;
  /** Longest TTL granted to a 2025 client's `params.task.ttl`, ms. Default 86 400 000 (24 h). */
  maxTtlMs?: number;
  /** Suggested poll interval (`pollInterval` / `pollIntervalMs`), ms. Default 1 000. */
  pollIntervalMs?: number;
  /** `tasks/list` page size (2025). Default 50. */
  listLimit?: number;
  /** How long a 2025 `tasks/result` waits for the client to answer one elicitation, ms. Default 600 000. */
  inputTimeoutMs?: number;
  /** Where errors of background sends go (a notification that could not be delivered). Default: dropped. */
  onError?: (error: unknown) => void;
}

const TASKS_2025_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** The questions of one 2025 task put to the client. */
interface Asking {
  /** Elicitations in flight, by input request key (abort = withdraw it). */
  inflight: Map<string, AbortController>;
  /** Keys answered, with the record's `updatedAt` when they were asked. */
  answered: Map<string, number>;
}

/** Per-connection state of the 2025 front: the `tasks/result` streams open per task, the watchers to stop on close. */
interface Session {
  /** Open `tasks/result` requests per task id (their `notify`, newest last). */
  streams: Map<string, Array<(n: { method: string; params?: JsonObject }) => Promise<void>>>;
  /** Unsubscribers of the task watchers started on this connection. */
  watchers: Set<() => void>;
  /** The questions of each task put to the client (one elicitation per key, whatever the number of waiters). */
  asking: Map<string, Asking>;
}

/**
 * The task front middleware. Put it outermost among the middlewares of a call that may become a
 * task (the job runs the rest of the chain, detached). One instance may serve many servers (it is
 * how a 2026 task created on one per-request server is polled on another).
 */
export function taskFront(options: TaskFrontOptions): Middleware {
  const engine = options.engine;
  const support =
    typeof options.taskSupport === 'function'
      ? options.taskSupport
      : (tool: string): TaskSupport =>
          Object.hasOwn(options.taskSupport, tool)
            ? (options.taskSupport as Record<string, TaskSupport>)[tool]!
            : 'forbidden';
  const askFirstOption = options.askFirst;
  const askFirst: (tool: string) => boolean =
    typeof askFirstOption === 'function'
      ? askFirstOption
      : askFirstOption === undefined
        ? () => false
        : (
            (set) => (tool: string) =>
              set.has(tool)
          )(new Set(askFirstOption));
  const ttlDefault = positive(options.ttlMs, 3_600_000, 'ttlMs');
  const ttlMax = positive(options.maxTtlMs, 86_400_000, 'maxTtlMs');
  const pollIntervalMs = positive(options.pollIntervalMs, 1_000, 'pollIntervalMs');
  const listLimit = positive(options.listLimit, 50, 'listLimit');
  const inputTimeoutMs = positive(options.inputTimeoutMs, 600_000, 'inputTimeoutMs');
  const reportError = (err: unknown) => {
    try {
      options.onError?.(err);
    } catch {
      /* never let reporting fail a task */
    }
  };
  const sessions = new WeakMap<ServerHost, Session>();
  const sessionOf = (host: ServerHost): Session => {
    let s = sessions.get(host);
    if (s === undefined) {
      s = { streams: new Map(), watchers: new Set(), asking: new Map() };
      sessions.set(host, s);
    }
    return s;
  };

  /**
   * The owner a `tasks/*` request maps to: the engine's owner rule applied to the request's
   * principal, session, era and connection (the fields that rule reads of a call).
   */
  const ownerOfInfo = (info: RequestInfo, host: ServerHost) => engine.ownerOf(requestOwnerSource(info, host));

  // ---- 2025-11-25: a message to the client about a task ----
  /** On the stream of an open `tasks/result` for the task when there is one, else on the connection's standalone stream. */
  const sendAbout = (host: ServerHost, taskId: string, n: { method: string; params: JsonObject }): void => {
    const stream = sessionOf(host).streams.get(taskId)?.at(-1);
    let sent: Promise<void>;
    if (stream !== undefined) sent = stream(n);
    else if (host.reachable?.() === false) return;
    else sent = host.notify(n);
    sent.catch(reportError);
  };

  /**
   * Follow a 2025 task after its CreateTaskResult: progress with the request's own token (strictly
   * increasing, related-task tagged) and `notifications/tasks/status` on each status change, until
   * the task is terminal or the connection closes.
   */
  const watch2025 = (ctx: CallContext, first: JobRecord): void => {
    const host = ctx.host;
    const session = sessionOf(host);
    const token = ctx.progressToken;
    let lastProgress = ctx.lastProgress?.progress ?? -Infinity;
    let lastStatus = status2025(first);
    let stop: (() => void) | undefined;
    let done = false;
    const onUpdate = (job: JobRecord) => {
      if (done) return;
      if (
        token !== undefined &&
        typeof job.progress === 'number' &&
        job.progress > lastProgress &&
        !terminal(job.status)
      ) {
        lastProgress = job.progress;
        const params: JsonObject = { progressToken: token, progress: job.progress, _meta: relatedMeta(job.id) };
        if (job.total !== undefined) params.total = job.total;
        if (job.statusMessage !== undefined) params.message = job.statusMessage;
        sendAbout(host, job.id, { method: 'notifications/progress', params });
      }
      const status = status2025(job);
      if (status !== lastStatus) {
        lastStatus = status;
        // The status notification carries the task itself; it SHOULD NOT carry related-task (the id is there).
        sendAbout(host, job.id, { method: 'notifications/tasks/status', params: task2025(job) });
      }
      if (terminal(job.status)) stop?.();
    };
    // The store's signals: every update of the record, whichever replica runs the job.
    let unsubscribe: (() => void) | undefined;
    stop = () => {
      done = true;
      unsubscribe?.();
      session.watchers.delete(stop!);
    };
    session.watchers.add(stop);
    engine
      .watch(first.id, engine.ownerOf(ctx), (signal) => {
        if (signal.type === 'update') onUpdate(signal.job);
      })
      .then(async (off) => {
        unsubscribe = off;
        if (done) return off?.();
        // Catch up with what changed between the start and the subscription (a fast job may be done).
        const now = await engine.get(first.id, engine.ownerOf(ctx));
        if (now !== undefined) onUpdate(now);
        else stop!(); // gone (expired)
      })
      .catch(reportError);
  };

  // ---- tools/call ----
  const handle = async (ctx: CallContext, next: Next): Promise<CallResult> => {
    const mode = support(ctx.name);
    if (ctx.era === 'legacy') {
      const task = ctx.task;
      if (task === undefined) {
        if (mode === 'required') {
          throw new ProtocolError(
            JsonRpcErrorCode.MethodNotFound,
            `Tool ${ctx.name} must be called as a task (execution.taskSupport "required"): add params.task`,
          );
        }
        return next();
      }
      if (mode === 'forbidden') {
        throw new ProtocolError(
          JsonRpcErrorCode.MethodNotFound,
          `Tool ${ctx.name} does not support task-augmented calls (execution.taskSupport "forbidden")`,
        );
      }
      const job = await startOrRefuse(ctx, next, 'task-2025', ttl2025(task.ttl));
      if (job === undefined) return busy(ctx);
      watch2025(ctx, job);
      return createTaskResult2025(job);
    }
    // 2026-07-28: the server decides; only for a request that declared the extension.
    if (!declaresTasksExtension(ctx.clientCapabilities)) {
      if (mode === 'required') throw missingTasksExtension(`tool ${ctx.name} (it runs only as a task)`);
      return next();
    }
    if (mode === 'forbidden') return next();
    // MRTR first: a round without answers yet runs inline; only a retry carrying answers becomes the task.
    if (askFirst(ctx.name) && (ctx.inputResponses === undefined || Object.keys(ctx.inputResponses).length === 0))
      return next();
    const job = await startOrRefuse(ctx, next, 'task-2026', ttlDefault);
    if (job === undefined) return busy(ctx);
    return createTaskResult2026(job);
  };

  /** Start the job; `undefined` when the owner already has the most live jobs allowed. */
  const startOrRefuse = async (
    ctx: CallContext,
    next: Next,
    mode: 'task-2025' | 'task-2026',
    ttlMs: number | null,
  ): Promise<JobRecord | undefined> => {
    try {
      return await engine.start(ctx, next, { mode, ttlMs, pollIntervalMs });
    } catch (err) {
      if (isJobLimit(err)) return undefined;
      throw err;
    }
  };
  /** The refusal the model reads when the owner has too many live tasks (a tool result, not a task). */
  const busy = (ctx: CallContext): CallResult =>
    refuse(
      ctx,
      ErrorCode.BUSY,
      'Too many of your tasks are running. Wait for one to finish or cancel one (tasks/cancel), then try again.',
    );

  const ttl2025 = (requested: unknown): number | null => {
    if (typeof requested === 'number' && Number.isFinite(requested) && requested > 0)
      return Math.min(Math.floor(requested), ttlMax);
    return ttlDefault;
  };

  // ---- tasks/* ----
  /** On 2026-07-28 every tasks/* request must declare the extension itself (-32021 otherwise). */
  const gate = (info: RequestInfo, method: string) => {
    if (info.era === 'modern' && !declaresTasksExtension(info.clientCapabilities)) throw missingTasksExtension(method);
  };

  const find = async (
    params: JsonObject,
    info: RequestInfo,
    host: ServerHost,
  ): Promise<{ id: string; owner: string; job: JobRecord }> => {
    const id = taskIdOf(params);
    const owner = ownerOfInfo(info, host);
    const job = await engine.get(id, owner);
    if (job === undefined) throw taskNotFound(id);
    return { id, owner, job };
  };

  const tasksGet =
    (host: ServerHost) =>
    async (params: JsonObject, info: RequestInfo): Promise<JsonObject> => {
      gate(info, 'tasks/get');
      const { job } = await find(params, info, host);
      return info.era === 'modern' ? detailedTask2026(job) : task2025(job);
    };

  const tasksCancel =
    (host: ServerHost) =>
    async (params: JsonObject, info: RequestInfo): Promise<JsonObject> => {
      gate(info, 'tasks/cancel');
      const { id, owner, job } = await find(params, info, host);
      if (info.era === 'modern') {
        // Cooperative and eventually consistent: an empty ack, also for a task already terminal.
        if (!terminal(job.status)) await engine.cancel(id, owner, 'task cancelled by the client (tasks/cancel)');
        return {};
      }
      const alreadyTerminal = (j: JobRecord) =>
        new ProtocolError(JsonRpcErrorCode.InvalidParams, `Cannot cancel task ${id}: it is already ${status2025(j)}`);
      if (terminal(job.status)) throw alreadyTerminal(job);
      const after = await engine.cancel(id, owner, 'task cancelled by the client (tasks/cancel)');
      if (after === undefined) throw taskNotFound(id);
      // It ended on its own before the cancel took effect: as for a task already terminal.
      if (terminal(after.status) && after.status !== 'cancelled') throw alreadyTerminal(after);
      if (!terminal(after.status)) {
        // The engine must settle a cancel at once; a task still running here would be a bug of the runner.
        throw new ProtocolError(
          JsonRpcErrorCode.InternalError,
          `Task ${id} could not be cancelled (still ${after.status})`,
        );
      }
      return task2025(after);
    };

  const tasksList =
    (host: ServerHost) =>
    async (params: JsonObject, info: RequestInfo): Promise<JsonObject> => {
      const owner = ownerOfInfo(info, host);
      const cursor = params.cursor;
      if (cursor !== undefined && typeof cursor !== 'string')
        throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'Invalid params: cursor must be a string');
      // Requestors that cannot be identified share one owner: listing it would show each the others' tasks.
      if (owner === ANONYMOUS_OWNER) return { tasks: [] };
      let page: { jobs: JobRecord[]; nextCursor?: string };
      try {
        page = await engine.list(owner, cursor === undefined ? { limit: listLimit } : { cursor, limit: listLimit });
      } catch {
        throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'Invalid params: unknown cursor');
      }
      const out: JsonObject = { tasks: page.jobs.filter((j) => j.mode === 'task-2025').map(task2025) };
      if (page.nextCursor !== undefined) out.nextCursor = page.nextCursor;
      return out;
    };

  /**
   * 2025 `tasks/result`: blocks until the task is terminal, then answers exactly what the call would
   * have: its result (with related-task `_meta`), or the same JSON-RPC error. While it waits, the
   * task's outstanding input requests go to the client on this request's stream (related-task
   * tagged) and the answers re-enter the handler.
   */
  const tasksResult =
    (host: ServerHost) =>
    async (params: JsonObject, info: RequestInfo): Promise<JsonObject> => {
      const { id, owner } = await find(params, info, host);
      const session = sessionOf(host);
      const streams = session.streams.get(id) ?? [];
      session.streams.set(id, streams);
      const notify = info.notify;
      if (notify !== undefined) streams.push(notify);
      try {
        for (;;) {
          const job = await engine.get(id, owner);
          withdrawStale(session, job, id);
          if (job === undefined) throw taskNotFound(id);
          if (terminal(job.status)) return finalOutcome(job);
          if (info.signal.aborted)
            throw new ProtocolError(JsonRpcErrorCode.InternalError, 'tasks/result was cancelled');
          if (job.status === 'input_required') askForInput(session, job, owner, info);
          // Store-driven (any replica); the bounded wait also covers a change between the read and the wait.
          await engine.wait(id, owner, { until: 'change', timeoutMs: RESULT_RECHECK_MS, signal: info.signal });
        }
      } finally {
        if (notify !== undefined) {
          const i = streams.lastIndexOf(notify);
          if (i >= 0) streams.splice(i, 1);
        }
        if (streams.length === 0 && session.streams.get(id) === streams) session.streams.delete(id);
      }
    };

  /** Put each outstanding input request of a 2025 task to the client, on the waiting `tasks/result`'s stream. */
  const askForInput = (session: Session, job: JobRecord, owner: string, info: RequestInfo): void => {
    const request = info.request;
    if (request === undefined) return;
    let asking = session.asking.get(job.id);
    if (asking === undefined) session.asking.set(job.id, (asking = { inflight: new Map(), answered: new Map() }));
    const a = asking;
    for (const [key, input] of Object.entries(job.inputRequests ?? {})) {
      if (a.inflight.has(key)) continue;
      // Answered already: asked again only once the runner has moved the record on (a new round).
      const answeredAt = a.answered.get(key);
      if (answeredAt !== undefined && job.updatedAt <= answeredAt) continue;
      const askedAt = job.updatedAt;
      const withdraw = new AbortController();
      a.inflight.set(key, withdraw);
      const p: JsonObject = { ...(input.params ?? {}) };
      p._meta = relatedMeta(job.id, p._meta);
      request(input.method, p, { timeout: inputTimeoutMs, signal: AbortSignal.any([info.signal, withdraw.signal]) })
        .then(async (answer) => {
          if (await engine.answer(job.id, owner, { [key]: answer })) a.answered.set(key, askedAt);
        })
        .catch((err: unknown) => {
          if (!withdraw.signal.aborted && !info.signal.aborted) reportError(err);
        })
        .finally(() => {
          if (a.inflight.get(key) === withdraw) a.inflight.delete(key);
        });
    }
  };

  /** Withdraw the questions a task no longer asks (answered elsewhere, cancelled, finished): the client gets `notifications/cancelled`. */
  const withdrawStale = (session: Session, job: JobRecord | undefined, id: string): void => {
    const a = session.asking.get(id);
    if (a === undefined) return;
    const open = job !== undefined && job.status === 'input_required' ? (job.inputRequests ?? {}) : {};
    for (const [key, withdraw] of a.inflight) {
      if (!Object.hasOwn(open, key)) {
        a.inflight.delete(key);
        withdraw.abort();
      }
    }
    if (job === undefined || terminal(job.status)) session.asking.delete(id);
  };

  /** What the original request would have returned, tied to the task. */
  const finalOutcome = (job: JobRecord): JsonObject => {
    if (job.status === 'completed') {
      const result = job.result ?? { content: [] };
      return { ...result, _meta: relatedMeta(job.id, result._meta) };
    }
    if (job.status === 'failed') {
      const e = job.error ?? { code: JsonRpcErrorCode.InternalError, message: job.statusMessage ?? 'Task failed' };
      const data = e.data === undefined ? { [RELATED]: { taskId: job.id } } : e.data;
      throw new ProtocolError(e.code, e.message, data);
    }
    throw new ProtocolError(
      JsonRpcErrorCode.InvalidRequest,
      `Task ${job.id} was cancelled${job.statusMessage ? `: ${job.statusMessage}` : ''}; it has no result`,
    );
  };

  /** 2026 `tasks/update`: answers to outstanding input requests; an empty ack, unknown or answered keys ignored. */
  const tasksUpdate =
    (host: ServerHost) =>
    async (params: JsonObject, info: RequestInfo): Promise<JsonObject> => {
      // The tasks extension's method; 2025-11-25 has none (its answers come through tasks/result's elicitations).
      if (info.era === 'legacy')
        throw new ProtocolError(
          JsonRpcErrorCode.MethodNotFound,
          'Method not found: tasks/update belongs to the 2026-07-28 tasks extension',
        );
      gate(info, 'tasks/update');
      const responses = params.inputResponses;
      const id = taskIdOf(params);
      if (typeof responses !== 'object' || responses === null || Array.isArray(responses)) {
        throw new ProtocolError(
          JsonRpcErrorCode.InvalidParams,
          'Invalid params: inputResponses must be an object of responses by input request key',
        );
      }
      const { owner } = await find(params, info, host);
      // The engine takes the answers to outstanding keys only (unknown and answered keys are ignored)
      // and refuses malformed ones with -32602; a task not waiting for input takes none.
      await engine.answer(id, owner, responses);
      return {};
    };

  return {
    name: 'tasks',
    // A task's handler reads its answers with mrtr's readInput() & co.: calls run in async context.
    asyncContext: true,
    setup(host: ServerHost) {
      // 2025-11-25 capability (SDK 1.x also refuses `params.task` calls without it); on SDK 2.x the
      // extension too: its 2026 codec drops `tasks` from server/discover, and under 2025-11-25 the
      // extension has no effect.
      host.registerCapabilities(
        host.sdk === 'v2'
          ? { tasks: TASKS_2025_CAPABILITY, extensions: { [TASKS_EXTENSION]: {} } }
          : { tasks: TASKS_2025_CAPABILITY },
      );
      host.handleRequest('tasks/get', tasksGet(host));
      host.handleRequest('tasks/cancel', tasksCancel(host));
      host.handleRequest('tasks/result', tasksResult(host));
      host.handleRequest('tasks/list', tasksList(host));
      host.handleRequest('tasks/update', tasksUpdate(host));
      // execution.taskSupport on the listed tools (2025-11-25; the 2026 codec strips `execution`).
      host.transformResult?.('tools/list', (result) => {
        const tools = result.tools;
        if (!Array.isArray(tools)) return result;
        return {
          ...result,
          tools: tools.map((tool: JsonObject) => {
            const mode = typeof tool?.name === 'string' ? support(tool.name) : 'forbidden';
            if (mode === 'forbidden') return tool;
            return { ...tool, execution: { ...((tool.execution as JsonObject | undefined) ?? {}), taskSupport: mode } };
          }),
        };
      });
      host.onClose(() => {
        const s = sessions.get(host);
        if (s === undefined) return;
        for (const stop of [...s.watchers]) stop();
      });
    },
    when: (ctx) => ctx.method === 'tools/call',
    handle,
    // Progress of a job becomes its status (the engine's tap); once the request was answered
    // (a task handle) nothing more may ride its stream.
    onEvent(ctx, event, next) {
      if (engine.tap(ctx, event)) return;
      return next(event);
    },
  };
}

const RELATED = 'io.modelcontextprotocol/related-task';
/** A waiting `tasks/result` re-reads the task at least this often, ms. */
const RESULT_RECHECK_MS = 500;

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0))
    throw new TypeError(`taskFront: ${name} must be a positive number of ms`);
  return value;
}
