/**
 * The log channel: per-call and server-wide loggers, per-session levels (`logging/setLevel`),
 * per-request levels (2026-07-28 `_meta`), a per-session (2026-07-28: per-request) token bucket
 * with a drop summary, a
 * local sink, and a redaction hook. Spec: `server/utilities/logging` (2025-06-18, 2025-11-25,
 * 2026-07-28).
 */
import {
  diagnostics,
  JsonRpcErrorCode,
  LOG_LEVELS,
  ProtocolError,
  type CallContext,
  type CallMethod,
  type LogLevel,
  type Middleware,
  type Notification,
  type RequestId,
  type ServerHost,
} from '@mcp-tether/core';
import { TokenBucket } from './bucket.js';
import { toJson } from './json.js';
import { isLogLevel, maxLevel, severity } from './levels.js';

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

/**
 * A logger with the 8 RFC 5424 levels. Each method takes any JSON-able `data` (objects, strings,
 * `Error`s — sent as `{ name, message }` — ...) and never throws or blocks: a message the client
 * did not ask for, or that the rate limit drops, is simply not sent (the local sink still gets it).
 */
export interface Logger {
  /** Logger name sent as `params.logger` (undefined: none). */
  readonly name: string | undefined;
  debug(data: unknown): void;
  info(data: unknown): void;
  notice(data: unknown): void;
  warning(data: unknown): void;
  error(data: unknown): void;
  critical(data: unknown): void;
  alert(data: unknown): void;
  emergency(data: unknown): void;
  /**
   * Log at a level chosen at run time.
   * @throws TypeError when `level` is not one of the 8 levels
   */
  log(level: LogLevel, data: unknown): void;
  /**
   * A logger whose messages carry `params.logger = name` (joined to this logger's name with a
   * dot: `child('db').child('pool')` is `db.pool`).
   * @throws TypeError when `name` is not a non-empty string
   */
  child(name: string): Logger;
  /**
   * True when a message at `level` would go somewhere: the local sink, or a client whose level
   * allows it (rate limit not considered). Use it to skip building expensive `data`.
   */
  enabled(level: LogLevel): boolean;
}

/** What a logger does, shared by every logger of one kind (per call, or server-wide); `c` is the call or nothing. */
interface LoggerOps<C> {
  emit(c: C, level: LogLevel, data: unknown, name: string | undefined): void;
  enabled(c: C, level: LogLevel): boolean;
}

/**
 * A {@link Logger}: a plain object of bound functions (they work detached, and a copy such as
 * `{ ...ctx.log }` keeps them).
 */
function makeLogger<C>(ops: LoggerOps<C>, c: C, name: string | undefined): Logger {
  const at = (level: LogLevel) => (data: unknown) => ops.emit(c, level, data, name);
  return {
    name,
    debug: at('debug'),
    info: at('info'),
    notice: at('notice'),
    warning: at('warning'),
    error: at('error'),
    critical: at('critical'),
    alert: at('alert'),
    emergency: at('emergency'),
    log: (level, data) => {
      if (!isLogLevel(level))
        throw new TypeError(
          `log-channel: unknown log level ${JSON.stringify(level)}; expected one of ${LOG_LEVELS.join(', ')}`,
        );
      ops.emit(c, level, data, name);
    },
    child: (child) => {
      if (typeof child !== 'string' || child === '')
        throw new TypeError('log-channel: child(name) needs a non-empty string');
      return makeLogger(ops, c, name === undefined ? child : `${name}.${child}`);
    },
    enabled: (level) => isLogLevel(level) && ops.enabled(c, level),
  };
}

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

/** Options of {@link logChannel}. */
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

/** The middleware returned by {@link logChannel}. */
export interface LogChannel extends Middleware {
  readonly name: 'log-channel';
  /**
   * Server-wide logger for messages not tied to a call: goes to every attached, initialized
   * session whose level allows it (as a session-wide notification: the GET stream on Streamable
   * HTTP), each under its own rate limit, and to the sink once. Share one `logChannel()` instance
   * between your per-session servers so that it reaches them all. Never sent to a 2026-07-28
   * request (no sessions there: a request gets only what its own call logs).
   */
  readonly logger: Logger;
}

