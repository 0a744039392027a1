/**
 * The channel's options: their types, defaults and constants, and their validation (a clear
 * `TypeError` at `logChannel()`), resolved once into what the channel's parts read.
 */
import { LOG_LEVELS, type CallMethod, type LogLevel, type RequestId } from '@mcp-tether/core';
import { isLogLevel } from './levels.js';

/** The `_meta` key that carries a 2026-07-28 request's log level. */
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';
/** Logger name of the channel's own messages (the drop summary, a withheld message). */
export const CHANNEL_LOGGER = 'log-channel';
/** Level a 2025-era session gets before it sends `logging/setLevel`. */
export const DEFAULT_LEVEL: LogLevel = 'info';
/** Default token bucket (per session; per request on 2026-07-28): 100 messages at once, then 20 per second. */
export const DEFAULT_RATE_LIMIT: Readonly<RateLimit> = Object.freeze({ burst: 100, perSecond: 20 });
/** While a call keeps dropping, at most one summary per this many ms goes out mid-call (the last one goes out before the response). */
export const SUMMARY_INTERVAL_MS = 1_000;

/** Token bucket of one session: at most `burst` messages at once, refilled at `perSecond` messages per second. */
export interface RateLimit {
  /** Bucket size, in messages (integer ≥ 1). */
  burst: number;
  /** Refill rate, in messages per second (> 0). */
  perSecond: number;
}

/** One log message as the local sink and the redaction hook see it. */
export interface LogEntry {
  level: LogLevel;
  /** Logger name, when the message has one. */
  logger?: string;
  /** The message's data, already turned into plain JSON. */
  data: unknown;
  /** `Date.now()` when logged, in ms since the epoch. */
  time: number;
  /** The call that logged it; absent for the server-wide logger. */
  call?: { method: CallMethod; name: string; requestId: RequestId; sessionId?: string };
}

/** Options of `logChannel()`. */
export interface LogChannelOptions {
  /**
   * Minimum level sent to a 2025-era session before it sends `logging/setLevel`.
   * `'off'`: nothing until the client asks. Default {@link DEFAULT_LEVEL} (`'info'`).
   * (2026-07-28 requests ignore it: no `_meta` level, no logs.)
   */
  level?: LogLevel | 'off';
  /**
   * Token bucket per session (2025) or per request (2026-07-28, which has no sessions), or `false`
   * for none. Default {@link DEFAULT_RATE_LIMIT} (burst 100, 20 per second).
   */
  rateLimit?: RateLimit | false;
  /**
   * Local sink that receives every message, whatever the client's level and the rate limit:
   * `'stderr'` writes one JSON line per entry to `process.stderr`; a function receives each entry.
   * Errors it throws are swallowed (one process warning).
   */
  sink?: 'stderr' | ((entry: LogEntry) => void);
  /**
   * Applied to every entry before it leaves the process (wire and sink), e.g. to mask secrets.
   * Gets a fresh entry it may change and return. Changing `level` has no effect. If it throws or
   * returns a non-object, the message is withheld: `{ error: 'redaction failed; message withheld' }`
   * is sent instead (fail closed).
   */
  redact?: (entry: LogEntry) => LogEntry;
}

/** The options, checked, with their defaults. */
export interface ChannelSettings {
  /** A 2025 session's level before it sends `logging/setLevel`. */
  readonly defaultLevel: LogLevel | 'off';
  readonly rate: Readonly<RateLimit> | false;
  /** The local sink; it never throws (the first error it swallows is one process warning). */
  readonly sink: ((entry: LogEntry) => void) | undefined;
  readonly redact: ((entry: LogEntry) => LogEntry) | undefined;
}

/**
 * Check `options` and fill in the defaults.
 * @throws TypeError on an invalid level, rate limit, sink or redaction hook
 */
export function resolveOptions(options: LogChannelOptions): ChannelSettings {
  const defaultLevel = options.level ?? DEFAULT_LEVEL;
  if (defaultLevel !== 'off' && !isLogLevel(defaultLevel)) {
    throw new TypeError(
      `log-channel: options.level must be one of ${LOG_LEVELS.join(', ')} or 'off' (got ${JSON.stringify(defaultLevel)})`,
    );
  }
  const rate = options.rateLimit === undefined ? DEFAULT_RATE_LIMIT : options.rateLimit;
  if (rate !== false) {
    if (
      typeof rate !== 'object' ||
      rate === null ||
      !Number.isInteger(rate.burst) ||
      rate.burst < 1 ||
      !(typeof rate.perSecond === 'number' && Number.isFinite(rate.perSecond) && rate.perSecond > 0)
    ) {
      throw new TypeError(
        'log-channel: options.rateLimit must be false or { burst: integer ≥ 1, perSecond: number > 0 }',
      );
    }
  }
  const sinkOption = options.sink;
  if (sinkOption !== undefined && sinkOption !== 'stderr' && typeof sinkOption !== 'function') {
    throw new TypeError("log-channel: options.sink must be 'stderr' or a function");
  }
  const redact = options.redact;
  if (redact !== undefined && typeof redact !== 'function')
    throw new TypeError('log-channel: options.redact must be a function');
  return { defaultLevel, rate, sink: sinkOption === undefined ? undefined : safeSink(sinkOption), redact };
}

/** The sink, made safe: an error it throws is swallowed (the first one becomes a process warning). */
function safeSink(sinkOption: 'stderr' | ((entry: LogEntry) => void)): (entry: LogEntry) => void {
  let warned = false;
  return (entry) => {
    try {
      if (sinkOption === 'stderr') process.stderr.write(`${JSON.stringify(entry)}\n`);
      else sinkOption(entry);
    } catch (err) {
      if (!warned) {
        warned = true;
        process.emitWarning(
          `log-channel: the sink threw (${(err as Error)?.message ?? String(err)}); further sink errors are ignored silently`,
        );
      }
    }
  };
}
