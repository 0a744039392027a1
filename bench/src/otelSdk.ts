/**
 * A recording OpenTelemetry SDK for the `otel-sdk` instruction stack: every span is made, recorded
 * and handed to an exporter that keeps nothing; metrics aggregate in a reader that is never read.
 * (What a user pays per call with telemetry on, minus the export itself.)
 */
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode } from '@opentelemetry/core';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';

class DropSpans implements SpanExporter {
  export(_spans: ReadableSpan[], done: (r: { code: ExportResultCode }) => void): void {
    done({ code: ExportResultCode.SUCCESS });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

class NeverRead extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Register the SDK globally (once per process). */
export function registerRecordingSdk(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new DropSpans())] }),
  );
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new NeverRead()] }));
}
