/**
 * @mcp-tether/bullmq — run `@mcp-tether/jobs` jobs (MCP tasks, job handles) on BullMQ: worker
 * processes, recovery from a worker's crash with checkpoints, retries with backoff, cancel from any
 * replica, graceful hand-back at shutdown.
 * @packageDocumentation
 */
export { bullmqExecutor, BullmqExecutor, RUN_META, type StartWorkerOptions, type Ticket } from './executor.js';
export { BullmqWorker, type WorkerOptions } from './worker.js';
export type { BullmqExecutorOptions, RetryPolicy } from './options.js';
export type { ConnectableServer } from './local.js';
