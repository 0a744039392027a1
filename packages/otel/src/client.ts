/**
 * `instrumentClient(client)`: CLIENT spans and `mcp.client.operation.duration` for every request an
 * MCP client sends, with the span's trace context injected into `params._meta` (`traceparent`,
 * `tracestate`, `baggage`: SEP-414), so the server span continues the client's trace.
 */
import {
  type Attributes,
  context,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { injectInto } from './carrier.js';
import { Providers, SCOPE, SCOPE_VERSION } from './providers.js';
import { ATTR, DURATION_BUCKETS_S, EXECUTE_TOOL, METRIC, TOOL_ERROR } from './semconv.js';

/** Options of {@link instrumentClient}. */
export interface InstrumentClientOptions {
  /** Tracer provider (default: the global one, looked up per request). */
  tracerProvider?: TracerProvider;
  /** Meter provider (default: the global one, looked up per request). */
  meterProvider?: MeterProvider;
  /** Opt-in: record `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` (JSON) on tools/call spans. */
  captureArguments?: boolean;
  captureResults?: boolean;
  /** `network.transport` to record (`tcp` for Streamable HTTP, `pipe` for stdio); none by default. */
  transport?: 'pipe' | 'tcp' | 'quic' | 'unix';
}

type RequestFn = (
  request: { method: string; params?: Record<string, unknown> },
  ...rest: unknown[]
) => Promise<unknown>;
interface SdkLikeClient {
  request: RequestFn;
}

const INSTRUMENTED = Symbol('mcp-tether.otel.instrumented');

function sdkClientOf(client: unknown): SdkLikeClient {
  const c = client as { request?: unknown; client?: { request?: unknown }; sdk?: unknown };
  // A tether client (`@mcp-tether/client`) wraps an SDK client: instrument that one.
  if (
    c !== null &&
    typeof c === 'object' &&
    (c.sdk === 'v1' || c.sdk === 'v2') &&
    typeof c.client?.request === 'function'
  )
    return c.client as SdkLikeClient;
  if (c !== null && typeof c === 'object' && typeof c.request === 'function') return c as SdkLikeClient;
  throw new TypeError(
    'instrumentClient expects an MCP Client (@modelcontextprotocol/sdk 1.x, @modelcontextprotocol/client 2.x) or a tether client',
  );
}

function json(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/**
 * Instrument an MCP client in place (its `request` method, through which every SDK request goes:
 * `callTool`, `readResource`, `getPrompt`, `listTools`, tasks, ...) and return it.
 *
 * Each request gets a CLIENT span `"{mcp.method.name} {target}"` (child of the active context), its
 * context injected into `params._meta` through the configured propagators (the caller's `_meta` is
 * copied, never changed), and a `mcp.client.operation.duration` record (seconds). A tool result with
 * `isError: true` sets `error.type` `tool_error`; a JSON-RPC error sets `rpc.response.status_code`
 * and `error.type` to its code. With no SDK registered nothing is injected and nothing recorded.
 * Instrumenting twice is a no-op.
 * @throws TypeError when `client` is not an MCP client
 */
export function instrumentClient<C>(client: C, options: InstrumentClientOptions = {}): C {
  const target = sdkClientOf(client);
  if ((target as unknown as Record<symbol, unknown>)[INSTRUMENTED] === true) return client;
  const providers = new Providers(options.tracerProvider, options.meterProvider);
  const durationHistogram = histogramOf(providers, options);
  const original = target.request;
  const instrumented: RequestFn = function (this: unknown, request, ...rest) {
    const tracer = providers.tracer();
    const hist = durationHistogram();
    if ((tracer === undefined && hist === undefined) || typeof request?.method !== 'string')
      return original.call(this, request, ...rest);
    const method = request.method;
    const params = request.params ?? {};
    const name = typeof params.name === 'string' ? params.name : undefined;
    const attrs = metricAttributes(method, name, options);
    const spanAttrs = spanAttributes(attrs, method, params, options);
    const hasTarget = (method === 'tools/call' || method === 'prompts/get') && name !== undefined;
    const span = tracer?.startSpan(hasTarget ? `${method} ${name}` : method, {
      kind: SpanKind.CLIENT,
      attributes: spanAttrs,
    });
    const active = span !== undefined ? trace.setSpan(context.active(), span) : context.active();
    const meta = { ...(params._meta as Record<string, unknown> | undefined) };
    injectInto(meta, active);
    const sent = { ...request, params: { ...params, _meta: meta } };
    const done = ender(span, hist, attrs, performance.now());
    let promise: Promise<unknown>;
    try {
      promise = context.with(active, () => original.call(this, sent, ...rest));
    } catch (err) {
      done(err instanceof Error ? err.name : '_OTHER', undefined, String(err));
      throw err;
    }
    return promise.then(
      (result) => {
        const r = result as { isError?: unknown } | undefined;
        if (method === 'tools/call' && r?.isError === true) done(TOOL_ERROR, undefined, 'tool returned isError');
        else {
          if (span !== undefined && options.captureResults && method === 'tools/call') {
            const text = json(result);
            if (text !== undefined) span.setAttribute(ATTR.GEN_AI_TOOL_CALL_RESULT, text);
          }
          done(undefined, undefined);
        }
        return result;
      },
      (err: unknown) => {
        const code = (err as { code?: unknown } | null)?.code;
        const message = err instanceof Error ? err.message : String(err);
        if (typeof code === 'number' && Number.isInteger(code)) done(String(code), String(code), message);
        else done(errorTypeOf(err), undefined, message);
        throw err;
      },
    );
  };
  Object.defineProperty(target, 'request', { value: instrumented, configurable: true, writable: true });
  Object.defineProperty(target, INSTRUMENTED, { value: true });
  return client;
}

/**
 * The `mcp.client.operation.duration` histogram of the meter provider in use (made again when the
 * global provider changes), `undefined` when no SDK is registered.
 */
function histogramOf(providers: Providers, options: InstrumentClientOptions): () => Histogram | undefined {
  let meterProvider: MeterProvider | undefined;
  let histogram: Histogram | undefined;
  return () => {
    if (providers.instruments() === undefined) return undefined;
    const mp = options.meterProvider ?? metrics.getMeterProvider();
    if (mp !== meterProvider) {
      meterProvider = mp;
      histogram = mp.getMeter(SCOPE, SCOPE_VERSION).createHistogram(METRIC.CLIENT_OPERATION_DURATION, {
        description:
          'The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.',
        unit: 's',
        advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_S] },
      });
    }
    return histogram;
  };
}

