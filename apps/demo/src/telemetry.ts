/**
 * OpenTelemetry for the demo, through the standard Node SDK (`@opentelemetry/sdk-node`, the 0.223
 * line: Node ≥ 20.6) and its standard environment variables:
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set: traces (and, without
 *   `--metrics-port`, metrics) go out over OTLP, configured by the SDK from `OTEL_EXPORTER_OTLP_PROTOCOL`
 *   (`http/protobuf` by default, `http/json`, `grpc`), `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, ...
 * - `--metrics-port N`: metrics are served as Prometheus text at `http://127.0.0.1:N/metrics` (0: any
 *   free port) by `@opentelemetry/exporter-prometheus`.
 * - Neither: nothing is loaded or registered; `otel()` in the stack then costs a few property reads per call.
 */
import type { NodeSDK } from '@opentelemetry/sdk-node';

/** A started SDK. */
export interface DemoTelemetry {
  /** `http://127.0.0.1:N/metrics` when `--metrics-port` was given. */
  readonly metricsUrl: string | undefined;
  /** Whether traces go out over OTLP. */
  readonly tracing: boolean;
  /** Flush and stop (exporters, the metrics server). */
  shutdown(): Promise<void>;
}

/** Whether the environment asks for OTLP export. */
export function otlpConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Start the SDK when the environment or `--metrics-port` asks for telemetry; `undefined` otherwise.
 * Call it before the servers are built.
 * @throws when the metrics port cannot be bound
 */
export async function startTelemetry(options: {
  metricsPort?: number;
  host?: string;
  serviceName?: string;
}): Promise<DemoTelemetry | undefined> {
  const tracing = otlpConfigured();
  if (!tracing && options.metricsPort === undefined) return undefined;
  // Without an OTLP endpoint the SDK would still default to an OTLP trace exporter aimed at
  // localhost:4318; and with a Prometheus reader, metrics go there, not to OTLP.
  if (!tracing) process.env.OTEL_TRACES_EXPORTER ??= 'none';
  if (options.metricsPort !== undefined) process.env.OTEL_METRICS_EXPORTER ??= 'none';
  process.env.OTEL_LOGS_EXPORTER ??= 'none';
  process.env.OTEL_SERVICE_NAME ??= options.serviceName ?? 'tether-demo';
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  let metricsUrl: string | undefined;
  const readers: ConstructorParameters<typeof NodeSDK>[0] = {};
  let prometheus: import('@opentelemetry/exporter-prometheus').PrometheusExporter | undefined;
  if (options.metricsPort !== undefined) {
    const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
    const host = options.host ?? '127.0.0.1';
    prometheus = new PrometheusExporter({ host, port: options.metricsPort, preventServerStart: true });
    await prometheus.startServer();
    // The exporter keeps its server private; the port it got (0 = any free one) is read from it.
    const address = (prometheus as unknown as { _server: { address(): { port: number } } })._server.address();
    metricsUrl = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`;
    readers.metricReaders = [prometheus];
  }
  const sdk = new NodeSDK({ ...readers, instrumentations: [] });
  sdk.start();
  return {
    metricsUrl,
    tracing,
    shutdown: () => sdk.shutdown(),
  };
}
