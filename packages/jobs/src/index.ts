/**
 * @mcp-tether/jobs — work that outlives the MCP request: job handles polled with `jobs.status`,
 * MCP tasks (2025-11-25 and the 2026 tasks extension), partial output as a subscribable resource.
 * @packageDocumentation
 */
export { jobs, type JobsMiddleware, type JobsOptions } from './middleware.js';
export { handleResult, backoffMs } from './handle.js';
export { JobErrorCode, type ToolServer } from './tools.js';
export { parsePartialUri } from './ids.js';
export { JobEngine, type JobEngineOptions, type StartOptions } from './engine.js';
export { ANONYMOUS_OWNER, defaultOwner, isListableOwner, requestOwnerSource, type OwnerSource } from './owner.js';
export { newJobId, partialUriOf } from './ids.js';
export { JobExpired, PartialLimitError, type JobContext } from './context.js';
export type { WaitOptions } from './wait.js';
export {
  TERMINAL_STATUSES,
  RUNNER_LOST_MESSAGE,
  MAX_CHECKPOINT_BYTES,
  JobLimitError,
  allowedTransition,
  isJobLimit,
  isTerminal,
  perClientCap,
  quotaKeyOf,
} from './store.js';
export type {
  CreateLimits,
  JobError,
  JobHandle,
  JobMode,
  JobPatch,
  JobRecord,
  JobSignal,
  JobStatus,
  JobStore,
  NewJob,
  WriteOptions,
} from './store.js';
export { MemoryJobStore, type MemoryJobStoreOptions } from './memory.js';
export { DEFAULT_RETENTION, resolveRetention, type RetentionLimits } from './retention.js';
export { CURSOR_KEY_BYTES, CursorSeal } from './cursor.js';
export type {
  ExecutorCloseOptions,
  JobAttempt,
  JobCall,
  JobExecution,
  JobExecutor,
  JobOutcome,
  JobSubmission,
  JobWorkerHost,
} from './executor.js';
export * from './tasks/index.js';
