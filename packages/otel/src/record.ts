/**
 * What one call (or one job execution) gathers for its span: bounded tallies of what only tether
 * sees. A tally keeps a count, its first event (added when it happens) and its last (added when the
 * span ends), never one event per occurrence.
 */
import type { Attributes, Span } from '@opentelemetry/api';
import type { CallContext } from '@mcp-tether/core';
import type { Telemetry } from './telemetry.js';

/** Span events of one kind kept per span, at most (MRTR rounds, lock waits): beyond, counts only. */
export const MAX_EVENTS_PER_KIND = 8;

/** Count, first and last of something that may happen many times in a call. */
export class Tally {
  count = 0;
  private lastAttrs: Attributes | undefined;
  private lastAt = 0;

  /** Count one; the first becomes a span event at once, the latest is kept for {@link Tally.flush}. */
  add(span: Span | undefined, name: string, attrs: Attributes, n = 1): void {
    this.count += n;
    if (this.count === n) span?.addEvent(`${name}.first`, attrs);
    else {
      this.lastAttrs = attrs;
      this.lastAt = Date.now();
    }
  }

  /** Add the `.last` event (when more than one happened) and the count attribute. */
  flush(span: Span, name: string, countAttr: string): void {
    if (this.count === 0) return;
    span.setAttribute(countAttr, this.count);
    if (this.lastAttrs !== undefined) span.addEvent(`${name}.last`, this.lastAttrs, this.lastAt);
  }
}

/** One call's (or job execution's) telemetry. */
export class CallRecord {
  readonly progressSent = new Tally();
  progressCoalesced = 0;
  progressDropped = 0;
  readonly heartbeats = new Tally();
  readonly logsDropped = new Tally();
  mrtrRounds = 0;
  lockEvents = 0;
  ended = false;

  constructor(
    readonly owner: Telemetry,
    readonly ctx: CallContext | undefined,
    readonly span: Span | undefined,
    /** Low-cardinality attributes for metrics (method, tool/prompt, protocol version, transport). */
    readonly metricAttrs: Attributes,
  ) {}

  /** Write the tallies onto the span (once, before it ends). */
  flush(): void {
    const span = this.span;
    if (span === undefined || this.ended) return;
    this.ended = true;
    this.progressSent.flush(span, 'tether.progress', 'tether.progress.sent');
    if (this.progressCoalesced > 0) span.setAttribute('tether.progress.coalesced', this.progressCoalesced);
    if (this.progressDropped > 0) span.setAttribute('tether.progress.dropped', this.progressDropped);
    this.heartbeats.flush(span, 'tether.heartbeat', 'tether.heartbeat.count');
    this.logsDropped.flush(span, 'tether.log.dropped', 'tether.log.dropped');
    if (this.mrtrRounds > 0) span.setAttribute('tether.mrtr.rounds', this.mrtrRounds);
  }
}

/**
 * The record of each call (or job) being traced, by its context. A view of a context
 * (`Object.create(ctx)`, what the v2 adapter hands tool callbacks) finds its call's record.
 */
const records = new WeakMap<object, CallRecord>();

export function recordOf(ctx: CallContext | undefined): CallRecord | undefined {
  if (ctx === undefined) return undefined;
  const r = records.get(ctx);
  if (r !== undefined) return r;
  const proto = Object.getPrototypeOf(ctx) as object | null;
  return proto !== null ? records.get(proto) : undefined;
}

export function setRecord(ctx: CallContext, record: CallRecord): void {
  records.set(ctx, record);
}

export function clearRecord(ctx: CallContext, record: CallRecord): void {
  if (records.get(ctx) === record) records.delete(ctx);
}
