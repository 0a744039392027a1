/**
 * What leaves the process: a message as a {@link LogEntry} (plain JSON, then the redaction hook,
 * failing closed) and as the `notifications/message` the client gets, and the drop summary.
 */
import type { CallContext, LogLevel, Notification } from '@mcp-tether/core';
import { toJson } from './json.js';
import { maxLevel } from './levels.js';
import { CHANNEL_LOGGER, type LogEntry } from './options.js';

const WITHHELD = Object.freeze({ error: 'redaction failed; message withheld' });

/** Build the entry that leaves the process: plain JSON, then redaction (fail closed). */
export type PrepareEntry = (
  level: LogLevel,
  logger: string | undefined,
  data: unknown,
  call: LogEntry['call'],
) => LogEntry;

/** The entry builder for `redact` (none: plain JSON only). */
export function entryBuilder(redact: ((entry: LogEntry) => LogEntry) | undefined): PrepareEntry {
  return (level, logger, data, call) => {
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
}

/** The call an entry came from, as the sink and the redaction hook see it. */
export function callInfo(ctx: CallContext): LogEntry['call'] {
  const c: NonNullable<LogEntry['call']> = { method: ctx.method, name: ctx.name, requestId: ctx.requestId };
  if (ctx.sessionId !== undefined) c.sessionId = ctx.sessionId;
  return c;
}

/** The `notifications/message` of an entry (`data` `null` when it has none). */
export function messageOf(e: LogEntry): Notification {
  const params: Record<string, unknown> = { level: e.level };
  if (typeof e.logger === 'string') params.logger = e.logger;
  params.data = e.data === undefined ? null : e.data;
  return { method: 'notifications/message', params };
}

/** The level of a drop summary: `warning`, or the worst level dropped when that is more severe. */
export function summaryLevel(worst: LogLevel): LogLevel {
  return maxLevel('warning', worst);
}

/** The drop summary: `{ dropped }` from the channel's logger, at `level` (see {@link summaryLevel}). */
export function summaryOf(dropped: number, level: LogLevel): Notification {
  return { method: 'notifications/message', params: { level, logger: CHANNEL_LOGGER, data: { dropped } } };
}
