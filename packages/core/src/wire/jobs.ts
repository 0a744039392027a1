/**
 * The wire shapes of work that outlives a request, written by `@mcp-tether/jobs` (the server) and
 * read by `@mcp-tether/client`: one definition both import. Types and constants only.
 *
 * - MCP task status (2025-11-25 `Task.status`; the 2026-07-28 tasks extension spells it the same).
 * - The job handle of `@mcp-tether/jobs`'s handle mode: `structuredContent` of a tool result that
 *   did not finish inline and of every `jobs.status` answer.
 * - The names of the job tools, the tasks extension, and the `_meta` keys the two sides share.
 */
import type { InputRequest, JsonObject } from '../types.js';

/** MCP `TaskStatus` (2025-11-25 and the 2026 tasks extension spell it the same); job handles share it. */
export type JobStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Every {@link JobStatus}, in the order a job may pass through them. */
export const JOB_STATUSES: readonly JobStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** Statuses that never change again. */
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['completed', 'failed', 'cancelled'];

/** True for `completed`, `failed`, `cancelled`. */
export function isTerminalJobStatus(status: JobStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** The tool a model polls a job handle with: `jobs.status { jobId, waitMs?, inputResponses? }`. */
export const JOB_STATUS_TOOL = 'jobs.status';
/** The tool a model stops a job with: `jobs.cancel { jobId }`. */
export const JOB_CANCEL_TOOL = 'jobs.cancel';

/** A JSON-RPC error object (a job that failed with a protocol fault, not an `isError` result). */
export interface JobError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * The job handle a non-task client receives (`structuredContent` of the handle result and of every
 * `jobs.status` answer). `@mcp-tether/client` follows it.
 */
export interface JobHandle {
  jobId: string;
  status: JobStatus;
  progress?: number;
  total?: number;
  message?: string;
  /** Ask again after this many ms: 1 000 → 2 000 → 4 000 …, at most 15 000; `0` once not `working`. */
  pollAfterMs: number;
  /** When `status` is `completed`: the tool's result. */
  result?: JsonObject;
  /** When `status` is `failed` by a JSON-RPC error. */
  error?: JobError;
  /** When `status` is `input_required`: the questions; answer with `jobs.status { jobId, inputResponses }`. */
  inputRequests?: Record<string, InputRequest>;
  /** URI of the partial-output resource, when the job publishes any (`job://{jobId}/partial`). */
  partialUri?: string;
}

/** The 2026-07-28 tasks extension's identifier (capability key, reserved name). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** `_meta` key that ties a 2025-11-25 message to its task. */
export const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';
/** `_meta` key of a `tools/call` request: an idempotency key (a repeated start returns the existing job). */
export const IDEMPOTENCY_KEY_META = 'io.github.mcp-tether/idempotencyKey';
/**
 * `_meta` key of a partial-output read (`resources/read` of `job://{jobId}/partial[?offset=N]`):
 * {@link PartialMeta}.
 */
export const PARTIAL_META_KEY = 'io.github.mcp-tether/partial';

/** What a partial-output read carries under {@link PARTIAL_META_KEY}. */
export interface PartialMeta {
  /** The chunk offset this read started at. */
  offset: number;
  /** The chunk offset to read from next. */
  next: number;
  /** The URI that reads from `next` on. */
  nextUri: string;
  status: JobStatus;
  /** The job is terminal: no more output will come. */
  done: boolean;
}
