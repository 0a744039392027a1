/**
 * Wire shapes of MCP tasks, from a {@link JobRecord}, for both task fronts:
 * - 2025-11-25 experimental tasks (spec `basic/utilities/tasks`): `Task` with `ttl`/`pollInterval`,
 *   nested `CreateTaskResult` (`{ task }`), `io.modelcontextprotocol/related-task` metadata;
 * - 2026-07-28 tasks extension `io.modelcontextprotocol/tasks` (`ext-tasks` `schema/draft/schema.ts`):
 *   flat `CreateTaskResult` (`resultType: "task"`), `DetailedTask` with `ttlMs`/`pollIntervalMs`.
 */
import {
  JsonRpcErrorCode,
  ProtocolError,
  RELATED_TASK_META_KEY,
  TASKS_EXTENSION,
  type JsonObject,
} from '@mcp-tether/core';
import { isTerminal, type JobRecord, type JobStatus } from '../store.js';

/** The wire names are core's (one definition with `@mcp-tether/client`). */
export { RELATED_TASK_META_KEY, TASKS_EXTENSION } from '@mcp-tether/core';
/** MissingRequiredClientCapability (2026-07-28). */
export const MISSING_REQUIRED_CLIENT_CAPABILITY = -32021;

/** True for `completed`, `failed`, `cancelled` (the store contract's {@link isTerminal}). */
export const terminal: (status: JobStatus) => boolean = isTerminal;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * The 2025-11-25 status of a job. In that revision a tool call that returned `isError: true` puts
 * the task in `failed` (its `tasks/result` still returns that result); the store keeps such jobs
 * `completed`, as the 2026 extension wants.
 */
export function status2025(job: JobRecord): JobStatus {
  if (job.status === 'completed' && job.result?.isError === true) return 'failed';
  return job.status;
}

/** 2025-11-25 `Task`. */
export function task2025(job: JobRecord): JsonObject {
  const task: JsonObject = {
    taskId: job.id,
    status: status2025(job),
    createdAt: iso(job.createdAt),
    lastUpdatedAt: iso(job.updatedAt),
    ttl: job.ttlMs,
  };
  if (job.statusMessage !== undefined) task.statusMessage = job.statusMessage;
  if (job.pollIntervalMs !== undefined) task.pollInterval = job.pollIntervalMs;
  return task;
}

/** `_meta` tying a message to a 2025-11-25 task, merged into `meta`. */
export function relatedMeta(taskId: string, meta?: unknown): JsonObject {
  const base = typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as JsonObject) : {};
  return { ...base, [RELATED_TASK_META_KEY]: { taskId } };
}

/** 2025-11-25 `CreateTaskResult`: `{ task }`, tied to the task by `_meta` (every task response carries it). */
export function createTaskResult2025(job: JobRecord): JsonObject {
  return { task: task2025(job), _meta: relatedMeta(job.id) };
}

/** 2026 tasks extension `Task` (the fields every variant shares). */
export function task2026(job: JobRecord): JsonObject {
  const task: JsonObject = {
    taskId: job.id,
    status: job.status,
    createdAt: iso(job.createdAt),
    lastUpdatedAt: iso(job.updatedAt),
    ttlMs: job.ttlMs,
  };
  if (job.statusMessage !== undefined) task.statusMessage = job.statusMessage;
  if (job.pollIntervalMs !== undefined) task.pollIntervalMs = job.pollIntervalMs;
  return task;
}

/** 2026 flat `CreateTaskResult` (`resultType: "task"`). */
export function createTaskResult2026(job: JobRecord): JsonObject {
  return { resultType: 'task', ...task2026(job) };
}

/**
 * 2026 `DetailedTask` for `tasks/get`: `input_required` carries every outstanding `inputRequests`,
 * `completed` the original result (`isError` results included), `failed` the JSON-RPC error.
 */
export function detailedTask2026(job: JobRecord): JsonObject {
  const task = task2026(job);
  if (job.status === 'input_required') task.inputRequests = { ...(job.inputRequests ?? {}) };
  else if (job.status === 'completed') task.result = job.result ?? { content: [] };
  else if (job.status === 'failed')
    task.error = job.error ?? { code: JsonRpcErrorCode.InternalError, message: job.statusMessage ?? 'Task failed' };
  return task;
}

/** The `-32602` a task id nobody (visible to the caller) owns gets: unknown, expired and foreign ids alike. */
export function taskNotFound(taskId: unknown): ProtocolError {
  const shown =
    typeof taskId === 'string'
      ? JSON.stringify(taskId.length > 80 ? `${taskId.slice(0, 80)}…` : taskId)
      : String(taskId);
  return new ProtocolError(JsonRpcErrorCode.InvalidParams, `Failed to retrieve task: Task not found (${shown})`);
}

/** The `taskId` of a `tasks/*` request, or a `-32602` for a missing or malformed one. */
export function taskIdOf(params: JsonObject): string {
  const id = params.taskId;
  if (typeof id !== 'string' || id.length === 0)
    throw new ProtocolError(JsonRpcErrorCode.InvalidParams, 'Invalid params: taskId must be a non-empty string');
  return id;
}

/** `-32021` for a 2026 client that did not declare the tasks extension on this request. */
export function missingTasksExtension(what: string): ProtocolError {
  return new ProtocolError(
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    `Missing required client capability: ${what} needs the ${TASKS_EXTENSION} extension declared in this request's _meta clientCapabilities`,
    {
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    },
  );
}

/** Whether a 2026 request's client capabilities declare the tasks extension. */
export function declaresTasksExtension(capabilities: JsonObject | undefined): boolean {
  const ext = (capabilities?.extensions as JsonObject | undefined)?.[TASKS_EXTENSION];
  return typeof ext === 'object' && ext !== null && !Array.isArray(ext);
}
