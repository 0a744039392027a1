/**
 * A real OpenTelemetry SDK (2.x / 0.223 line), registered globally for the test file: spans into
 * an in-memory exporter, metrics collected on demand, W3C trace context and baggage propagators,
 * the AsyncLocalStorage context manager.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  type HistogramMetricData,
  type MetricData,
  MeterProvider,
  MetricReader,
  type SumMetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

class TestReader extends MetricReader {
  constructor(delta: boolean) {
    super(delta ? { aggregationTemporalitySelector: () => AggregationTemporality.DELTA } : {});
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface OtelKit {
  readonly spans: InMemorySpanExporter;
  readonly reader: TestReader;
  readonly tracerProvider: BasicTracerProvider;
  readonly meterProvider: MeterProvider;
  /** Finished spans named `name`. */
  named(name: string): ReadableSpan[];
  /** Every metric collected now, by name (with `delta`: what was recorded since the last collect). */
  collect(): Promise<Map<string, MetricData>>;
  reset(): void;
  shutdown(): Promise<void>;
}

/** Register a recording SDK globally (tracing, metrics, propagation, context). */
export function registerSdk(options: { delta?: boolean } = {}): OtelKit {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const reader = new TestReader(options.delta === true);
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans,
    reader,
    tracerProvider,
    meterProvider,
    named: (name) => spans.getFinishedSpans().filter((s) => s.name === name),
    async collect() {
      const { resourceMetrics } = await reader.collect();
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics) for (const m of scope.metrics) out.set(m.descriptor.name, m);
      return out;
    },
    reset: () => spans.reset(),
    async shutdown() {
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** The histogram data points of `m`. */
export function histogram(m: MetricData | undefined): HistogramMetricData['dataPoints'] {
  if (m === undefined) return [];
  return (m as HistogramMetricData).dataPoints;
}

/** The sum data points of `m`. */
export function sum(m: MetricData | undefined): SumMetricData['dataPoints'] {
  if (m === undefined) return [];
  return (m as SumMetricData).dataPoints;
}
