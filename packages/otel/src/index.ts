/**
 * @mcp-tether/otel — OpenTelemetry for MCP servers and clients, by the MCP semantic conventions.
 * @packageDocumentation
 */
export { otel, type OtelMiddleware } from './server.js';
export type { OtelOptions } from './telemetry.js';
export { instrumentClient, type InstrumentClientOptions } from './client.js';
export { extractFrom, injectInto, TRACE_KEYS } from './carrier.js';
export {
  ATTR,
  CALLER_ERROR_CODES,
  DURATION_BUCKETS_S,
  EXECUTE_TOOL,
  METRIC,
  TETHER_ATTR,
  TOOL_ERROR,
} from './semconv.js';
export { SCOPE, SCOPE_VERSION } from './providers.js';
