/**
 * Names from the OpenTelemetry MCP semantic conventions (`open-telemetry/semantic-conventions-genai`
 * v0.1.0, `docs/gen-ai/mcp.md`, `model/mcp/*.yaml`; status: development), and tether's own, under
 * `tether.`. Spelled here once; the rest of the package imports them.
 */

/** Span and metric attributes of the MCP conventions (and the general ones they reference). */
export const ATTR = {
  MCP_METHOD_NAME: 'mcp.method.name',
  MCP_SESSION_ID: 'mcp.session.id',
  MCP_RESOURCE_URI: 'mcp.resource.uri',
  MCP_PROTOCOL_VERSION: 'mcp.protocol.version',
  GEN_AI_TOOL_NAME: 'gen_ai.tool.name',
  GEN_AI_PROMPT_NAME: 'gen_ai.prompt.name',
  GEN_AI_OPERATION_NAME: 'gen_ai.operation.name',
  GEN_AI_TOOL_CALL_ARGUMENTS: 'gen_ai.tool.call.arguments',
  GEN_AI_TOOL_CALL_RESULT: 'gen_ai.tool.call.result',
  /** Prefix: one attribute per prompt argument (`gen_ai.prompt.variable.<name>`), opt-in. */
  GEN_AI_PROMPT_VARIABLE: 'gen_ai.prompt.variable.',
  JSONRPC_REQUEST_ID: 'jsonrpc.request.id',
  RPC_RESPONSE_STATUS_CODE: 'rpc.response.status_code',
  ERROR_TYPE: 'error.type',
  NETWORK_TRANSPORT: 'network.transport',
  NETWORK_PROTOCOL_NAME: 'network.protocol.name',
  SERVER_ADDRESS: 'server.address',
  SERVER_PORT: 'server.port',
} as const;

/** tether's own attributes (on call spans, job spans and tether.* metrics). */
export const TETHER_ATTR = {
  /** `legacy` (2025-era session) or `modern` (2026-07-28 request). */
  ERA: 'tether.era',
  /** Why a call was aborted: `cancelled`, `disconnect`, `timeout`, `shutdown`. */
  CANCEL_WHO: 'tether.cancel.who',
  CANCEL_WHY: 'tether.cancel.why',
  CANCEL_LATENCY_MS: 'tether.cancel.latency_ms',
  PROGRESS_SENT: 'tether.progress.sent',
  PROGRESS_COALESCED: 'tether.progress.coalesced',
  PROGRESS_DROPPED: 'tether.progress.dropped',
  HEARTBEATS: 'tether.heartbeat.count',
  LOGS_DROPPED: 'tether.log.dropped',
  MRTR_ROUNDS: 'tether.mrtr.rounds',
  LOCK_KEY: 'tether.lock.key',
  LOCK_WAIT_MS: 'tether.lock.wait_ms',
  LOCK_QUEUE_DEPTH: 'tether.lock.queue_depth',
  LOCK_FENCING_TOKEN: 'tether.lock.fencing_token',
  LOCK_OUTCOME: 'tether.lock.outcome',
  JOB_ID: 'tether.job.id',
  JOB_STATUS: 'tether.job.status',
  JOB_MODE: 'tether.job.mode',
  JOB_ATTEMPT: 'tether.job.attempt',
  NOTIFICATION_KIND: 'tether.notification.kind',
  NOTIFICATION_OUTCOME: 'tether.notification.outcome',
  SESSION_EVENT: 'tether.http.session.event',
} as const;

/** Metric names. */
export const METRIC = {
  SERVER_OPERATION_DURATION: 'mcp.server.operation.duration',
  SERVER_SESSION_DURATION: 'mcp.server.session.duration',
  CLIENT_OPERATION_DURATION: 'mcp.client.operation.duration',
  CALLS_IN_FLIGHT: 'tether.calls.in_flight',
  NOTIFICATIONS: 'tether.notifications',
  CANCELLATIONS: 'tether.cancellations',
  LOCK_WAIT: 'tether.lock.wait.duration',
  LOCK_QUEUE_DEPTH: 'tether.lock.queue.depth',
  JOBS: 'tether.jobs',
  JOBS_ACTIVE: 'tether.jobs.active',
  JOB_DURATION: 'tether.job.duration',
  HTTP_SESSIONS: 'tether.http.sessions',
  HTTP_SESSIONS_OPEN: 'tether.http.sessions.open',
  MRTR_ROUNDS: 'tether.mrtr.rounds',
  RATELIMIT_REFUSALS: 'tether.ratelimit.refusals',
} as const;

/**
 * `ExplicitBucketBoundaries` the conventions give for `mcp.{server,client}.{operation,session}.duration`
 * (seconds). tether's own durations use them too.
 */
export const DURATION_BUCKETS_S: readonly number[] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** Span event names (tether's). */
export const EVENT = {
  PROGRESS_FIRST: 'tether.progress.first',
  PROGRESS_LAST: 'tether.progress.last',
  HEARTBEAT: 'tether.heartbeat',
  CANCEL: 'tether.cancel',
  CANCEL_SETTLED: 'tether.cancel.settled',
  LOCK_ACQUIRED: 'tether.lock.wait',
  MRTR_ROUND: 'tether.mrtr.round',
  LOG_DROPPED: 'tether.log.dropped',
  JOB_STARTED: 'tether.job.started',
  JOB_STATUS: 'tether.job.status',
} as const;

/** `gen_ai.operation.name` for `tools/call` (the conventions: set it for tool calls only). */
export const EXECUTE_TOOL = 'execute_tool';

/** `error.type` of a tool result with `isError: true`. */
export const TOOL_ERROR = 'tool_error';

/**
 * JSON-RPC codes a server span does NOT count as its own error (the caller sent something the
 * server could not serve): the conventions' list for `rpc.response.status_code` on the server.
 */
export const CALLER_ERROR_CODES: ReadonlySet<number> = new Set([-32700, -32600, -32601, -32602, -32002]);
