/** The {@link Logger} shape, and the one way every logger (per call, server-wide) is made. */
import { LOG_LEVELS, type LogLevel } from '@mcp-tether/core';
import { isLogLevel } from './levels.js';

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
export interface LoggerOps<C> {
  emit(c: C, level: LogLevel, data: unknown, name: string | undefined): void;
  enabled(c: C, level: LogLevel): boolean;
}

/**
 * A {@link Logger}: a plain object of bound functions (they work detached, and a copy such as
 * `{ ...ctx.log }` keeps them).
 */
export function makeLogger<C>(ops: LoggerOps<C>, c: C, name: string | undefined): Logger {
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
