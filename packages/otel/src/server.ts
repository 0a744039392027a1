/**
 * `otel()`: the server span and `mcp.server.operation.duration` of every tools/call, prompts/get
 * and resources/read, named and attributed by the MCP semantic conventions, parented on the trace
 * context of `params._meta` and linked to the ambient (transport) span.
 */
import {
  type Attributes,
  type Context,
  context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import {
  type CallContext,
  type CallResult,
  isCallAbortReason,
  type Middleware,
  type Next,
  refusalCode,
  type ServerHost,
} from '@mcp-tether/core';
import { extractFrom } from './carrier.js';
import { CallRecord, clearRecord, setRecord } from './record.js';
import { ATTR, CALLER_ERROR_CODES, EXECUTE_TOOL, TOOL_ERROR } from './semconv.js';
import { retain, release } from './subscriber.js';
import { type OtelOptions, Telemetry } from './telemetry.js';

/** The middleware `otel()` returns: put it first (outermost) in the list. */
export interface OtelMiddleware extends Middleware {
  /** Stop listening to tether's diagnostics channels (spans and metrics of calls go on). */
  dispose(): void;
}

/** The transport of a call, from what the SDK handed the adapter (v1 `requestInfo`, v2 `http`). */
function transportOf(ctx: CallContext, fallback: string | undefined): { transport?: string; http: boolean } {
  const raw = ctx.raw as { requestInfo?: unknown; http?: unknown } | undefined;
  if (raw !== undefined && (raw.requestInfo !== undefined || raw.http !== undefined))
    return { transport: 'tcp', http: true };
  return { transport: fallback, http: false };
}

function targetOf(ctx: CallContext): string | undefined {
  return ctx.method === 'resources/read' ? undefined : ctx.name;
}

/** The low-cardinality attributes shared by the span and the duration metric. */
function commonAttributes(ctx: CallContext, options: OtelOptions): Attributes {
  const attrs: Attributes = { [ATTR.MCP_METHOD_NAME]: ctx.method };
  if (ctx.method === 'tools/call') {
    attrs[ATTR.GEN_AI_TOOL_NAME] = ctx.name;
    attrs[ATTR.GEN_AI_OPERATION_NAME] = EXECUTE_TOOL;
  } else if (ctx.method === 'prompts/get') attrs[ATTR.GEN_AI_PROMPT_NAME] = ctx.name;
  if (ctx.protocolVersion !== undefined) attrs[ATTR.MCP_PROTOCOL_VERSION] = ctx.protocolVersion;
  const { transport, http } = transportOf(ctx, options.transport);
  if (transport !== undefined) attrs[ATTR.NETWORK_TRANSPORT] = transport;
  if (http) attrs[ATTR.NETWORK_PROTOCOL_NAME] = 'http';
  return attrs;
}

function json(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** How a call ended, in the conventions' terms. */
interface Outcome {
  errorType?: string;
  statusCode?: string;
  message?: string;
}

function outcomeOfResult(ctx: CallContext, result: CallResult): Outcome {
  if (ctx.method === 'tools/call' && result.isError === true) {
    const code = refusalCode(result);
    return { errorType: TOOL_ERROR, message: code ?? 'tool returned isError' };
  }
  return {};
}

function outcomeOfError(ctx: CallContext, err: unknown): Outcome {
  if (isCallAbortReason(err)) return { errorType: err.kind, message: err.message };
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'number' && Number.isInteger(code)) {
    const statusCode = String(code);
    return CALLER_ERROR_CODES.has(code) ? { statusCode } : { statusCode, errorType: statusCode, message };
  }
  // The SDK answers a tool callback's throw with an `isError` result, anything else with -32603.
  if (ctx.method === 'tools/call') return { errorType: TOOL_ERROR, message };
  return { statusCode: '-32603', errorType: '-32603', message };
}

/** End the call's telemetry: span attributes and status, the duration metric, in-flight down. */
function finish(
  ctx: CallContext,
  record: CallRecord,
  started: number,
  outcome: Outcome,
  result: CallResult | undefined,
  err: unknown,
): void {
  const { span, owner } = record;
  const inst = owner.instruments();
  const attrs = record.metricAttrs;
  if (outcome.errorType !== undefined || outcome.statusCode !== undefined) {
    const withError: Attributes = { ...attrs };
    if (outcome.errorType !== undefined) withError[ATTR.ERROR_TYPE] = outcome.errorType;
    if (outcome.statusCode !== undefined) withError[ATTR.RPC_RESPONSE_STATUS_CODE] = outcome.statusCode;
    inst?.operationDuration.record((performance.now() - started) / 1000, withError);
  } else inst?.operationDuration.record((performance.now() - started) / 1000, attrs);
  inst?.callsInFlight.add(-1, attrs);
  if (span === undefined) return;
  if (outcome.statusCode !== undefined) span.setAttribute(ATTR.RPC_RESPONSE_STATUS_CODE, outcome.statusCode);
  if (outcome.errorType !== undefined) {
    span.setAttribute(ATTR.ERROR_TYPE, outcome.errorType);
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.message });
  }
  const reason = ctx.abortReason;
  if (reason !== undefined) {
    span.setAttribute('tether.cancel.who', reason.kind);
    span.setAttribute('tether.cancel.why', reason.message);
  }
  if (err !== undefined && !isCallAbortReason(err) && err instanceof Error) span.recordException(err);
  const refusal = result !== undefined ? refusalCode(result) : undefined;
  if (refusal !== undefined) span.setAttribute('tether.refusal.code', refusal);
  if (result !== undefined && result.resultType === 'input_required')
    span.setAttribute('tether.result_type', 'input_required');
  if (
    result !== undefined &&
    outcome.errorType === undefined &&
    owner.options.captureResults &&
    ctx.method === 'tools/call'
  ) {
    const text = json(result);
    if (text !== undefined) span.setAttribute(ATTR.GEN_AI_TOOL_CALL_RESULT, text);
  }
  record.flush();
  span.end();
}

