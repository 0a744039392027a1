/**
 * Following MCP tasks: 2025-11-25 (experimental core tasks: `params.task`, nested
 * `CreateTaskResult`, `tasks/get` / `tasks/result` / `tasks/cancel`) and the 2026-07-28 tasks
 * extension `io.modelcontextprotocol/tasks` (flat `resultType: "task"`, `tasks/get` with the
 * result inside, `tasks/update`, `tasks/cancel`). Spec: mcp-wire §8.
 */
import { CallAbortedError, JobError, reasonText } from './errors.js';
import type { InputRequest, JobOptions, JobStatus } from './jobs.js';
import { pollDelay, wait } from './poll.js';
import type { Caller, ToolResult } from './types.js';

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

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function taskOf(result: Record<string, any>): TaskInfo | undefined {
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
 * Call a tool as a task and follow it to the end (see `TetherClient.callTask`).
 * @internal use `tc.callTask`
 */
export async function callTask(
  tc: Caller,
  name: string,
  args: Record<string, unknown>,
  options: TaskOptions = {},
): Promise<ToolResult> {
  const { signal, onStatus, onInputRequest } = options;
  const maxPollMs = options.maxPollMs ?? 15_000;
  const minPollMs = options.minPollMs ?? 250;
  const timers = {
    silenceMs: options.silenceMs,
    timeoutMs: options.timeoutMs,
    maxTotalMs: options.maxTotalMs,
    resetTimeoutOnProgress: options.resetTimeoutOnProgress,
  };
  const startedAt = Date.now();
  // 2025-11-25: ask for a task with params.task; 2026: the extension is declared in the client's capabilities, the server decides.
  const tapped = tc.sdk === 'v2' ? taskTap(tc.client) : undefined;
  let token: string | undefined;
  const first = await tc
    .request(
      'tools/call',
      { name, arguments: args },
      {
        ...options,
        params: { ...options.params, task: options.ttlMs === undefined ? {} : { ttl: options.ttlMs } },
        onToken: (t) => (token = t),
      },
    )
    .catch((error: { code?: unknown; data?: { resultType?: unknown } }) => {
      const raw = token === undefined ? undefined : tapped?.get(token);
      if (raw && error?.code === 'UNSUPPORTED_RESULT_TYPE' && error.data?.resultType === 'task') return raw;
      throw error;
    })
    .finally(() => token !== undefined && tapped?.delete(token));
  let task = taskOf(first);
  if (!task) return first as ToolResult; // the server ran it as a plain call
  const taskId = task.taskId;
  const answered = new Set<string>();
  let attempt = 0;
  try {
    for (;;) {
      onStatus?.(task);
      if (task.era === '2025-11-25' && (TERMINAL.has(task.status) || task.status === 'input_required')) {
        if (task.status === 'cancelled')
          throw new JobError(
            `task ${taskId} was cancelled${task.statusMessage ? `: ${task.statusMessage}` : ''}`,
            taskId,
            'cancelled',
          );
        // tasks/result blocks until the task is terminal and carries its elicitations on its own
        // stream (answered by the client's elicitation handler): no silence watchdog while a person answers.
        return (await tc.request(
          'tasks/result',
          { taskId },
          { signal, silenceMs: 0, timeoutMs: 0, maxTotalMs: options.maxTotalMs },
        )) as ToolResult;
      }
      if (task.era === '2026') {
        const detailed = task as TaskInfo & {
          result?: ToolResult;
          error?: { code: number; message: string; data?: unknown };
          inputRequests?: Record<string, InputRequest>;
        };
        if (detailed.status === 'completed') return detailed.result ?? { content: [] };
        if (detailed.status === 'failed')
          throw new JobError(
            `task ${taskId} failed: ${detailed.error?.message ?? detailed.statusMessage ?? 'no reason given'}`,
            taskId,
            'failed',
            detailed.error,
          );
        if (detailed.status === 'cancelled')
          throw new JobError(
            `task ${taskId} was cancelled${detailed.statusMessage ? `: ${detailed.statusMessage}` : ''}`,
            taskId,
            'cancelled',
          );
        if (detailed.status === 'input_required') {
          const open = Object.fromEntries(
            Object.entries(detailed.inputRequests ?? {}).filter(([k]) => !answered.has(k)),
          );
          if (Object.keys(open).length) {
            if (!onInputRequest)
              throw new JobError(
                `task ${taskId} needs input (${Object.keys(open).join(', ')}) and no onInputRequest was given`,
                taskId,
                'input_required',
              );
            const inputResponses = await onInputRequest(open, {
              jobId: taskId,
              status: 'input_required',
              pollAfterMs: task.pollIntervalMs ?? 0,
            });
            for (const k of Object.keys(inputResponses)) answered.add(k);
            await tc.request('tasks/update', { taskId, inputResponses }, { ...timers, signal });
            attempt = 0;
          }
        }
      }
      await wait(pollDelay(task.pollIntervalMs, attempt++, minPollMs, maxPollMs), signal);
      const got = await tc.request('tasks/get', { taskId }, { ...timers, signal });
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
    if (signal?.aborted) {
      await tc.request('tasks/cancel', { taskId }, { timeoutMs: 10_000, silenceMs: 10_000 }).catch(() => undefined);
      throw new CallAbortedError(
        `task ${taskId}: cancelled (${reasonText(signal.reason)}); tasks/cancel sent`,
        'cancelled',
        taskId,
        Date.now() - startedAt,
        undefined,
        { cause: error },
      );
    }
    throw error;
  }
}
