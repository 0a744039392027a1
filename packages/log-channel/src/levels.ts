import { LOG_LEVELS, type LogLevel } from '@mcp-tether/core';

/** Severity rank of a level: `debug` = 0 … `emergency` = 7. */
export function severity(level: LogLevel): number {
  return LOG_LEVELS.indexOf(level);
}

/** True when `value` is one of the 8 RFC 5424 level strings MCP uses (exact spelling). */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** The more severe of two levels. */
export function maxLevel(a: LogLevel, b: LogLevel): LogLevel {
  return severity(a) >= severity(b) ? a : b;
}

/** True when a message at `level` passes the minimum `min` (`'off'`: nothing passes). */
export function allows(min: LogLevel | 'off', level: LogLevel): boolean {
  return min !== 'off' && severity(level) >= severity(min);
}
