/**
 * @mcp-tether/log-channel — MCP logging (`notifications/message`) for the operator, never for the
 * model: a per-call logger on the context, a server-wide logger, per-session levels
 * (`logging/setLevel`), per-request levels on 2026-07-28, a per-session rate limit with a drop
 * summary, an optional local sink and a redaction hook. Spec: `server/utilities/logging`.
 * @packageDocumentation
 */
import { currentCall } from '@mcp-tether/core';
import type { Logger } from './channel.js';

export {
  logChannel,
  CHANNEL_LOGGER,
  DEFAULT_LEVEL,
  DEFAULT_RATE_LIMIT,
  LOG_LEVEL_META_KEY,
  SUMMARY_INTERVAL_MS,
  type LogChannel,
  type LogChannelOptions,
  type LogEntry,
  type Logger,
  type RateLimit,
} from './channel.js';
export { isLogLevel } from './levels.js';
export { LOG_LEVELS, type LogLevel } from '@mcp-tether/core';

declare module '@mcp-tether/core' {
  interface CallContext {
    /**
     * The call's logger (installed by `logChannel()`): `ctx.log.info(data)`,
     * `ctx.log.child('db').warning(data)`. Messages go out as `notifications/message` related to
     * this call, filtered by the session's level (2025) or the request's `_meta` level (2026-07-28),
     * under the session's rate limit. Never part of the tool result.
     */
    readonly log: Logger;
  }
}

/**
 * The logger of the call the current code runs in (through AsyncLocalStorage), for code that has
 * no `ctx` at hand. Same object as `ctx.log`.
 * @throws Error outside a call, or when the server has no `logChannel()` middleware
 */
export function callLogger(): Logger {
  const ctx = currentCall();
  if (!ctx)
    throw new Error(
      'log-channel: callLogger() was called outside a call (use it inside a tool, prompt or resource handler of a server wrapped with tether())',
    );
  const log = (ctx as { log?: Logger }).log;
  if (!log)
    throw new Error('log-channel: this server has no logChannel() middleware (tether(server, [logChannel(), ...]))');
  return log;
}
