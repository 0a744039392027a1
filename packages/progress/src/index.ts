/**
 * @mcp-tether/progress — progress events for tool handlers, turned into throttled, strictly
 * increasing `notifications/progress` on the call's own stream (spec `basic/utilities/progress`).
 * @packageDocumentation
 */
import {
  diagnostics,
  progressEvent,
  type CallContext,
  type CallResult,
  type Middleware,
  type Next,
  type NotificationEvent,
  type OutboundEvent,
  type ProgressEvent,
} from '@mcp-tether/core';

/** The explicit form of a progress report. */
export interface ProgressReport {
  /** Amount done, in the unit of `total` (any finite number; MCP allows floats). */
  progress: number;
  /** Total amount of work, when known (same unit as `progress`). Omit it when unknown. */
  total?: number;
  /** Human-readable status for the user, e.g. `"rows loaded"`. */
  message?: string;
}

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * Report progress from a plain async handler (installed by {@link progressMiddleware}).
     * `ctx.progress(percent, message?)` reports `percent` of 100; `ctx.progress({ progress, total?, message? })`
     * reports in your own unit. Resolves once the report was sent, throttled or dropped; never
     * rejects. Without a progress token on the request it does nothing (and costs nothing).
     * @throws TypeError when the argument is neither a number nor a report object
     */
    progress(percent: number, message?: string): Promise<void>;
    progress(report: ProgressReport): Promise<void>;
  }
}

/**
 * Make a progress event to `yield` from a generator handler (or pass to `ctx.emit`).
 *
 * - `progress(percent, message?)`: `percent` of 100 (e.g. `progress(30, 'rows loaded')`).
 * - `progress({ progress, total?, message? })`: your own unit (e.g. `{ progress: 420, total: 12000 }`).
 *
 * The event only reaches the client through {@link progressMiddleware}, and only when the request
 * carried `_meta.progressToken`. Non-finite, non-increasing or above-`total` values are dropped
 * there (never rewritten), so it is safe to report whatever your loop computes.
 * @throws TypeError when the argument is neither a number nor a report object
 */
export function progress(percent: number, message?: string): ProgressEvent;
export function progress(report: ProgressReport): ProgressEvent;
export function progress(a: number | ProgressReport, message?: string): ProgressEvent {
  if (typeof a === 'number') return progressEvent(a, 100, typeof message === 'string' ? message : undefined);
  if (typeof a === 'object' && a !== null && typeof a.progress === 'number') {
    return progressEvent(
      a.progress,
      typeof a.total === 'number' ? a.total : undefined,
      typeof a.message === 'string' ? a.message : undefined,
    );
  }
  throw new TypeError(
    `mcp-tether/progress: progress() takes (percent: number, message?: string) or ({ progress: number, total?: number, message?: string }), got ${describe(a)}`,
  );
}

/** Options of {@link progressMiddleware}. */
export interface ProgressOptions {
  /**
   * Minimum time between two notifications of one call, in ms. Default 200. `0` turns the time
   * rule off. The first value of a call always goes out at once.
   */
  minIntervalMs?: number;
  /**
   * Minimum rise of `progress` between two notifications, in the unit of `total`. A number, or a
   * function of the report's `total` (undefined when unknown). Default: 1% of `total`, and `0`
   * (time alone) when there is no `total`. `0` turns the delta rule off.
   */
  minDelta?: number | ((total: number | undefined) => number);
}

const KEY = Symbol('mcp-tether.progress');
const RESOLVED: Promise<void> = Promise.resolve();
const defaultMinDelta = (total: number | undefined) => (total === undefined ? 0 : Math.abs(total) * 0.01);

/** `ctx.progress` when the request has no progress token: validates, sends nothing, allocates nothing. */
function inertProgress(a: number | ProgressReport, _message?: string): Promise<void> {
  if (typeof a !== 'number' && (typeof a !== 'object' || a === null || typeof a.progress !== 'number')) {
    progress(a as unknown as number); // throws the TypeError
  }
  return RESOLVED;
}

