/**
 * Following MCP tasks: 2025-11-25 (experimental core tasks: `params.task`, nested
 * `CreateTaskResult`, `tasks/get` / `tasks/result` / `tasks/cancel`) and the 2026-07-28 tasks
 * extension `io.modelcontextprotocol/tasks` (flat `resultType: "task"`, `tasks/get` with the
 * result inside, `tasks/update`, `tasks/cancel`). Spec: mcp-wire §8.
 */
import { isTerminalJobStatus } from '@mcp-tether/core';
import { isCallAborted, JobError } from './errors.js';
import { CANCEL_TIMERS, Following } from './follower.js';
import type { InputRequest, JobOptions, JobStatus } from './jobs.js';
import { pollDelay, wait } from './poll.js';
import type { Caller, CallToolOptions, ToolResult } from './types.js';

/** A task as the helpers surface it (both eras, normalized to ms field names). */
export interface TaskInfo {
  taskId: string;
  status: JobStatus;
  statusMessage?: string;
  /** Suggested poll interval, ms (`pollInterval` in 2025-11-25, `pollIntervalMs` in 2026). */
  pollIntervalMs?: number;
  /** Time to live, ms, `null` = unlimited. */
  ttlMs?: number | null;
  /** Which task protocol the server used. */
  era: '2025-11-25' | '2026';
}

/** Options of `TetherClient.callTask`. */
export interface TaskOptions
  extends Omit<JobOptions, 'onStatus' | 'onPartial' | 'partial' | 'statusTool' | 'cancelTool'> {
  /** Each status seen (the created task, then every `tasks/get`). */
  onStatus?: (task: TaskInfo) => void;
  /** Requested time to live, ms (2025-11-25 `params.task.ttl`; the 2026 extension lets the server decide). */
  ttlMs?: number;
}

export function taskOf(result: Record<string, any>): TaskInfo | undefined {
  if (result?.resultType === 'task' && typeof result.taskId === 'string') {
    return {
      taskId: result.taskId,
      status: result.status,
      statusMessage: result.statusMessage,
      pollIntervalMs: result.pollIntervalMs,
      ttlMs: result.ttlMs,
      era: '2026',
    };
  }
  const t = result?.task;
  if (t && typeof t === 'object' && typeof t.taskId === 'string' && !Array.isArray(result.content)) {
    return {
      taskId: t.taskId,
      status: t.status,
      statusMessage: t.statusMessage,
      pollIntervalMs: t.pollInterval,
      ttlMs: t.ttl,
      era: '2025-11-25',
    };
  }
  return undefined;
}

/** Raw `tools/call` results with `resultType: "task"`, by our progress token (SDK 2.x refuses them; see {@link taskTap}). */
const TAPPED = new WeakMap<object, { byToken: Map<unknown, Record<string, any>> }>();

/**
 * SDK 2.x (2.4.0) refuses a result whose `resultType` is not `complete` or `input_required`
 * (`UNSUPPORTED_RESULT_TYPE`), so a 2026 `CreateTaskResult` never reaches the caller of
 * `client.request`. We watch the transport instead: the request id of each outgoing `tools/call`
 * that carries our progress token, and the raw task result answering it; the SDK's refusal is then
 * replaced by that result.
 */
function taskTap(client: any): Map<unknown, Record<string, any>> | undefined {
  const transport = client?.transport;
  if (!transport || typeof transport.send !== 'function') return undefined;
  let tap = TAPPED.get(transport);
  if (tap) return tap.byToken;
  tap = { byToken: new Map() };
  const tokens = new Map<unknown, unknown>(); // request id → our token
  const byToken = tap.byToken;
  const send = transport.send.bind(transport);
  transport.send = (message: any, options?: unknown) => {
    const token = message?.params?._meta?.progressToken;
    if (
      message?.method === 'tools/call' &&
      message.id !== undefined &&
      typeof token === 'string' &&
      token.startsWith('tether-')
    )
      tokens.set(message.id, token);
    return send(message, options);
  };
  const onmessage = transport.onmessage;
  transport.onmessage = (message: any, extra?: unknown) => {
    if (message && message.id !== undefined && tokens.has(message.id)) {
      if (message.result?.resultType === 'task') byToken.set(tokens.get(message.id), message.result);
      tokens.delete(message.id);
    }
    return onmessage?.call(transport, message, extra);
  };
  TAPPED.set(transport, tap);
  return byToken;
}

