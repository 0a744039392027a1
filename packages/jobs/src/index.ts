/**
 * @mcp-tether/jobs — work that outlives the MCP request: job handles polled with `jobs.status`,
 * MCP tasks (2025-11-25 and the 2026 tasks extension), partial output as a subscribable resource.
 * @packageDocumentation
 */
export { TERMINAL_STATUSES, JobLimitError, isJobLimit } from './store.js';
export type { JobError, JobHandle, JobMode, JobPatch, JobRecord, JobSignal, JobStatus, JobStore, NewJob } from './store.js';
export { MemoryJobStore, RUNNER_LOST_MESSAGE, isTerminal, allowedTransition, type MemoryJobStoreOptions } from './memory.js';
