/**
 * tether's diagnostics channels (owned by `@mcp-tether/core`) → span events, span attributes and
 * `tether.*` metrics. One process-wide subscription, made while at least one `otel()` instance
 * records; a message about a traced call goes to that call's record, one without a call (an HTTP
 * session, a job on a worker) to every instance.
 */
import {
  type CancelMessage,
  diagnostics,
  type HeartbeatMessage,
  type HttpSessionMessage,
  type JobMessage,
  type LogDroppedMessage,
  type MrtrRoundMessage,
  type MutexWaitMessage,
  type ProgressMessage,
  type RateLimitMessage,
  type TypedChannel,
} from '@mcp-tether/core';
import type { Attributes } from '@opentelemetry/api';
import { onJob } from './jobs.js';
import { MAX_EVENTS_PER_KIND, recordOf } from './record.js';
import { ATTR } from './semconv.js';
import type { Telemetry } from './telemetry.js';

const instances = new Set<Telemetry>();

/** Run a subscriber body; a subscriber must never throw (Node would report it as uncaught). */
function guard<M>(fn: (m: M) => void): (m: unknown) => void {
  return (m) => {
    try {
      fn(m as M);
    } catch {
      // telemetry never takes a call down
    }
  };
}

/** The instances a message concerns: its call's, or all. */
function ownersOf(ctx: object | undefined): Iterable<Telemetry> {
  const r = recordOf(ctx as never);
  return r !== undefined ? [r.owner] : instances;
}

const toolAttrs = (ctx: { toolName?: string | undefined } | undefined): Attributes =>
  ctx?.toolName !== undefined ? { [ATTR.GEN_AI_TOOL_NAME]: ctx.toolName } : {};

const onProgress = guard<ProgressMessage>((m) => {
  const r = recordOf(m.ctx);
  if (r !== undefined) {
    if (m.kind === 'sent') {
      const attrs: Attributes = { 'tether.progress': m.progress };
      if (m.total !== undefined) attrs['tether.progress.total'] = m.total;
      r.progressSent.add(r.span, 'tether.progress', attrs);
    } else if (m.kind === 'coalesced') r.progressCoalesced++;
    else r.progressDropped++;
  }
  const attrs = { ...toolAttrs(m.ctx), 'tether.notification.kind': 'progress', 'tether.notification.outcome': m.kind };
  for (const t of ownersOf(m.ctx)) t.instruments()?.notifications.add(1, attrs);
});

const onHeartbeat = guard<HeartbeatMessage>((m) => {
  const r = recordOf(m.ctx);
  if (r !== undefined && m.kind === 'beat') {
    r.heartbeats.add(r.span, 'tether.heartbeat', m.silentMs !== undefined ? { 'tether.silent_ms': m.silentMs } : {});
  }
  const outcome = m.kind === 'ping-failed' ? 'dropped' : 'sent';
  const attrs = {
    'tether.notification.kind': m.kind === 'beat' ? 'heartbeat' : 'ping',
    'tether.notification.outcome': outcome,
  };
  for (const t of ownersOf(m.ctx)) t.instruments()?.notifications.add(1, attrs);
});

const onCancel = guard<CancelMessage>((m) => {
  const r = recordOf(m.ctx);
  if (m.phase === 'aborted') {
    if (r !== undefined && !r.ended)
      r.span?.addEvent('tether.cancel', { 'tether.cancel.who': m.who, 'tether.cancel.why': m.why });
    for (const t of ownersOf(m.ctx))
      t.instruments()?.cancellations.add(1, { ...toolAttrs(m.ctx), 'tether.cancel.who': m.who });
  } else if (r !== undefined && !r.ended && m.latencyMs !== undefined) {
    r.span?.addEvent('tether.cancel.settled', { 'tether.cancel.latency_ms': m.latencyMs });
  }
});

