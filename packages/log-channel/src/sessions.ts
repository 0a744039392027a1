/**
 * The channel's 2025 sessions (one per attached server): the level each set with
 * `logging/setLevel`, its token bucket, and the server-wide logger that reaches them all, each
 * under its own rate limit (drops summarized per session, at most one summary per
 * `SUMMARY_INTERVAL_MS`).
 */
import {
  diagnostics,
  JsonRpcErrorCode,
  LOG_LEVELS,
  ProtocolError,
  type LogLevel,
  type ServerHost,
} from '@mcp-tether/core';
import { TokenBucket } from './bucket.js';
import { messageOf, summaryLevel, summaryOf, type PrepareEntry } from './entry.js';
import { allows, isLogLevel, maxLevel } from './levels.js';
import type { LoggerOps } from './logger.js';
import { LOG_LEVEL_META_KEY, SUMMARY_INTERVAL_MS, type ChannelSettings } from './options.js';

/** Per-session (per attached server) state. */
export interface Session {
  /** Level set by `logging/setLevel`; undefined until the client sets one. */
  level: LogLevel | undefined;
  bucket: TokenBucket | undefined;
  /** Server-wide messages dropped by the rate limit and not yet summarized. */
  dropped: number;
  worst: LogLevel;
  timer: ReturnType<typeof setTimeout> | undefined;
}

const noop = () => {};

/** Every server the channel is attached to, and what the server-wide logger does with them. */
export class Sessions {
  /** Attached servers the server-wide logger may reach (2026-07-28 instances are forgotten). */
  private readonly hosts = new Set<ServerHost>();
  private readonly sessions = new WeakMap<ServerHost, Session>();

  constructor(
    private readonly settings: ChannelSettings,
    private readonly prepare: PrepareEntry,
  ) {}

  /** The state of `host`'s session (made on first use). */
  of(host: ServerHost): Session {
    let s = this.sessions.get(host);
    if (!s) {
      const { rate } = this.settings;
      s = {
        level: undefined,
        bucket: rate ? new TokenBucket(rate.burst, rate.perSecond) : undefined,
        dropped: 0,
        worst: 'debug',
        timer: undefined,
      };
      this.sessions.set(host, s);
    }
    return s;
  }

  /** The minimum level of `host`'s session now: the one it set, else the channel's default. */
  levelOf(host: ServerHost): LogLevel | 'off' {
    return this.of(host).level ?? this.settings.defaultLevel;
  }

  /**
   * Attach to a server: the `logging` capability, `logging/setLevel` for its session (`{}`;
   * `-32602` on an unknown level, the previous one kept; `-32601` on 2026-07-28), and its session
   * forgotten when it closes.
   */
  attach(host: ServerHost): void {
    host.registerCapabilities({ logging: {} });
    const s = this.of(host);
    this.hosts.add(host);
    host.handleRequest('logging/setLevel', (params, info) => {
      if (info.era === 'modern') {
        throw new ProtocolError(
          JsonRpcErrorCode.MethodNotFound,
          `logging/setLevel does not exist in protocol 2026-07-28; send _meta["${LOG_LEVEL_META_KEY}"] with each request instead`,
        );
      }
      const level = params.level;
      if (!isLogLevel(level)) {
        throw new ProtocolError(
          JsonRpcErrorCode.InvalidParams,
          `Invalid log level ${JSON.stringify(level)}: expected one of ${LOG_LEVELS.join(', ')}`,
          { level: level ?? null, expected: [...LOG_LEVELS] },
        );
      }
      s.level = level;
      return {};
    });
    host.onClose(() => {
      this.hosts.delete(host);
      if (s.timer !== undefined) clearTimeout(s.timer);
      s.timer = undefined;
    });
  }

  /** `host` serves 2026-07-28 requests: no session, never a target of the server-wide logger. */
  forget(host: ServerHost): void {
    this.hosts.delete(host);
  }

  /** The server-wide logger's operations: every initialized session whose level allows it, and the sink once. */
  readonly ops: LoggerOps<undefined> = {
    emit: (_none, level, data, name) => {
      const { sink } = this.settings;
      const targets: ServerHost[] = [];
      for (const host of this.hosts) {
        if (host.clientCapabilities() === undefined) continue; // not initialized (or not connected) yet
        const s = this.of(host);
        if (!allows(s.level ?? this.settings.defaultLevel, level)) continue;
        if (s.bucket && !s.bucket.take()) {
          s.dropped++;
          if (diagnostics.logDropped.hasSubscribers)
            diagnostics.logDropped.publish({
              ctx: undefined,
              count: 1,
              sessionId: host.sessionId(),
              reason: 'rate-limit',
            });
          s.worst = maxLevel(s.worst, level);
          this.armTimer(host, s);
          continue;
        }
        targets.push(host);
      }
      if (targets.length === 0 && !sink) return;
      const entry = this.prepare(level, name, data, undefined);
      if (sink) sink(entry);
      const n = messageOf(entry);
      for (const host of targets) host.notify(n).catch(noop);
    },
    enabled: (_none, level) => {
      if (this.settings.sink) return true;
      for (const host of this.hosts)
        if (host.clientCapabilities() !== undefined && allows(this.levelOf(host), level)) return true;
      return false;
    },
  };

  /** Arm a session's summary timer; `retry`: the summary is already due and only waits for a token. */
  private armTimer(host: ServerHost, s: Session, retry = false): void {
    const bucket = s.bucket;
    if (s.timer !== undefined || !bucket) return;
    s.timer = setTimeout(
      () => {
        s.timer = undefined;
        if (s.dropped === 0 || !this.hosts.has(host)) return;
        if (!bucket.take()) return this.armTimer(host, s, true);
        const level = summaryLevel(s.worst);
        const n = summaryOf(s.dropped, level);
        s.dropped = 0;
        s.worst = 'debug';
        if (allows(s.level ?? this.settings.defaultLevel, level)) host.notify(n).catch(noop);
      },
      retry ? bucket.msUntilToken() : Math.max(bucket.msUntilToken(), SUMMARY_INTERVAL_MS),
    );
    s.timer.unref?.();
  }
}