/** The attributes of a request's duration record (and of its span): method, tool or prompt, transport. */
function metricAttributes(method: string, name: string | undefined, options: InstrumentClientOptions): Attributes {
  const attrs: Attributes = { [ATTR.MCP_METHOD_NAME]: method };
  if (method === 'tools/call' && name !== undefined) {
    attrs[ATTR.GEN_AI_TOOL_NAME] = name;
    attrs[ATTR.GEN_AI_OPERATION_NAME] = EXECUTE_TOOL;
  } else if (method === 'prompts/get' && name !== undefined) attrs[ATTR.GEN_AI_PROMPT_NAME] = name;
  if (options.transport !== undefined) attrs[ATTR.NETWORK_TRANSPORT] = options.transport;
  return attrs;
}

/** The span's attributes: the metric's, the resource URI, and the tool's arguments when captured. */
function spanAttributes(
  attrs: Attributes,
  method: string,
  params: Record<string, unknown>,
  options: InstrumentClientOptions,
): Attributes {
  const spanAttrs: Attributes = { ...attrs };
  if (typeof params.uri === 'string') spanAttrs[ATTR.MCP_RESOURCE_URI] = params.uri;
  if (options.captureArguments && method === 'tools/call') {
    const text = json(params.arguments ?? {});
    if (text !== undefined) spanAttrs[ATTR.GEN_AI_TOOL_CALL_ARGUMENTS] = text;
  }
  return spanAttrs;
}

/** Ends one request: records its duration (since `started`, ms) and ends its span, with the error's attributes and status. */
function ender(
  span: Span | undefined,
  hist: Histogram | undefined,
  attrs: Attributes,
  started: number,
): (errorType: string | undefined, statusCode: string | undefined, message?: string) => void {
  return (errorType, statusCode, message) => {
    const a: Attributes = errorType === undefined && statusCode === undefined ? attrs : { ...attrs };
    if (errorType !== undefined) a[ATTR.ERROR_TYPE] = errorType;
    if (statusCode !== undefined) a[ATTR.RPC_RESPONSE_STATUS_CODE] = statusCode;
    hist?.record((performance.now() - started) / 1000, a);
    if (span === undefined) return;
    if (statusCode !== undefined) span.setAttribute(ATTR.RPC_RESPONSE_STATUS_CODE, statusCode);
    if (errorType !== undefined) {
      span.setAttribute(ATTR.ERROR_TYPE, errorType);
      span.setStatus({ code: SpanStatusCode.ERROR, message });
    }
    span.end();
  };
}

/** `error.type` of a rejection without a JSON-RPC code: `cancelled` for an abort, else the error's name. */
function errorTypeOf(err: unknown): string {
  return err instanceof Error && err.name === 'AbortError' ? 'cancelled' : err instanceof Error ? err.name : '_OTHER';
}
