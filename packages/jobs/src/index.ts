/**
 * @mcp-tether/jobs — work that outlives the MCP request: job handles polled with `jobs.status`,
 * MCP tasks (2025-11-25 and the 2026 tasks extension), partial output as a subscribable resource.
 * @packageDocumentation
 */
export {
  jobs,
  handleResult,
  backoffMs,
  parsePartialUri,
  JobErrorCode,
  type JobsMiddleware,
  type JobsOptions,
  type ToolServer,
} from './middleware.js';
export {
  JobEngine,
  JobExpired,
  ANONYMOUS_OWNER,
  defaultOwner,
  requestOwnerSource,
  newJobId,
  partialUriOf,
  type JobContext,
  type JobEngineOptions,
  type OwnerSource,
  type StartOptions,
  type WaitOptions,
} from './engine.js';
export { TERMINAL_STATUSES, JobLimitError, isJobLimit } from './store.js';
export type {
  JobError,
  JobHandle,
  JobMode,
  JobPatch,
  JobRecord,
  JobSignal,
  JobStatus,
  JobStore,
  NewJob,
} from './store.js';
export {
  MemoryJobStore,
  RUNNER_LOST_MESSAGE,
  isTerminal,
  allowedTransition,
  type MemoryJobStoreOptions,
} from './memory.js';
export * from './tasks/index.js';