/**
 * The progress middleware: turns `progress` events (yielded by generator handlers, or reported
 * with `ctx.progress(...)`) into MCP `notifications/progress`.
 *
 * - Only when the request carried `_meta.progressToken` (echoed exactly by core, `0` and any
 *   string included). Without one: nothing is sent, nothing is allocated, handlers work as usual.
 * - Throttle per call: a value goes out when at least `minIntervalMs` passed since this
 *   middleware's last send AND it rose at least `minDelta` since then. The first value goes out at
 *   once. A held-back value goes out when both rules allow it (a short unref'd timer per call, only
 *   while a value is held back), and the latest value still unsent is flushed after the handler
 *   returns, before the result.
 * - Values that are not finite, not above the last value reported or sent, or above `total` are
 *   dropped, never rewritten.
 * - Nothing is sent after the response or after the call was aborted (cancel, disconnect).
 * - Notifications are related to the request: on Streamable HTTP (SSE mode) they ride the call's
 *   own POST stream. In JSON-response mode (`enableJsonResponse`) there is no channel for them.
 *
 * Put it inside (after) `heartbeat()` in the list; the order with other middlewares is free.
 * @throws RangeError when an option is not a finite number ≥ 0 (or a function for `minDelta`)
 */
export function progressMiddleware(options: ProgressOptions = {}): Middleware {
  const minIntervalMs = options.minIntervalMs ?? 200;
  if (typeof minIntervalMs !== 'number' || !(minIntervalMs >= 0) || !Number.isFinite(minIntervalMs)) {
    throw new RangeError(
      `mcp-tether/progress: minIntervalMs must be a finite number of ms >= 0, got ${describe(options.minIntervalMs)}`,
    );
  }
  const md = options.minDelta;
  let minDelta: (total: number | undefined) => number;
  if (md === undefined) minDelta = defaultMinDelta;
  else if (typeof md === 'function') minDelta = md;
  else if (typeof md === 'number' && md >= 0 && Number.isFinite(md)) minDelta = () => md;
  else
    throw new RangeError(
      `mcp-tether/progress: minDelta must be a finite number >= 0 or a function of total, got ${describe(md)}`,
    );

  const self: Middleware = {
    name: 'progress',
    // `ctx.progress`, made on first read: inert without a token; with one, an event through the
    // chain (this layer's onEvent throttles it once its handle ran; before that it is dropped).
    fields: {
      progress: (ctx) =>
        ctx.progressToken === undefined
          ? inertProgress
          : (a: number | ProgressReport, message?: string) => ctx.emit(progress(a as number, message)),
    },
    // No token, nothing to throttle: the call skips this layer (no extra promise).
    when: (ctx) => ctx.progressToken !== undefined,
    handle: (ctx, next) => (ctx.progressToken === undefined ? next() : withToken(ctx, next)),
    onEvent(ctx, event, next) {
      if (event.type !== 'progress') return next(event);
      const state = ctx.state.get(KEY) as CallProgress | undefined;
      if (!state) return; // no token (or the call never reached this middleware): dropped
      return state.offer(event, next);
    },
  };
  const withToken = async (ctx: CallContext, next: Next): Promise<CallResult> => {
    let state = ctx.state.get(KEY) as CallProgress | undefined;
    if (!state) {
      state = new CallProgress(ctx, self, minIntervalMs, minDelta);
      ctx.state.set(KEY, state);
    }
    try {
      const result = await next();
      await state.flush();
      return result;
    } finally {
      state.stopTimer();
    }
  };
  return self;
}

/** Per-call throttle state. Lives in `ctx.state`, never on the middleware. */
class CallProgress {
  /** Last value this middleware forwarded. */
  private lastValue: number | undefined = undefined;
  /** `performance.now()` of the last forward. */
  private lastAt = 0;
  /** The latest valid value held back by the throttle. */
  private pending: ProgressEvent | undefined = undefined;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(
    private readonly ctx: CallContext,
    private readonly self: Middleware,
    private readonly minIntervalMs: number,
    private readonly minDelta: (total: number | undefined) => number,
  ) {}