/** Per-session (per attached server) state. */
interface Session {
  /** Level set by `logging/setLevel`; undefined until the client sets one. */
  level: LogLevel | undefined;
  bucket: TokenBucket | undefined;
  /** Server-wide messages dropped by the rate limit and not yet summarized. */
  dropped: number;
  worst: LogLevel;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Per-call state (in `ctx.state`). */
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
const WITHHELD = Object.freeze({ error: 'redaction failed; message withheld' });
const noop = () => {};

/**
 * Create the log channel middleware.
 *
 * ```ts
 * const logs = logChannel({ level: 'warning', sink: 'stderr' });
 * const server = tether(new McpServer({ name: 'x', version: '1' }), [logs]);
 * server.registerTool('job', { inputSchema: {} }, handler(async (_args, ctx) => {
 *   ctx.log.info({ step: 'start' });
 *   ctx.log.child('db').warning({ slowQueryMs: 1200 });
 *   return { content: [{ type: 'text', text: 'done' }] };
 * }));
 * logs.logger.notice('server-wide message');
 * ```
 *
 * Declares the `logging` capability, owns `logging/setLevel` per session (`{}` on success,
 * JSON-RPC `-32602` on an unknown level, the previous level kept), and turns log events of the
 * event tap into `notifications/message` related to the call (on Streamable HTTP they ride the
 * call's own POST stream). On 2026-07-28 requests the level comes from
 * `_meta["io.modelcontextprotocol/logLevel"]` (absent: no logs; unknown: `-32602`).
 * Spec: `server/utilities/logging`.
 *
 * @throws TypeError on invalid options
 */
export function logChannel(options: LogChannelOptions = {}): LogChannel {
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

  const sessions = new WeakMap<ServerHost, Session>();
  const hosts = new Set<ServerHost>();

  let warned = false;
  const sink: ((entry: LogEntry) => void) | undefined =
    sinkOption === undefined
      ? undefined
      : (entry) => {
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

  const sessionOf = (host: ServerHost): Session => {
    let s = sessions.get(host);
    if (!s) {
      s = {
        level: undefined,
        bucket: rate ? new TokenBucket(rate.burst, rate.perSecond) : undefined,
        dropped: 0,
        worst: 'debug',
        timer: undefined,
      };
      sessions.set(host, s);
    }
    return s;
  };

  /** The minimum level for a call's messages right now. */
  const minLevelFor = (ctx: CallContext): LogLevel | 'off' => {
    if (ctx.era === 'modern') {
      const v = ctx.meta[LOG_LEVEL_META_KEY];
      return isLogLevel(v) ? v : 'off';
    }
    return sessionOf(ctx.host).level ?? defaultLevel;
  };
  const allows = (min: LogLevel | 'off', level: LogLevel) => min !== 'off' && severity(level) >= severity(min);

  /** Build the entry that leaves the process: plain JSON, then redaction (fail closed). */
  const prepare = (level: LogLevel, logger: string | undefined, data: unknown, call: LogEntry['call']): LogEntry => {
    const entry: LogEntry = { level, data: toJson(data), time: Date.now() };
    if (logger !== undefined) entry.logger = logger;
    if (call) entry.call = call;
    if (!redact) return entry;
    try {
      const r = redact({ ...entry, ...(call && { call: { ...call } }) });
      if (typeof r === 'object' && r !== null) return { ...r, level };
    } catch {
      /* fall through: withhold */
    }
    const withheld: LogEntry = { level, logger: CHANNEL_LOGGER, data: { ...WITHHELD }, time: entry.time };
    if (call) withheld.call = call;
    return withheld;
  };

  const wireParams = (e: LogEntry) => {
    const params: Record<string, unknown> = { level: e.level };
    if (typeof e.logger === 'string') params.logger = e.logger;
    params.data = e.data === undefined ? null : e.data;
    return params;
  };
  const message = (e: LogEntry): Notification => ({ method: 'notifications/message', params: wireParams(e) });
  const summary = (dropped: number, worst: LogLevel): Notification => ({
    method: 'notifications/message',
    params: { level: maxLevel('warning', worst), logger: CHANNEL_LOGGER, data: { dropped } },
  });

  const callInfo = (ctx: CallContext): LogEntry['call'] => {
    const c: NonNullable<LogEntry['call']> = { method: ctx.method, name: ctx.name, requestId: ctx.requestId };
    if (ctx.sessionId !== undefined) c.sessionId = ctx.sessionId;
    return c;
  };

  const callStateOf = (ctx: CallContext): CallState => {
    const slot = ctx as unknown as Record<symbol, CallState | undefined>;
    let cs = slot[CALL_STATE];
    if (!cs) {
      const bucket =
        ctx.era === 'modern'
          ? rate
            ? new TokenBucket(rate.burst, rate.perSecond)
            : undefined
          : sessionOf(ctx.host).bucket;
      cs = { dropped: 0, worst: 'debug', bucket, since: 0, lastSummaryAt: -Infinity, timer: undefined };
      slot[CALL_STATE] = cs;
    }
    return cs;
  };

  // ---- per-call summaries ----
  /** Send (and reset) a call's drop summary, related to the call, if the call's level still wants it. */
  const sendCallSummary = (ctx: CallContext, cs: CallState): Promise<void> => {
    const n = summary(cs.dropped, cs.worst);
    cs.dropped = 0;
    cs.worst = 'debug';
    cs.lastSummaryAt = Date.now();
    if (!allows(minLevelFor(ctx), n.params!.level as LogLevel)) return Promise.resolve();
    return ctx.emit({ type: 'notification', notification: n }, channel);
  };
  /** A call ends: stop its summary timer; the one summary of what it lost goes out before its response (it may exceed the bucket by one). */
  const endCall = (ctx: CallContext): Promise<void> | undefined => {
    const cs = (ctx as unknown as Record<symbol, CallState | undefined>)[CALL_STATE];
    if (!cs) return undefined;
    if (cs.timer !== undefined) clearTimeout(cs.timer);
    cs.timer = undefined;
    return cs.dropped > 0 ? sendCallSummary(ctx, cs) : undefined;
  };
  const armCallTimer = (ctx: CallContext, cs: CallState) => {
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
      if (!bucket.take()) return armCallTimer(ctx, cs); // due: retry as soon as a token accrues
      void sendCallSummary(ctx, cs);
    }, wait);
    cs.timer.unref?.();
  };

