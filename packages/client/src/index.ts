/**
 * @mcp-tether/client — the client half of tether. Wraps an SDK `Client` of either line
 * (`@modelcontextprotocol/sdk` 1.x, `@modelcontextprotocol/client` 2.x), never forks it:
 * progress per call that never loses the final notification, timeouts that reset on progress,
 * a progress-silence watchdog, a total cap, `notifications/cancelled` on every abort, job handles
 * and tasks followed with backoff, and logs to a sink instead of results.
 */
export { tetherClient, type TetherClient } from './client.js';
export type {
  TetherClientOptions,
  CallToolOptions,
  CallTimers,
  LogEntry,
  ToolResult,
  SdkClient,
  Caller,
} from './types.js';
export { CallAbortedError, isCallAborted, JobError, type CallAbortKind, type ProgressReport } from './errors.js';
export { followJob, jobHandleOf, type JobHandle, type JobOptions, type JobStatus, type InputRequest } from './jobs.js';
export { backoffMs } from './poll.js';
export type { TaskInfo, TaskOptions } from './tasks.js';
export { connect, type ConnectOptions, type ElicitRequest, type ElicitAnswer } from './connect.js';
export type { FollowOptions, FollowStatus } from './follow.js';
