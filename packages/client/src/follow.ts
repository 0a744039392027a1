/**
 * `follow(name, args)`: one call that returns the final tool result however the server answered:
 * inline, with a job handle (`@mcp-tether/jobs`), as a 2025-11-25 task or as a 2026-07-28 task
 * (tasks extension). Progress for the whole life of the work, partial output, questions, and a
 * cancel of the work on abort or when a limit ends the follow.
 */
import type { ProgressReport } from './errors.js';
import { Following } from './follower.js';
import { followJob, type InputRequest, type JobHandle, jobHandleOf, type JobStatus } from './jobs.js';
import { callForTask, followTask, type TaskInfo, taskOf } from './tasks.js';
import type { Caller, ToolResult } from './types.js';

/** Where the work stands, as `onStatus` gets it (the job handle or task, normalized). */
export interface FollowStatus {
  /** How the server runs it. */
  kind: 'job' | 'task-2025' | 'task-2026';
  /** `jobId` or `taskId`. */
  id: string;
  status: JobStatus;
  /** The handle's `message` or the task's `statusMessage`. */
  message?: string;
}

/** Options of `TetherClient.follow`. All durations in ms. */
export interface FollowOptions {
  /**
   * Timeout of each request (the call, each status poll), reset by progress; the work itself may
   * run longer, following continues. Default: the wrapper's `timeoutMs` (60 000).
   */
  timeout?: number;
  /** Progress-silence watchdog of each request. Default: the wrapper's `silenceMs` (30 000). */
  silenceMs?: number;
  /** Cap for the whole follow, from the call to the result; the work is cancelled when it passes. Default 3 600 000. */
  maxTotalMs?: number;
  /**
   * Progress of the work for its whole life: the call's own notifications, then the job's progress
   * (each status answer, and what a long-poll streams) or the 2025-11-25 task's notifications (sent
   * with the call's token). Strictly increasing `progress`; `total` and `message` as the server gave them.
   */
  onProgress?: (report: ProgressReport) => void;
  /** Partial output the job appended (its `job://{id}/partial` resource), read inside, in order. */
  onPartial?: (text: string) => void;
  /** Each status of a job or task (not called for an inline answer). */
  onStatus?: (status: FollowStatus) => void;
  /**
   * Answers a job's or a 2026 task's questions. Without it the client's own `elicitation/create`
   * handler answers (the one `connect({ onElicit })` or `setRequestHandler` set); with neither,
   * such work fails with a `JobError`. (2025-11-25 tasks deliver questions to that handler themselves.)
   */
  onInputRequest?: (requests: Record<string, InputRequest>) => Promise<Record<string, unknown>>;
  /** Abort: the request in flight is cancelled, and so is the work (`jobs.cancel` or `tasks/cancel`). */
  signal?: AbortSignal;
  /** More `params._meta` for each request. */
  meta?: Record<string, unknown>;
}

/** Tools the server runs as 2025-11-25 tasks when asked (`execution.taskSupport`), per wrapper. */
const TASK_TOOLS = new WeakMap<object, Promise<Map<string, string>>>();

/** Whether a `tools/call` of `name` may carry `params.task` (2025-11-25 server with task support for it). */
async function asks2025Task(tc: Caller, name: string, modern: boolean): Promise<boolean> {
  if (modern || !tc.client.getServerCapabilities?.()?.tasks?.requests?.tools?.call) return false;
  let tools = TASK_TOOLS.get(tc);
  if (!tools) {
    tools = (async () => {
      const found = new Map<string, string>();
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const r = await tc.request('tools/list', cursor === undefined ? {} : { cursor }, { timeoutMs: 30_000 });
        for (const t of (r.tools ?? []) as Array<{ name?: unknown; execution?: { taskSupport?: unknown } }>)
          if (typeof t.name === 'string' && typeof t.execution?.taskSupport === 'string')
            found.set(t.name, t.execution.taskSupport);
        cursor = typeof r.nextCursor === 'string' ? r.nextCursor : undefined;
        if (cursor === undefined) break;
      }
      return found;
    })();
    TASK_TOOLS.set(tc, tools);
    tools.catch(() => TASK_TOOLS.delete(tc));
  }
  const support = (await tools).get(name);
  return support === 'optional' || support === 'required';
}

/**
 * Call `name` and follow whatever the server answers to the final result.
 * @internal use `tc.follow`
 */
export async function follow(
  tc: Caller,
  modern: boolean,
  name: string,
  args: Record<string, unknown>,
  o: FollowOptions,
): Promise<ToolResult> {
  const following = new Following(
    { maxTotalMs: o.maxTotalMs, signal: o.signal, onProgress: o.onProgress },
    tc.defaults,
  );
  const timers = { timeoutMs: o.timeout, silenceMs: o.silenceMs, maxTotalMs: o.maxTotalMs };
  let result: Record<string, any>;
  let token: string | undefined;
  try {
    const task2025 = await asks2025Task(tc, name, modern);
    ({ result, token } = await callForTask(tc, name, args, {
      ...following.timers(timers),
      ...(o.meta && { meta: o.meta }),
      onProgress: (p) => following.progress(p),
      ...(task2025 && { params: { task: {} } }),
    }));
  } catch (error) {
    following.close();
    throw error;
  }
  const common = { ...timers, ...(o.meta && { meta: o.meta }) };
  const task = taskOf(result);
  if (task) {
    const kind = task.era === '2026' ? 'task-2026' : 'task-2025';
    return followTask(
      tc,
      task,
      token,
      {
        ...common,
        ...(o.onStatus && {
          onStatus: (t: TaskInfo) => o.onStatus!(statusOf(kind, t.taskId, t.status, t.statusMessage)),
        }),
        ...(o.onInputRequest && { onInputRequest: (requests) => o.onInputRequest!(requests) }),
      },
      following,
    );
  }
  const handle = jobHandleOf(result);
  if (handle) {
    return followJob(
      tc,
      handle,
      {
        ...common,
        longPoll: true,
        partial: 'subscribe',
        ...(o.onPartial && { onPartial: (text: string) => o.onPartial!(text) }),
        ...(o.onStatus && { onStatus: (h: JobHandle) => o.onStatus!(statusOf('job', h.jobId, h.status, h.message)) }),
        ...(o.onInputRequest && { onInputRequest: (requests) => o.onInputRequest!(requests) }),
      },
      following,
    );
  }
  following.close();
  return result as ToolResult;
}

function statusOf(
  kind: FollowStatus['kind'],
  id: string,
  status: JobStatus,
  message: string | undefined,
): FollowStatus {
  return { kind, id, status, ...(message !== undefined && { message }) };
}