function startSpan(t: Telemetry, ctx: CallContext, attrs: Attributes): { span: Span | undefined; parent: Context } {
  const tracer = t.providers.tracer();
  const parent = extractFrom(ctx.meta);
  if (tracer === undefined) return { span: undefined, parent };
  const options = t.options;
  const target = ctx.method === 'resources/read' && options.resourceUriInSpanName ? ctx.name : targetOf(ctx);
  const spanAttrs: Attributes = { ...attrs, [ATTR.JSONRPC_REQUEST_ID]: String(ctx.requestId), 'tether.era': ctx.era };
  if (ctx.method === 'resources/read') spanAttrs[ATTR.MCP_RESOURCE_URI] = ctx.name;
  // mcp.session.id MUST NOT be set for a 2026-07-28 request (no session exists).
  if (ctx.sessionId !== undefined && ctx.era === 'legacy') spanAttrs[ATTR.MCP_SESSION_ID] = ctx.sessionId;
  if (options.captureArguments) {
    if (ctx.method === 'tools/call') {
      const text = json(ctx.args);
      if (text !== undefined) spanAttrs[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS] = text;
    } else if (ctx.method === 'prompts/get') {
      for (const [k, v] of Object.entries(ctx.args))
        spanAttrs[ATTR.GEN_AI_PROMPT_VARIABLE + k] = typeof v === 'string' ? v : (json(v) ?? '');
    }
  }
  // The ambient span (an HTTP server span) is linked, not parented: MCP and transport contexts are independent.
  const ambient = trace.getSpan(context.active())?.spanContext();
  let links: Link[] | undefined;
  // (In process, e.g. over an in-memory transport, the ambient span may be the parent itself: no link then.)
  if (
    ambient !== undefined &&
    trace.isSpanContextValid(ambient) &&
    ambient.spanId !== trace.getSpanContext(parent)?.spanId
  )
    links = [{ context: ambient, attributes: { 'tether.link': 'transport' } }];
  const span = tracer.startSpan(
    target === undefined ? ctx.method : `${ctx.method} ${target}`,
    { kind: SpanKind.SERVER, attributes: spanAttrs, links },
    parent,
  );
  return { span, parent: trace.setSpan(parent, span) };
}

/**
 * The telemetry middleware. Put it first in the list (outermost), so the span and the duration cover
 * every other layer: `tether(server, [otel(), cancel(), ...])`.
 *
 * With no OpenTelemetry SDK registered (the API's no-op) it declines every call in `when` (a few
 * property reads) and subscribes to nothing. With one, each call gets a SERVER span named
 * `"{mcp.method.name} {target}"` and a `mcp.server.operation.duration` record (seconds); tether's
 * own signals (progress, heartbeats, cancellation, lock waits, MRTR rounds, logs dropped, jobs,
 * HTTP sessions) become bounded span events, attributes and `tether.*` metrics.
 */
export function otel(options: OtelOptions = {}): OtelMiddleware {
  const t = new Telemetry(options);
  let retained = false;
  const ensure = () => {
    if (!retained) {
      retained = true;
      retain(t);
    }
  };
  if (t.providers.on()) ensure();
  return {
    name: 'otel',
    setup(host: ServerHost) {
      if (!t.providers.on()) return;
      ensure();
      const opened = performance.now();
      let legacy = false;
      host.onClose(() => {
        // A session: a 2025-era connection (a 2026-07-28 request's server lives for one request).
        if (!legacy && host.sessionId() === undefined) return;
        const attrs: Attributes = {};
        const transport = host.sessionId() !== undefined ? 'tcp' : options.transport;
        if (transport !== undefined) attrs[ATTR.NETWORK_TRANSPORT] = transport;
        t.instruments()?.sessionDuration.record((performance.now() - opened) / 1000, attrs);
      });
      sessions.set(host, () => {
        legacy = true;
      });
    },
    when: () => t.providers.on(),
    async handle(ctx: CallContext, next: Next): Promise<CallResult> {
      ensure();
      if (ctx.era === 'legacy') sessions.get(ctx.host)?.();
      const attrs = commonAttributes(ctx, options);
      if (options.resourceUriOnMetrics && ctx.method === 'resources/read') attrs[ATTR.MCP_RESOURCE_URI] = ctx.name;
      const started = performance.now();
      const { span, parent } = startSpan(t, ctx, attrs);
      const record = new CallRecord(t, ctx, span, attrs);
      setRecord(ctx, record);
      t.instruments()?.callsInFlight.add(1, attrs);
      try {
        const result = await context.with(parent, next);
        finish(ctx, record, started, outcomeOfResult(ctx, result), result, undefined);
        return result;
      } catch (err) {
        finish(ctx, record, started, outcomeOfError(ctx, err), undefined, err);
        throw err;
      } finally {
        clearRecord(ctx, record);
      }
    },
    dispose() {
      if (retained) {
        retained = false;
        release(t);
      }
    },
  };
}

/** Marks a host as a 2025-era session once a legacy call arrives on it. */
const sessions = new WeakMap<ServerHost, () => void>();
