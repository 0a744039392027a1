/**
 * Logs to a sink: `notifications/message` at or above the level go to `onLog`, never into results.
 */
import { LOG_LEVELS, type LogLevel } from '@mcp-tether/core';
import type { Install } from './handlers.js';
import type { LogEntry } from './types.js';

const LEVEL_RANK = new Map<string, number>(LOG_LEVELS.map((l, i) => [l, i]));

/** @throws {RangeError} for a level that is not one of RFC 5424's eight */
export function checkLevel(level: string): asserts level is LogLevel {
  if (!LEVEL_RANK.has(level))
    throw new RangeError(`setLogLevel: unknown level ${JSON.stringify(level)} (one of ${LOG_LEVELS.join(', ')})`);
}

/** Installs the `notifications/message` handler that hands entries at or above `level()` to `onLog`. */
export function logSink(install: Install, onLog: (entry: LogEntry) => void, level: () => LogLevel): void {
  install('notifications/message', (pass) => (notification, ...rest) => {
    const p = notification?.params as { level?: unknown; logger?: unknown; data?: unknown } | undefined;
    const rank = typeof p?.level === 'string' ? LEVEL_RANK.get(p.level) : undefined;
    if (rank !== undefined && rank >= LEVEL_RANK.get(level())!) {
      onLog({
        level: p!.level as LogLevel,
        ...(typeof p!.logger === 'string' && { logger: p!.logger }),
        data: p!.data,
      });
    }
    return pass(notification, ...rest);
  });
}
