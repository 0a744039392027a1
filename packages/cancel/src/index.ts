/**
 * @mcp-tether/cancel — one AbortSignal per MCP call: deadlines, per-call cleanup (`ctx.defer`),
 * abortable helpers and a graceful `drain()`.
 * @packageDocumentation
 */
export { cancel, type CancelMiddleware, type CancelOptions, type DrainResult, type Timeouts } from './cancel.js';
export { raceSignal, sleep } from './helpers.js';
export {
  CallAbortReason,
  ClientCancelled,
  DeadlineExceeded,
  Disconnected,
  ShuttingDown,
  abortReason,
  isCallAbortReason,
  type AbortKind,
} from '@mcp-tether/core';