const onMutex = guard<MutexWaitMessage>((m) => {
  const r = recordOf(m.ctx);
  if (r !== undefined && !r.ended && r.lockEvents++ < MAX_EVENTS_PER_KIND) {
    const attrs: Attributes = {
      'tether.lock.key': m.key,
      'tether.lock.outcome': m.outcome,
      'tether.lock.wait_ms': m.waitMs,
      'tether.lock.queue_depth': m.queueDepth,
    };
    if (m.fencingToken !== undefined) attrs['tether.lock.fencing_token'] = String(m.fencingToken);
    r.span?.addEvent('tether.lock.wait', attrs);
  }
  const attrs = { ...toolAttrs(m.ctx), 'tether.lock.outcome': m.outcome };
  for (const t of ownersOf(m.ctx)) {
    const inst = t.instruments();
    inst?.lockWait.record(m.waitMs / 1000, attrs);
    inst?.lockQueueDepth.record(m.queueDepth, toolAttrs(m.ctx));
  }
});

const onMrtr = guard<MrtrRoundMessage>((m) => {
  const r = recordOf(m.ctx);
  if (r !== undefined && !r.ended) {
    r.mrtrRounds = Math.max(r.mrtrRounds, m.round);
    if (m.round <= MAX_EVENTS_PER_KIND)
      r.span?.addEvent('tether.mrtr.round', {
        'tether.mrtr.round': m.round,
        'tether.mrtr.mode': m.mode,
        'tether.mrtr.keys': [...m.keys],
      });
  }
  for (const t of ownersOf(m.ctx))
    t.instruments()?.mrtrRounds.add(1, { ...toolAttrs(m.ctx), 'tether.mrtr.mode': m.mode });
});

const onLogDropped = guard<LogDroppedMessage>((m) => {
  const r = recordOf(m.ctx);
  if (r !== undefined)
    r.logsDropped.add(r.span, 'tether.log.dropped', { 'tether.log.dropped.reason': m.reason }, m.count);
  const attrs = { 'tether.notification.kind': 'log', 'tether.notification.outcome': 'dropped' };
  for (const t of ownersOf(m.ctx)) t.instruments()?.notifications.add(m.count, attrs);
});

const onHttpSession = guard<HttpSessionMessage>((m) => {
  for (const t of instances) {
    const inst = t.instruments();
    if (inst === undefined) continue;
    inst.httpSessions.add(1, { 'tether.http.session.event': m.kind });
    if (m.kind === 'opened') inst.httpSessionsOpen.add(1);
    else if (m.kind === 'closed' || m.kind === 'expired') inst.httpSessionsOpen.add(-1);
  }
});

const onRateLimit = guard<RateLimitMessage>((m) => {
  if (m.outcome !== 'refused') return;
  const attrs: Attributes = { ...toolAttrs(m.ctx), [ATTR.MCP_METHOD_NAME]: m.ctx.method };
  if (m.scope !== undefined) attrs['tether.ratelimit.scope'] = m.scope;
  for (const t of ownersOf(m.ctx)) t.instruments()?.rateLimitRefusals.add(1, attrs);
});

const onJobMessage = guard<JobMessage>((m) => {
  const r = recordOf(m.ctx);
  for (const t of r !== undefined ? [r.owner] : instances) onJob(t, m);
});

// biome-ignore lint/suspicious/noExplicitAny: one list of channels of different message types
const subscriptions: Array<[TypedChannel<any>, (m: unknown) => void]> = [
  [diagnostics.progress, onProgress],
  [diagnostics.heartbeat, onHeartbeat],
  [diagnostics.cancel, onCancel],
  [diagnostics.mutexWait, onMutex],
  [diagnostics.mrtrRound, onMrtr],
  [diagnostics.logDropped, onLogDropped],
  [diagnostics.httpSession, onHttpSession],
  [diagnostics.job, onJobMessage],
  [diagnostics.rateLimit, onRateLimit],
];

/** An instance starts recording: subscribe (once for the process). */
export function retain(t: Telemetry): void {
  if (instances.has(t)) return;
  instances.add(t);
  if (instances.size === 1) for (const [ch, fn] of subscriptions) ch.subscribe(fn);
}

/** An instance stops: unsubscribe when it was the last. */
export function release(t: Telemetry): void {
  if (!instances.delete(t)) return;
  if (instances.size === 0) for (const [ch, fn] of subscriptions) ch.unsubscribe(fn);
}