/**
 * `tools/call` through the wrapper, returning the raw answer whatever it is: a result, a
 * 2025-11-25 `CreateTaskResult`, or a 2026 `CreateTaskResult` (recovered from the transport on
 * SDK 2.x, see {@link taskTap}); and the progress token the call used.
 */
export async function callForTask(
  tc: Caller,
  name: string,
  args: Record<string, unknown>,
  options: CallToolOptions,
): Promise<{ result: Record<string, any>; token: string | undefined }> {
  const tapped = tc.sdk === 'v2' ? taskTap(tc.client) : undefined;
  let token: string | undefined;
  const result = await tc
    .request(
      'tools/call',
      { name, arguments: args },
      {
        ...options,
        onToken: (t) => {
          token = t;
          options.onToken?.(t);
        },
      },
    )
    .catch((error: { code?: unknown; data?: { resultType?: unknown } }) => {
      const raw = token === undefined ? undefined : tapped?.get(token);
      if (raw && error?.code === 'UNSUPPORTED_RESULT_TYPE' && error.data?.resultType === 'task') return raw;
      throw error;
    })
    .finally(() => token !== undefined && tapped?.delete(token));
  return { result, token };
}

/** Waits `ms`, or less when `wake` is called (a `notifications/tasks/status` for the task). */
function waitOrWake(ms: number, signal: AbortSignal, wakeUp: { wake?: () => void }): Promise<void> {
  const woken = new Promise<void>((resolve) => {
    wakeUp.wake = resolve;
  });
  const ac = new AbortController();
  const onAbort = () => ac.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return Promise.race([wait(ms, ac.signal), woken.then(() => signal.throwIfAborted())]).finally(() => {
    signal.removeEventListener('abort', onAbort);
    ac.abort();
    wakeUp.wake = undefined;
  });
}

/**
 * Call a tool as a task and follow it to the end (see `TetherClient.callTask`).
 * @internal use `tc.callTask`
 */
export async function callTask(
  tc: Caller,
  name: string,
  args: Record<string, unknown>,
  options: TaskOptions = {},
): Promise<ToolResult> {
  const following = new Following(options, tc.defaults);
  let first: { result: Record<string, any>; token: string | undefined };
  try {
    // 2025-11-25: ask for a task with params.task; 2026: the extension is declared in the client's capabilities, the server decides.
    first = await callForTask(tc, name, args, {
      ...options,
      ...following.timers(options),
      onProgress: (p) => following.progress(p),
      params: { ...options.params, task: options.ttlMs === undefined ? {} : { ttl: options.ttlMs } },
    });
  } catch (error) {
    following.close();
    throw error;
  }
  const task = taskOf(first.result);
  if (!task) {
    following.close();
    return first.result as ToolResult; // the server ran it as a plain call
  }
  return followTask(tc, task, first.token, options, following);
}

type Detailed = TaskInfo & {
  result?: ToolResult;
  error?: { code: number; message: string; data?: unknown };
  inputRequests?: Record<string, InputRequest>;
};

/**
 * Follow a created task to its end: `tasks/get` at the task's poll interval (woken early by a
 * 2025-11-25 `notifications/tasks/status`), progress with the creating call's token (2025-11-25),
 * questions (2026: `tasks/update`; 2025: delivered on `tasks/result` to the client's handler),
 * `tasks/cancel` for a follow that ends for any reason but the task's own end.
 */
