/**
 * The log channel: per-call and server-wide loggers, per-session levels (`logging/setLevel`),
 * per-request levels (2026-07-28 `_meta`), a per-session (2026-07-28: per-request) token bucket
 * with a drop summary, a local sink, and a redaction hook. Spec: `server/utilities/logging`
 * (2025-06-18, 2025-11-25, 2026-07-28). This file assembles the parts: options (`options.ts`),
 * entries (`entry.ts`), loggers (`logger.ts`), sessions (`sessions.ts`), calls (`calls.ts`).
 */
import { JsonRpcErrorCode, LOG_LEVELS, ProtocolError, type Middleware } from '@mcp-tether/core';
import { CallLogs } from './calls.js';
import { entryBuilder } from './entry.js';
import { isLogLevel } from './levels.js';
import { makeLogger, type Logger } from './logger.js';
import { LOG_LEVEL_META_KEY, resolveOptions, type LogChannelOptions } from './options.js';
import { Sessions } from './sessions.js';

export type { Logger } from './logger.js';
export {
  CHANNEL_LOGGER,
  DEFAULT_LEVEL,
  DEFAULT_RATE_LIMIT,
  LOG_LEVEL_META_KEY,
  SUMMARY_INTERVAL_MS,
  type LogChannelOptions,
  type LogEntry,
  type RateLimit,
} from './options.js';

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
  const settings = resolveOptions(options);
  const prepare = entryBuilder(settings.redact);
  const sessions = new Sessions(settings, prepare);
  const calls: CallLogs = new CallLogs(settings, sessions, prepare, () => channel);

  const channel: LogChannel = {
    name: 'log-channel',
    logger: makeLogger(sessions.ops, undefined, undefined),

    setup(host) {
      sessions.attach(host);
    },

    // The call's logger is made when the call first reads `ctx.log`.
    fields: { log: calls.loggerOf },

    // Only 2026-07-28 requests need this layer (their level comes per request); others skip it.
    when: (ctx) => ctx.era === 'modern',
    handle(ctx, next) {
      if (ctx.era !== 'modern') return next(); // reached without `when` (by hand)
      // A 2026-07-28 server instance has no session and no session-wide stream: the server-wide
      // logger never targets it (the SDK would drop such a notification anyway; this keeps its
      // bucket and summary timer out of it too). An instance's era never changes.
      sessions.forget(ctx.host);
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
    onEnd: calls.end,

    onEvent(ctx, event, next) {
      if (event.type !== 'log') return next(event);
      return calls.onLog(ctx, event, next);
    },
  };
  return channel;
}