  /** A progress event arrives: drop it, hold it back, or forward it as a notification. */
  offer(e: ProgressEvent, forward: (e: OutboundEvent) => Promise<void>): Promise<void> | undefined {
    const v = e.progress;
    const total = e.total;
    if (
      typeof v !== 'number' ||
      !Number.isFinite(v) ||
      (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total) || v > total)) ||
      // Strictly above what was reported and held back, what this middleware forwarded, and what
      // is on the wire (another middleware, e.g. a heartbeat, may have sent a value since).
      (this.pending !== undefined && v <= this.pending.progress) ||
      (this.lastValue !== undefined && v <= this.lastValue) ||
      (this.ctx.lastProgress !== undefined && v <= this.ctx.lastProgress.progress)
    ) {
      if (diagnostics.progress.hasSubscribers) this.publish('dropped', e);
      return;
    }
    const now = performance.now();
    const held = this.pending;
    if (
      this.lastValue === undefined ||
      (now - this.lastAt >= this.minIntervalMs && v - this.lastValue >= this.delta(total))
    ) {
      this.pending = undefined;
      if (held !== undefined && diagnostics.progress.hasSubscribers) this.publish('coalesced', held);
      return this.send(e, forward, now);
    }
    // A value held back and replaced by a later one never goes out on its own: coalesced.
    if (held !== undefined && diagnostics.progress.hasSubscribers) this.publish('coalesced', held);
    this.pending = e;
    this.arm(now);
    return;
  }

  private publish(kind: 'coalesced' | 'dropped', e: ProgressEvent): void {
    diagnostics.progress.publish({ ctx: this.ctx, kind, progress: e.progress, total: e.total, source: 'progress' });
  }

  /** Send the value still held back, whatever the throttle says (the handler has returned). */
  flush(): Promise<void> {
    this.stopTimer();
    const p = this.pending;
    if (!p) return RESOLVED;
    this.pending = undefined;
    return this.send(p, (n) => this.ctx.emit(n, this.self), performance.now());
  }

  stopTimer(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private delta(total: number | undefined): number {
    const d = this.minDelta(total);
    return typeof d === 'number' && Number.isFinite(d) ? d : 0;
  }

  private send(e: ProgressEvent, forward: (e: OutboundEvent) => Promise<void>, now: number): Promise<void> {
    this.lastValue = e.progress;
    this.lastAt = now;
    const params: { progress: number; total?: number; message?: string } = { progress: e.progress };
    if (e.total !== undefined) params.total = e.total;
    if (e.message !== undefined) params.message = e.message;
    const n: NotificationEvent = { type: 'notification', notification: { method: 'notifications/progress', params } };
    return forward(n);
  }

  /** Trailing edge: send the held-back value once both rules allow it, if the handler goes quiet. */
  private arm(now: number): void {
    if (this.timer !== undefined || this.minIntervalMs === 0) return;
    const p = this.pending!;
    // A value that is held back by the delta rule stays back until a larger one (or the flush).
    if (this.lastValue !== undefined && p.progress - this.lastValue < this.delta(p.total)) return;
    const wait = Math.max(1, Math.ceil(this.lastAt + this.minIntervalMs - now));
    this.timer = setTimeout(() => this.fire(), wait);
    this.timer.unref?.();
  }

  private fire(): void {
    this.timer = undefined;
    const p = this.pending;
    const ctx = this.ctx;
    if (!p || ctx.completed || ctx.abortReason !== undefined) return;
    const now = performance.now();
    // A timer armed before a later send may wake early, or find a value the delta rule holds.
    if (this.lastValue !== undefined && p.progress - this.lastValue < this.delta(p.total)) return;
    if (now - this.lastAt < this.minIntervalMs) {
      this.arm(now);
      return;
    }
    const sent = ctx.lastProgress?.progress;
    this.pending = undefined;
    if (sent !== undefined && p.progress <= sent) {
      // overtaken on the wire meanwhile
      if (diagnostics.progress.hasSubscribers) this.publish('dropped', p);
      return;
    }
    void this.send(p, (n) => ctx.emit(n, this.self), now);
  }
}

function describe(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object' && v !== null)
    return Array.isArray(v) ? 'an array' : 'an object without a numeric progress';
  return String(v);
}