export async function followTask(
  tc: Caller,
  created: TaskInfo,
  token: string | undefined,
  options: TaskOptions,
  following: Following,
): Promise<ToolResult> {
  const { onStatus } = options;
  const maxPollMs = options.maxPollMs ?? 15_000;
  const minPollMs = options.minPollMs ?? 250;
  const signal = following.signal;
  const taskId = created.taskId;
  const answered = new Set<string>();
  const wakeUp: { wake?: () => void } = {};
  const stops = [
    token === undefined ? undefined : tc.followProgress(token, (p) => following.progress(p)),
    tc.onTaskStatus(taskId, () => wakeUp.wake?.()),
  ];
  const ended = { over: false };
  let task = created;
  let attempt = 0;
  try {
    for (;;) {
      onStatus?.(task);
      if (task.era === '2025-11-25' && (isTerminalJobStatus(task.status) || task.status === 'input_required'))
        return await result2025(tc, task, following, ended);
      if (task.era === '2026') {
        const result = end2026(task as Detailed);
        if (result) return result;
        if (await answer2026(tc, task as Detailed, answered, options, following)) attempt = 0;
      }
      const delay = pollDelay(task.pollIntervalMs, attempt++, minPollMs, maxPollMs);
      await waitOrWake(Math.min(delay, following.remaining()), signal, wakeUp);
      signal.throwIfAborted();
      const got = await tc.request('tasks/get', { taskId }, following.requestOptions(options));
      task = {
        ...got,
        taskId,
        status: got.status,
        statusMessage: got.statusMessage,
        pollIntervalMs: got.pollIntervalMs ?? got.pollInterval,
        ttlMs: got.ttlMs ?? got.ttl,
        era: task.era,
      } as TaskInfo;
    }
  } catch (error) {
    if (ended.over) throw error;
    return await following.giveUp(error, `task ${taskId}`, 'tasks/cancel', () =>
      tc.request('tasks/cancel', { taskId }, CANCEL_TIMERS),
    );
  } finally {
    for (const stop of stops) stop?.();
    following.close();
  }
}

/**
 * A 2025-11-25 task that is terminal or needs input: `tasks/result`, which blocks until the task is
 * terminal and carries its elicitations on its own stream (answered by the client's elicitation
 * handler): no silence watchdog while a person answers. The task's own JSON-RPC error there means
 * it is over (`ended.over`: no `tasks/cancel`).
 * @throws {JobError} the task was cancelled
 */
async function result2025(
  tc: Caller,
  task: TaskInfo,
  following: Following,
  ended: { over: boolean },
): Promise<ToolResult> {
  const taskId = task.taskId;
  if (task.status === 'cancelled')
    throw new JobError(
      `task ${taskId} was cancelled${task.statusMessage ? `: ${task.statusMessage}` : ''}`,
      taskId,
      'cancelled',
    );
  const { maxTotalMs, signal: s } = following.timers({});
  return (await tc
    .request('tasks/result', { taskId }, { signal: s, silenceMs: 0, timeoutMs: 0, maxTotalMs })
    .catch((error) => {
      // The task's own JSON-RPC error (tasks/result returns what the call would have): it is over.
      if (!isCallAborted(error)) ended.over = true;
      throw error;
    })) as ToolResult;
}

/**
 * A 2026 task's result when it `completed` (carried by `tasks/get`), `undefined` while it goes on.
 * @throws {JobError} it `failed` or was `cancelled`
 */
function end2026(task: Detailed): ToolResult | undefined {
  const taskId = task.taskId;
  if (task.status === 'completed') return task.result ?? { content: [] };
  if (task.status === 'failed')
    throw new JobError(
      `task ${taskId} failed: ${task.error?.message ?? task.statusMessage ?? 'no reason given'}`,
      taskId,
      'failed',
      task.error,
    );
  if (task.status === 'cancelled')
    throw new JobError(
      `task ${taskId} was cancelled${task.statusMessage ? `: ${task.statusMessage}` : ''}`,
      taskId,
      'cancelled',
    );
  return undefined;
}

/**
 * A 2026 task that is `input_required`: answer the questions not answered yet (`onInputRequest`,
 * else the client's own handlers) with `tasks/update`. True when it sent answers.
 * @throws {JobError} nobody can answer
 */
async function answer2026(
  tc: Caller,
  task: Detailed,
  answered: Set<string>,
  options: TaskOptions,
  following: Following,
): Promise<boolean> {
  if (task.status !== 'input_required') return false;
  const taskId = task.taskId;
  const open = Object.fromEntries(Object.entries(task.inputRequests ?? {}).filter(([k]) => !answered.has(k)));
  if (!Object.keys(open).length) return false;
  const handle = { jobId: taskId, status: 'input_required' as const, pollAfterMs: task.pollIntervalMs ?? 0 };
  const inputResponses = options.onInputRequest
    ? await options.onInputRequest(open, handle)
    : await tc.answerInputRequests(open, following.signal);
  if (!inputResponses)
    throw new JobError(
      `task ${taskId} needs input (${Object.keys(open).join(', ')}) and no onInputRequest was given (nor an elicitation handler on the client)`,
      taskId,
      'input_required',
    );
  for (const k of Object.keys(inputResponses)) answered.add(k);
  await tc.request('tasks/update', { taskId, inputResponses }, following.requestOptions(options));
  return true;
}
