/**
 * The 2025-11-25 task front (experimental core tasks, spec `basic/utilities/tasks`): the request
 * carries `params.task`; the answer is the nested `CreateTaskResult`; `tasks/get|result|list|cancel`;
 * `notifications/tasks/status`; progress keeps flowing with the request's own token until the task
 * is terminal; every message related to the task carries `_meta["io.modelcontextprotocol/related-task"]`;
 * an `input_required` task's elicitations are delivered on the stream of a waiting `tasks/result`.
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  type CallContext,
  type CallResult,
  type JsonObject,
  type Next,
  type RequestInfo,
  type ServerHost,
} from '@mcp-tether/core';
import { isListableOwner } from '../owner.js';
import type { JobRecord } from '../store.js';
import type { TaskFrontCore, TaskSupport } from './shared.js';
import {
  RELATED_TASK_META_KEY,
  createTaskResult2025,
  relatedMeta,
  status2025,
  task2025,
  taskNotFound,
  terminal,
} from './wire.js';

/** The 2025-11-25 `tasks` server capability. */
export const TASKS_2025_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

/** A waiting `tasks/result` re-reads the task at least this often, ms. */
const RESULT_RECHECK_MS = 500;

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

/** The 2025-11-25 half of `taskFront`: calls with `params.task`, and `tasks/result|list|cancel`. */
export class LegacyTaskFront {
  private readonly sessions = new WeakMap<ServerHost, Session>();

  constructor(private readonly core: TaskFrontCore) {}

  /** A 2025-era `tools/call`: a task when it carries `params.task` (and the tool allows it), else inline. */
  async call(ctx: CallContext, next: Next, mode: TaskSupport): Promise<CallResult> {
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
    const job = await this.core.startOrRefuse(ctx, next, 'task-2025', this.ttl(task.ttl));
    if (typeof job === 'string') return this.core.busy(ctx, job);
    this.watch(ctx, job);
    return createTaskResult2025(job);
  }

  /** 2025 `tasks/cancel`: the cancelled task; `-32602` for a task already terminal. */
  async cancel(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const { id, owner, job } = await this.core.find(params, info, host);
    const alreadyTerminal = (j: JobRecord) =>
      new ProtocolError(JsonRpcErrorCode.InvalidParams, `Cannot cancel task ${id}: it is already ${status2025(j)}`);
    if (terminal(job.status)) throw alreadyTerminal(job);
    const after = await this.core.engine.cancel(id, owner, 'task cancelled by the client (tasks/cancel)');
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
  }