  // ---- server-wide summaries ----
  /** `retry`: the summary is already due and only waits for a token. */
  const armSessionTimer = (host: ServerHost, s: Session, retry = false) => {
    if (s.timer !== undefined || !s.bucket) return;
    s.timer = setTimeout(
      () => {
        s.timer = undefined;
        if (s.dropped === 0 || !hosts.has(host)) return;
        if (!s.bucket!.take()) return armSessionTimer(host, s, true);
        const n = summary(s.dropped, s.worst);
        s.dropped = 0;
        s.worst = 'debug';
        if (allows(s.level ?? defaultLevel, n.params!.level as LogLevel)) host.notify(n).catch(noop);
      },
      retry ? s.bucket.msUntilToken() : Math.max(s.bucket.msUntilToken(), SUMMARY_INTERVAL_MS),
    );
    s.timer.unref?.();
  };

  // ---- loggers ----
  const callOps: LoggerOps<CallContext> = {
    emit: (ctx, level, data, name) => {
      if (ctx.completed || ctx.abortReason !== undefined) {
        // Nothing may reach the wire after the response or a cancel; the operator still gets it.
        if (sink) sink(prepare(level, name, data, callInfo(ctx)));
        return;
      }
      void ctx.emit(name === undefined ? { type: 'log', level, data } : { type: 'log', level, data, logger: name });
    },
    enabled: (ctx, level) => sink !== undefined || allows(minLevelFor(ctx), level),
  };
  const callLogger = (ctx: CallContext): Logger => makeLogger(callOps, ctx, undefined);

