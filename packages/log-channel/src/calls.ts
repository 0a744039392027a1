/**
 * Per-call logging: the call's level (its session's on 2025, its request's `_meta` on
 * 2026-07-28), the token bucket it spends (its session's; its own on 2026-07-28), the drops it
 * summarizes (mid-call at most once per `SUMMARY_INTERVAL_MS`, the last one before its response),
 * and the call's own logger (`ctx.log`).
 */
import {
  diagnostics,
  type CallContext,
  type LogEvent,
  type LogLevel,
  type Middleware,
  type OutboundEvent,
} from '@mcp-tether/core';
import { TokenBucket } from './bucket.js';
import { callInfo, messageOf, summaryLevel, summaryOf, type PrepareEntry } from './entry.js';
import { allows, isLogLevel, maxLevel } from './levels.js';
import { makeLogger, type Logger, type LoggerOps } from './logger.js';
import { LOG_LEVEL_META_KEY, SUMMARY_INTERVAL_MS, type ChannelSettings } from './options.js';
import type { Sessions } from './sessions.js';

/** Per-call state (set on the call once it logs). */
interface CallState {
  dropped: number;
  worst: LogLevel;
  /** The bucket this call spends: its session's on 2025 sessions, its own on 2026-07-28 (no sessions there). */
  bucket: TokenBucket | undefined;
  /** When the current run of drops began (ms), for the first mid-call summary. */
  since: number;
  lastSummaryAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Where (a property of the call, set only once the call logs) a call's rate-limit state is kept. */
const CALL_STATE = Symbol('mcp-tether.log-channel.call');

/** What the channel does with the log lines of calls. */
export class CallLogs {
  /**
   * @param origin the channel's middleware: a mid-call summary is emitted from it (so it passes
   *   only the layers outside the channel)
   */
  constructor(
    private readonly settings: ChannelSettings,
    private readonly sessions: Sessions,
    private readonly prepare: PrepareEntry,
    private readonly origin: () => Middleware,
  ) {}

  /** The minimum level for a call's messages right now. */
  minLevelFor(ctx: CallContext): LogLevel | 'off' {
    if (ctx.era === 'modern') {
      const v = ctx.meta[LOG_LEVEL_META_KEY];
      return isLogLevel(v) ? v : 'off';
    }
    return this.sessions.levelOf(ctx.host);
  }

  /** The call logger's operations: a log event into the call's event tap (the sink alone once the call is over). */
  private readonly ops: LoggerOps<CallContext> = {
    emit: (ctx, level, data, name) => {
      if (ctx.completed || ctx.abortReason !== undefined) {
        // Nothing may reach the wire after the response or a cancel; the operator still gets it.
        const { sink } = this.settings;
        if (sink) sink(this.prepare(level, name, data, callInfo(ctx)));
        return;
      }
      void ctx.emit(name === undefined ? { type: 'log', level, data } : { type: 'log', level, data, logger: name });
    },
    enabled: (ctx, level) => this.settings.sink !== undefined || allows(this.minLevelFor(ctx), level),
  };

  /** The call's logger (`ctx.log`, made when the call first reads it). */
  readonly loggerOf = (ctx: CallContext): Logger => makeLogger(this.ops, ctx, undefined);

  /**
   * A log event of the call: admitted (level, then bucket) it goes on as `notifications/message`
   * related to the call; dropped, it counts toward the call's summary. The sink gets it either way.
   */
  onLog(ctx: CallContext, event: LogEvent, next: (event: OutboundEvent) => Promise<void>): void | Promise<void> {
    const level = event.level;
    if (!isLogLevel(level)) return; // not a valid MCP level: nothing to send
    const { sink } = this.settings;
    let admitted = false;
    if (allows(this.minLevelFor(ctx), level)) {
      const cs = this.stateOf(ctx);
      if (!cs.bucket || cs.bucket.take()) admitted = true;
      else {
        if (cs.dropped === 0) cs.since = Date.now();
        cs.dropped++;
        if (diagnostics.logDropped.hasSubscribers)
          diagnostics.logDropped.publish({ ctx, count: 1, sessionId: ctx.sessionId, reason: 'rate-limit' });
        cs.worst = maxLevel(cs.worst, level);
        this.armTimer(ctx, cs);
      }
    }
    if (!admitted && !sink) return;
    const entry = this.prepare(level, event.logger, event.data, callInfo(ctx));
    if (sink) sink(entry);
    if (admitted) return next({ type: 'notification', notification: messageOf(entry) });
  }

  /**
   * A call ends: stop its summary timer; the one summary of what it lost goes out before its
   * response (it may exceed the bucket by one). A call that logged nothing costs nothing here.
   */
  readonly end = (ctx: CallContext): Promise<void> | undefined => {
    const cs = (ctx as unknown as Record<symbol, CallState | undefined>)[CALL_STATE];
    if (!cs) return undefined;
    if (cs.timer !== undefined) clearTimeout(cs.timer);
    cs.timer = undefined;
    return cs.dropped > 0 ? this.sendSummary(ctx, cs) : undefined;
  };

  private stateOf(ctx: CallContext): CallState {
    const slot = ctx as unknown as Record<symbol, CallState | undefined>;
    let cs = slot[CALL_STATE];
    if (!cs) {
      const { rate } = this.settings;
      const bucket =
        ctx.era === 'modern'
          ? rate
            ? new TokenBucket(rate.burst, rate.perSecond)
            : undefined
          : this.sessions.of(ctx.host).bucket;
      cs = { dropped: 0, worst: 'debug', bucket, since: 0, lastSummaryAt: -Infinity, timer: undefined };
      slot[CALL_STATE] = cs;
    }
    return cs;
  }

  /** Send (and reset) a call's drop summary, related to the call, if the call's level still wants it. */
  private sendSummary(ctx: CallContext, cs: CallState): Promise<void> {
    const level = summaryLevel(cs.worst);
    const n = summaryOf(cs.dropped, level);
    cs.dropped = 0;
    cs.worst = 'debug';
    cs.lastSummaryAt = Date.now();
    if (!allows(this.minLevelFor(ctx), level)) return Promise.resolve();
    return ctx.emit({ type: 'notification', notification: n }, this.origin());
  }

  private armTimer(ctx: CallContext, cs: CallState): void {
    const bucket = cs.bucket;
    if (cs.timer !== undefined || !bucket) return;
    const now = Date.now();
    const wait = Math.max(
      bucket.msUntilToken(),
      cs.lastSummaryAt + SUMMARY_INTERVAL_MS - now,
      cs.since + SUMMARY_INTERVAL_MS - now,
      0,
    );
    cs.timer = setTimeout(() => {
      cs.timer = undefined;
      if (cs.dropped === 0 || ctx.completed || ctx.abortReason !== undefined) return;
      if (!bucket.take()) return this.armTimer(ctx, cs); // due: retry as soon as a token accrues
      void this.sendSummary(ctx, cs);
    }, wait);
    cs.timer.unref?.();
  }
}
