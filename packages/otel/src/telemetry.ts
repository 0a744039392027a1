/**
 * One `otel()` instance's state: its providers, options, the job executions it traces, and its
 * place in the process-wide diagnostics subscription (made while at least one instance records).
 */
import type { Attributes, MeterProvider, Span, TracerProvider } from '@opentelemetry/api';
import { type Instruments, Providers } from './providers.js';
import type { CallRecord } from './record.js';

/** Options of {@link otel}. */
export interface OtelOptions {
  /** Tracer provider to use (default: the global one, `trace.getTracerProvider()`, looked up per call). */
  tracerProvider?: TracerProvider;
  /** Meter provider to use (default: the global one, `metrics.getMeterProvider()`, looked up per call). */
  meterProvider?: MeterProvider;
  /**
   * Opt-in (may hold sensitive data): record `gen_ai.tool.call.arguments` (tools, as JSON) and
   * `gen_ai.prompt.variable.<name>` (prompt arguments) on server spans. Default false.
   */
  captureArguments?: boolean;
  /** Opt-in (may hold sensitive data): record `gen_ai.tool.call.result` (as JSON) on successful tool spans. Default false. */
  captureResults?: boolean;
  /** Opt-in: `resources/read {uri}` as the span name (high cardinality). Default: `resources/read`. */
  resourceUriInSpanName?: boolean;
  /** Opt-in: `mcp.resource.uri` on `mcp.server.operation.duration` (high cardinality). Default false. */
  resourceUriOnMetrics?: boolean;
  /**
   * `network.transport` of calls whose transport tether cannot see: `pipe` for stdio. Calls that
   * arrived over HTTP are recorded as `tcp` (with `network.protocol.name` `http`) whatever this says.
   */
  transport?: 'pipe' | 'tcp' | 'quic' | 'unix';
}

/** A job execution being traced in this process. */
export interface JobTrace {
  readonly span: Span | undefined;
  readonly attrs: Attributes;
  readonly record: CallRecord;
}

/** Most job executions traced at once per instance; past it the oldest's span ends (attribute `tether.job.evicted`). */
export const MAX_JOB_SPANS = 10_000;

export class Telemetry {
  readonly providers: Providers;
  /** Job executions traced here, by job id (bounded by {@link MAX_JOB_SPANS}). */
  readonly jobs = new Map<string, JobTrace>();

  constructor(readonly options: OtelOptions) {
    this.providers = new Providers(options.tracerProvider, options.meterProvider);
  }

  instruments(): Instruments | undefined {
    return this.providers.instruments();
  }
}