  const serverOps: LoggerOps<undefined> = {
    emit: (_none, level, data, name) => {
      const targets: ServerHost[] = [];
      for (const host of hosts) {
        if (host.clientCapabilities() === undefined) continue; // not initialized (or not connected) yet
        const s = sessionOf(host);
        if (!allows(s.level ?? defaultLevel, level)) continue;
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
          armSessionTimer(host, s);
          continue;
        }
        targets.push(host);
      }
      if (targets.length === 0 && !sink) return;
      const entry = prepare(level, name, data, undefined);
      if (sink) sink(entry);
      const n = message(entry);
      for (const host of targets) host.notify(n).catch(noop);
    },
    enabled: (_none, level) => {
      if (sink) return true;
      for (const host of hosts)
        if (host.clientCapabilities() !== undefined && allows(sessionOf(host).level ?? defaultLevel, level))
          return true;
      return false;
    },
  };
  const serverLogger: Logger = makeLogger(serverOps, undefined, undefined);

  const channel: LogChannel = {
    name: 'log-channel',
    logger: serverLogger,

    setup(host) {
      host.registerCapabilities({ logging: {} });
      const s = sessionOf(host);
      hosts.add(host);
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
        hosts.delete(host);
        if (s.timer !== undefined) clearTimeout(s.timer);
        s.timer = undefined;
      });
    },

    // The call's logger is made when the call first reads `ctx.log`.
    fields: { log: callLogger },

    // Only 2026-07-28 requests need this layer (their level comes per request); others skip it.
    when: (ctx) => ctx.era === 'modern',
    handle(ctx, next) {
      if (ctx.era !== 'modern') return next(); // reached without `when` (by hand)
      // A 2026-07-28 server instance has no session and no session-wide stream: the server-wide
      // logger never targets it (the SDK would drop such a notification anyway; this keeps its
      // bucket and summary timer out of it too). An instance's era never changes.
      hosts.delete(ctx.host);
      const v = ctx.meta[LOG_LEVEL_META_KEY];
      if (v !== undefined && !isLogLevel(v)) {
        return Promise.reject(
          new ProtocolError(
            JsonRpcErrorCode.InvalidParams,
            `Invalid _meta["${LOG_LEVEL_META_KEY}"] ${JSON.stringify(v)}: expected one of ${LOG_LEVELS.join(', ')}`,
            { level: v, expected: [...LOG_LEVELS] },
          ),
        );
      }
      return next();
    },

    // When the call's chain settled: its summary timer stops, and the one summary of what it lost
    // goes out before its response. A call that logged nothing costs nothing here.
    onEnd: endCall,

    onEvent(ctx, event, next) {
      if (event.type !== 'log') return next(event);
      const level = event.level;
      if (!isLogLevel(level)) return; // not a valid MCP level: nothing to send
      let admitted = false;
      if (allows(minLevelFor(ctx), level)) {
        const cs = callStateOf(ctx);
        if (!cs.bucket || cs.bucket.take()) admitted = true;
        else {
          if (cs.dropped === 0) cs.since = Date.now();
          cs.dropped++;
          if (diagnostics.logDropped.hasSubscribers)
            diagnostics.logDropped.publish({ ctx, count: 1, sessionId: ctx.sessionId, reason: 'rate-limit' });
          cs.worst = maxLevel(cs.worst, level);
          armCallTimer(ctx, cs);
        }
      }
      if (!admitted && !sink) return;
      const entry = prepare(level, event.logger, event.data, callInfo(ctx));
      if (sink) sink(entry);
      if (admitted) return next({ type: 'notification', notification: message(entry) });
    },
  };
  return channel;
}