  /** 2025 `tasks/list`: the owner's 2025 tasks, newest first, paged; nothing for an owner that is not one client (see `isListableOwner`). */
  async list(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const owner = this.core.ownerOfInfo(info, host);
    const cursor = params.cursor;
    if (cursor !== undefined && typeof cursor !== 'string')
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'Invalid params: cursor must be a string');
    // Requestors that cannot be told apart (no principal: one address, or nothing) share one owner:
    // listing it would show each the others' tasks; each reaches its own by the unguessable id.
    if (!isListableOwner(owner)) return { tasks: [] };
    const limit = this.core.listLimit;
    let page: { jobs: JobRecord[]; nextCursor?: string };
    try {
      page = await this.core.engine.list(owner, cursor === undefined ? { limit } : { cursor, limit });
    } catch {
      throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'Invalid params: unknown cursor');
    }
    const out: JsonObject = { tasks: page.jobs.filter((j) => j.mode === 'task-2025').map(task2025) };
    if (page.nextCursor !== undefined) out.nextCursor = page.nextCursor;
    return out;
  }

  /**
   * 2025 `tasks/result`: blocks until the task is terminal, then answers exactly what the call would
   * have: its result (with related-task `_meta`), or the same JSON-RPC error. While it waits, the
   * task's outstanding input requests go to the client on this request's stream (related-task
   * tagged) and the answers re-enter the handler.
   */
  async result(host: ServerHost, params: JsonObject, info: RequestInfo): Promise<JsonObject> {
    const { engine } = this.core;
    const { id, owner } = await this.core.find(params, info, host);
    const session = this.sessionOf(host);
    const streams = session.streams.get(id) ?? [];
    session.streams.set(id, streams);
    const notify = info.notify;
    if (notify !== undefined) streams.push(notify);
    try {
      for (;;) {
        const job = await engine.get(id, owner);
        this.withdrawStale(session, job, id);
        if (job === undefined) throw taskNotFound(id);
        if (terminal(job.status)) return finalOutcome(job);
        if (info.signal.aborted) throw new ProtocolError(JsonRpcErrorCode.InternalError, 'tasks/result was cancelled');
        if (job.status === 'input_required') this.askForInput(session, job, owner, info);
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
  }

  /** The connection closed: stop following its tasks. */
  closeHost(host: ServerHost): void {
    const s = this.sessions.get(host);
    if (s === undefined) return;
    for (const stop of [...s.watchers]) stop();
  }

  private ttl(requested: unknown): number | null {
    if (typeof requested === 'number' && Number.isFinite(requested) && requested > 0)
      return Math.min(Math.floor(requested), this.core.ttlMax);
    return this.core.ttlDefault;
  }

  private sessionOf(host: ServerHost): Session {
    let s = this.sessions.get(host);
    if (s === undefined) {
      s = { streams: new Map(), watchers: new Set(), asking: new Map() };
      this.sessions.set(host, s);
    }
    return s;
  }

  /** A message to the client about a task: on the stream of an open `tasks/result` for it when there is one, else on the connection's standalone stream. */
  private sendAbout(host: ServerHost, taskId: string, n: { method: string; params: JsonObject }): void {
    const stream = this.sessionOf(host).streams.get(taskId)?.at(-1);
    let sent: Promise<void>;
    if (stream !== undefined) sent = stream(n);
    else if (host.reachable?.() === false) return;
    else sent = host.notify(n);
    sent.catch(this.core.reportError);
  }

  /**
   * Follow a 2025 task after its CreateTaskResult: progress with the request's own token (strictly
   * increasing, related-task tagged) and `notifications/tasks/status` on each status change, until
   * the task is terminal or the connection closes.
   */
  private watch(ctx: CallContext, first: JobRecord): void {
    const { engine } = this.core;
    const host = ctx.host;
    const session = this.sessionOf(host);
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
        this.sendAbout(host, job.id, { method: 'notifications/progress', params });
      }
      const status = status2025(job);
      if (status !== lastStatus) {
        lastStatus = status;
        // The status notification carries the task itself; it SHOULD NOT carry related-task (the id is there).
        this.sendAbout(host, job.id, { method: 'notifications/tasks/status', params: task2025(job) });
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
      .catch(this.core.reportError);
  }

  /** Put each outstanding input request of a 2025 task to the client, on the waiting `tasks/result`'s stream. */
  private askForInput(session: Session, job: JobRecord, owner: string, info: RequestInfo): void {
    const request = info.request;
    if (request === undefined) return;
    const { engine, inputTimeoutMs, reportError } = this.core;
    let asking = session.asking.get(job.id);
    if (asking === undefined) {
      asking = { inflight: new Map(), answered: new Map() };
      session.asking.set(job.id, asking);
    }
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
  }

  /** Withdraw the questions a task no longer asks (answered elsewhere, cancelled, finished): the client gets `notifications/cancelled`. */
  private withdrawStale(session: Session, job: JobRecord | undefined, id: string): void {
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
  }
}

/** What the original request would have returned, tied to the task. */
function finalOutcome(job: JobRecord): JsonObject {
  if (job.status === 'completed') {
    const result = job.result ?? { content: [] };
    return { ...result, _meta: relatedMeta(job.id, result._meta) };
  }
  if (job.status === 'failed') {
    const e = job.error ?? { code: JsonRpcErrorCode.InternalError, message: job.statusMessage ?? 'Task failed' };
    const data = e.data === undefined ? { [RELATED_TASK_META_KEY]: { taskId: job.id } } : e.data;
    throw new ProtocolError(e.code, e.message, data);
  }
  throw new ProtocolError(
    JsonRpcErrorCode.InvalidRequest,
    `Task ${job.id} was cancelled${job.statusMessage ? `: ${job.statusMessage}` : ''}; it has no result`,
  );
}
