/**
 * @mcp-tether/core — the contract every tether middleware shares.
 * @packageDocumentation
 */
export { tether, type AttachOptions } from './tether.js';
export { currentCall, requireCall } from './als.js';
export { contextOf } from './call.js';
export { progressEvent, isProgressEvent } from './events.js';
export { detachCall, driveGenerator, isAsyncGenerator, isDetached, lingeringWork } from './generator.js';
export { handler, type HandlerOutput } from './handler.js';
export { isInputRequired } from './adapters/attach.js';
export { hardenStdio } from './adapters/stdio.js';
export { toolTable, type ToolTable } from './adapters/toolTable.js';
export { isRequestId, jsonRpcProblem } from './jsonrpc.js';
export {
  CLIENT_KEY_EXTRA,
  anonymousAuthInfo,
  identityOf,
  type AuthInfoLike,
  type ClientIdentity,
} from './clientKey.js';
export { abortCalls } from './adapters/connection.js';
export {
  assertSeams,
  missingSeams,
  SDK_SEAMS,
  SdkSeamError,
  SUPPORTED_SDKS,
  type Seam,
  type SeamKind,
  type SeamTarget,
  type SeamTargetName,
} from './sdkSeams.js';
export {
  CallAbortReason,
  ClientCancelled,
  Disconnected,
  DeadlineExceeded,
  ShuttingDown,
  abortReason,
  isCallAbortReason,
  type AbortKind,
} from './abort.js';
export {
  ErrorCode,
  JsonRpcErrorCode,
  ProtocolError,
  refusal,
  refusalCode,
  refuse,
  type ErrorCodeValue,
} from './errors.js';
export { LOG_LEVELS } from './types.js';
export { SESSION_EVENT_BYTES } from './limits.js';
export {
  IDEMPOTENCY_KEY_META,
  JOB_CANCEL_TOOL,
  JOB_STATUSES,
  JOB_STATUS_TOOL,
  PARTIAL_META_KEY,
  RELATED_TASK_META_KEY,
  TASKS_EXTENSION,
  TERMINAL_JOB_STATUSES,
  isTerminalJobStatus,
  type JobError,
  type JobHandle,
  type JobStatus,
  type PartialMeta,
} from './wire/jobs.js';
export type {
  CallContext,
  CallMethod,
  CallRequestOptions,
  CallResult,
  Era,
  InputEvent,
  InputRequest,
  InputRequiredResult,
  JsonObject,
  LogEvent,
  LogLevel,
  Middleware,
  MiddlewareLike,
  Next,
  Notification,
  NotificationEvent,
  OutboundEvent,
  ProgressEvent,
  ProgressToken,
  RequestId,
  RequestInfo,
  SentProgress,
  ServerHost,
  ToolAnnotations,
} from './types.js';
export {
  CHANNEL_NAMES,
  diagnostics,
  type CancelMessage,
  type HeartbeatMessage,
  type HttpSessionMessage,
  type RateLimitMessage,
  type JobMessage,
  type LogDroppedMessage,
  type MrtrRoundMessage,
  type MutexWaitMessage,
  type ProgressMessage,
  type TypedChannel,
  type WatchdogMessage,
} from './diagnostics.js';
