/**
 * Jobs and tasks: each execution is its own span (`job {tool}`), a child of the call span that
 * started it and linked to it, on whichever process runs it: the call span's trace context is
 * stored with the job (the `created` message's carrier), so a worker process or another replica
 * continues the same trace. Status changes are span events and `tether.jobs` counts.
 */
import { type Attributes, type Link, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { JobMessage } from '@mcp-tether/core';
import { extractFrom, injectInto } from './carrier.js';
import { CallRecord, clearRecord, recordOf, setRecord } from './record.js';
import { ATTR } from './semconv.js';
import { MAX_JOB_SPANS, type Telemetry } from './telemetry.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export function onJob(t: Telemetry, m: JobMessage): void {
  const inst = t.instruments();
  const toolAttrs: Attributes = { [ATTR.GEN_AI_TOOL_NAME]: m.tool };
  if (m.status === 'created') {
    // Store the call span's context with the job: the execution continues this trace anywhere.
    const span = recordOf(m.ctx)?.span;
    if (span !== undefined && m.trace !== undefined) injectInto(m.trace, trace.setSpan(ROOT_CONTEXT, span));
    return;
  }
  inst?.jobs.add(1, { ...toolAttrs, 'tether.job.status': m.status });
  if (m.status === 'started') {
    start(t, m, toolAttrs);
    inst?.jobsActive.add(1, toolAttrs);
    return;
  }
  const traced = t.jobs.get(m.jobId);
  traced?.span?.addEvent('tether.job.status', { 'tether.job.status': m.status });
  if (!TERMINAL.has(m.status)) return;
  inst?.jobDuration.record(m.ageMs / 1000, { ...toolAttrs, 'tether.job.status': m.status });
  if (traced === undefined) return;
  t.jobs.delete(m.jobId);
  inst?.jobsActive.add(-1, toolAttrs);
  end(traced.record, m.status);
}

function start(t: Telemetry, m: JobMessage, toolAttrs: Attributes): void {
  const tracer = t.providers.tracer();
  const call = recordOf(m.ctx);
  // Parent: the stored trace context (the call span, wherever it ran); else the call span here.
  let parent = extractFrom(m.trace);
  if (trace.getSpanContext(parent) === undefined && call?.span !== undefined)
    parent = trace.setSpan(ROOT_CONTEXT, call.span);
  const callSpan = trace.getSpanContext(parent);
  const links: Link[] | undefined =
    callSpan !== undefined ? [{ context: callSpan, attributes: { 'tether.link': 'started_by' } }] : undefined;
  const attrs: Attributes = { ...toolAttrs, 'tether.job.id': m.jobId, 'tether.job.mode': m.mode };
  if (m.attempt !== undefined) attrs['tether.job.attempt'] = m.attempt;
  const span = tracer?.startSpan(`job ${m.tool}`, { kind: SpanKind.INTERNAL, attributes: attrs, links }, parent);
  if (t.jobs.size >= MAX_JOB_SPANS) {
    const [oldest] = t.jobs;
    if (oldest !== undefined) {
      t.jobs.delete(oldest[0]);
      oldest[1].record.span?.setAttribute('tether.job.evicted', true);
      end(oldest[1].record, undefined);
    }
  }
  const ctx = m.ctx;
  const record = new CallRecord(t, ctx, span, toolAttrs);
  // The job's own progress, heartbeats, lock waits... now land on the job span.
  if (ctx !== undefined) setRecord(ctx, record);
  t.jobs.set(m.jobId, { span, attrs, record });
}

function end(record: CallRecord, status: string | undefined): void {
  const span = record.span;
  if (record.ctx !== undefined) clearRecord(record.ctx, record);
  if (span === undefined) return;
  if (status !== undefined) span.setAttribute('tether.job.status', status);
  if (status === 'failed') span.setStatus({ code: SpanStatusCode.ERROR, message: 'job failed' });
  else if (status === 'cancelled') span.setAttribute(ATTR.ERROR_TYPE, 'cancelled');
  record.flush();
  span.end();
}
