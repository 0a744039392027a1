/**
 * Which OpenTelemetry SDK is there: the tracer and the instruments, or `undefined` while the API is
 * the no-op (nothing registered). Looked up per call at the cost of a few property reads, so an SDK
 * registered after the server was built is picked up by the next call, and a process without one
 * pays next to nothing.
 */
import {
  createNoopMeter,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  type Tracer,
  type TracerProvider,
  trace,
  type UpDownCounter,
} from '@opentelemetry/api';
import { DURATION_BUCKETS_S, METRIC } from './semconv.js';

/** Instrumentation scope name (the package) and version. */
export const SCOPE = '@mcp-tether/otel';
export const SCOPE_VERSION = '0.1.0';

const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const NoopMeter = createNoopMeter().constructor;

/** Every instrument this package records to (server side). */
export interface Instruments {
  readonly operationDuration: Histogram;
  readonly sessionDuration: Histogram;
  readonly callsInFlight: UpDownCounter;
  readonly notifications: Counter;
  readonly cancellations: Counter;
  readonly lockWait: Histogram;
  readonly lockQueueDepth: Histogram;
  readonly jobs: Counter;
  readonly jobsActive: UpDownCounter;
  readonly jobDuration: Histogram;
  readonly httpSessions: Counter;
  readonly httpSessionsOpen: UpDownCounter;
  readonly mrtrRounds: Counter;
  readonly rateLimitRefusals: Counter;
}

const seconds = { unit: 's', advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_S] } };

function makeInstruments(meter: Meter): Instruments {
  return {
    operationDuration: meter.createHistogram(METRIC.SERVER_OPERATION_DURATION, {
      description:
        'MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.',
      ...seconds,
    }),
    sessionDuration: meter.createHistogram(METRIC.SERVER_SESSION_DURATION, {
      description: 'The duration of the MCP session as observed on the MCP server.',
      ...seconds,
    }),
    callsInFlight: meter.createUpDownCounter(METRIC.CALLS_IN_FLIGHT, {
      description: 'tools/call, prompts/get and resources/read requests being served now.',
      unit: '{call}',
    }),
    notifications: meter.createCounter(METRIC.NOTIFICATIONS, {
      description: 'Per-call notifications (progress, heartbeats, logs) by outcome: sent, coalesced, dropped.',
      unit: '{notification}',
    }),
    cancellations: meter.createCounter(METRIC.CANCELLATIONS, {
      description: 'Calls aborted, by who stopped them (cancelled, disconnect, timeout, shutdown).',
      unit: '{call}',
    }),
    lockWait: meter.createHistogram(METRIC.LOCK_WAIT, {
      description: 'Time a call waited for a mutex lock or a concurrency slot, by outcome.',
      ...seconds,
    }),
    lockQueueDepth: meter.createHistogram(METRIC.LOCK_QUEUE_DEPTH, {
      description: 'Waiters ahead of a call when it queued for a lock or slot.',
      unit: '{waiter}',
      advice: { explicitBucketBoundaries: [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
    }),
    jobs: meter.createCounter(METRIC.JOBS, {
      description:
        'Job and task status changes, by status (started, working, input_required, completed, failed, cancelled).',
      unit: '{job}',
    }),
    jobsActive: meter.createUpDownCounter(METRIC.JOBS_ACTIVE, {
      description: 'Jobs executing in this process now.',
      unit: '{job}',
    }),
    jobDuration: meter.createHistogram(METRIC.JOB_DURATION, {
      description: 'Job duration from creation to its terminal status, by status.',
      ...seconds,
    }),
    httpSessions: meter.createCounter(METRIC.HTTP_SESSIONS, {
      description: 'Streamable HTTP session events: opened, closed, expired, refused.',
      unit: '{session}',
    }),
    httpSessionsOpen: meter.createUpDownCounter(METRIC.HTTP_SESSIONS_OPEN, {
      description: 'Streamable HTTP sessions open now.',
      unit: '{session}',
    }),
    mrtrRounds: meter.createCounter(METRIC.MRTR_ROUNDS, {
      description: 'Input rounds (elicitations, input_required results) asked of users, by mode.',
      unit: '{round}',
    }),
    rateLimitRefusals: meter.createCounter(METRIC.RATELIMIT_REFUSALS, {
      description:
        'Calls refused by a rate limit (@mcp-tether/ratelimit, JSON-RPC -32029), by the bucket that refused: client, method or tool.',
      unit: '{call}',
    }),
  };
}

/** Resolves the tracer and instruments per call, against the providers given or the global ones. */
export class Providers {
  private tp: TracerProvider | undefined;
  private tracerOf: Tracer | undefined;
  private mp: MeterProvider | undefined;
  private inst: Instruments | undefined;

  constructor(
    private readonly tracerProvider?: TracerProvider,
    private readonly meterProvider?: MeterProvider,
  ) {}

  /** The tracer, or undefined while no tracing SDK is registered. */
  tracer(): Tracer | undefined {
    let tp = this.tracerProvider ?? trace.getTracerProvider();
    if (tp instanceof ProxyTracerProvider) {
      tp = tp.getDelegate();
      if (tp === NOOP_TRACER_PROVIDER) return undefined;
    }
    if (tp !== this.tp) {
      this.tp = tp;
      this.tracerOf = tp.getTracer(SCOPE, SCOPE_VERSION);
    }
    return this.tracerOf;
  }

  /** The instruments, or undefined while no metrics SDK is registered. */
  instruments(): Instruments | undefined {
    const mp = this.meterProvider ?? metrics.getMeterProvider();
    if (mp !== this.mp) {
      this.mp = mp;
      const meter = mp.getMeter(SCOPE, SCOPE_VERSION);
      this.inst = meter instanceof NoopMeter ? undefined : makeInstruments(meter);
    }
    return this.inst;
  }

  /** Whether either signal records. */
  on(): boolean {
    return this.tracer() !== undefined || this.instruments() !== undefined;
  }
}
