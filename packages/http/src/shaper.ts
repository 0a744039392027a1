/**
 * Bounded SSE streams (fault 5 of issue 16).
 *
 * The SDK transports write every SSE event into a `ReadableStream` whose queue has no bound, and
 * the bytes then wait in Node's socket buffer, so a client that stops reading its stream makes the
 * server hold everything sent to it. The front reads the SDK's stream at once (its queue stays
 * empty) and passes each event through a {@link SseShaper}: while what the client has not taken
 * yet is under `maxBufferedBytes`, events go straight through; past it the stream is *backed up*,
 * and until the client reads again:
 * - `notifications/progress` coalesce per progress token: only the latest value is kept (the
 *   values a server sends strictly increase, so the one sent later is still above the last one
 *   the client saw);
 * - `notifications/message` (logs) are shed and counted; once the stream flows again, one
 *   `notifications/message` (logger `@mcp-tether/http`, the most severe level shed) says how many;
 * - SSE comments (keep-alives) are dropped (the stream is not idle);
 * - other notifications are kept up to `maxHeldMessages`, then shed and counted;
 * - responses and server→client requests are always kept (at most one response per call).
 * What one stream holds is therefore bounded by `maxBufferedBytes` + one event + the held events.
 */
import type { LogLevel } from '@mcp-tether/core';
import { LOG_LEVELS } from '@mcp-tether/core';

/** Where a shaper writes. */
export interface SseSink {
  /** Write one SSE event (complete, with its blank line). */
  write(block: string): void;
  /** Bytes written that the client has not taken yet. */
  backlog(): number;
}

/** Bounds of one SSE stream. */
export interface StreamLimits {
  /** Bytes the client may leave unread before the stream counts as backed up. */
  readonly maxBufferedBytes: number;
  /** Events other than progress, logs, responses and requests kept while backed up. */
  readonly maxHeldMessages: number;
}

/** What shaping did, across all streams of a front (counts since it started). */
export interface StreamStats {
  /** Progress notifications replaced by a later one for the same token while a stream was backed up. */
  coalescedProgress: number;
  /** Log notifications shed while a stream was backed up. */
  droppedLogs: number;
  /** Other notifications shed past `maxHeldMessages`. */
  droppedNotifications: number;
  /** Streams that were backed up at least once. */
  backedUpStreams: number;
}

interface Held {
  block: string;
  /** Progress token key, for coalescing. */
  key: string | undefined;
}

const LOGGER = '@mcp-tether/http';

export class SseShaper {
  private rest = '';
  private held: Held[] = [];
  private readonly progress = new Map<string, Held>();
  private droppedLogs = 0;
  private worstLevel = 0;
  private wasBackedUp = false;

  constructor(
    private readonly sink: SseSink,
    private readonly limits: StreamLimits,
    private readonly stats: StreamStats,
  ) {}

  /** Events waiting for the client to read (0 when the stream flows). */
  get holding(): number {
    return this.held.length;
  }

  /** Text from the SDK's stream (any cut: events are put together here). */
  push(text: string): void {
    let data = this.rest === '' ? text : this.rest + text;
    let i: number;
    while ((i = data.indexOf('\n\n')) >= 0) {
      const block = i + 2 === data.length ? data : data.slice(0, i + 2);
      data = i + 2 === data.length ? '' : data.slice(i + 2);
      this.event(block);
    }
    this.rest = data;
  }

  /** The client took what was buffered: send what was held, as far as the bound allows. */
  flush(): void {
    let i = 0;
    while (i < this.held.length && this.sink.backlog() < this.limits.maxBufferedBytes) {
      if (this.droppedLogs > 0) this.writeDropNotice();
      const e = this.held[i++]!;
      if (e.key !== undefined) this.progress.delete(e.key);
      this.sink.write(e.block);
    }
    if (i > 0) this.held = this.held.slice(i);
    if (this.held.length === 0 && this.droppedLogs > 0 && this.sink.backlog() < this.limits.maxBufferedBytes) this.writeDropNotice();
  }

  /** True when nothing is held (everything given to the sink). */
  get drained(): boolean {
    return this.held.length === 0 && this.droppedLogs === 0;
  }

  /** Forget what is held (the stream is gone). */
  discard(): void {
    this.held = [];
    this.progress.clear();
    this.droppedLogs = 0;
    this.rest = '';
  }

  private event(block: string): void {
    if (this.held.length === 0 && this.droppedLogs === 0 && this.sink.backlog() < this.limits.maxBufferedBytes) {
      this.sink.write(block);
      return;
    }
    if (!this.wasBackedUp) {
      this.wasBackedUp = true;
      this.stats.backedUpStreams++;
    }
    const message = parseEvent(block);
    if (message === undefined) {
      // A comment (keep-alive) or an event without data (priming): the stream is not idle.
      if (block.includes('\ndata:') || block.startsWith('data:') || block.includes('retry:')) this.held.push({ block, key: undefined });
      return;
    }
    const method = typeof message.method === 'string' ? message.method : undefined;
    if (method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      const key = `${typeof token}:${String(token)}`;
      const h = this.progress.get(key);
      if (h !== undefined) {
        h.block = block;
        this.stats.coalescedProgress++;
        return;
      }
      const e: Held = { block, key };
      this.progress.set(key, e);
      this.held.push(e);
      return;
    }
    if (method === 'notifications/message') {
      this.droppedLogs++;
      this.stats.droppedLogs++;
      const level = LOG_LEVELS.indexOf((message.params as { level?: LogLevel } | undefined)?.level as LogLevel);
      if (level > this.worstLevel) this.worstLevel = level;
      return;
    }
    const isNotification = method !== undefined && message.id === undefined;
    if (isNotification && this.held.length >= this.limits.maxHeldMessages) {
      this.stats.droppedNotifications++;
      return;
    }
    this.held.push({ block, key: undefined });
  }

  private writeDropNotice(): void {
    const n = this.droppedLogs;
    this.droppedLogs = 0;
    const level = LOG_LEVELS[this.worstLevel] ?? 'debug';
    this.worstLevel = 0;
    const notice = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level, logger: LOGGER, data: { message: `${n} log message(s) dropped while the client was not reading this stream`, dropped: n } },
    };
    this.sink.write(`event: message\ndata: ${JSON.stringify(notice)}\n\n`);
  }
}

/** The JSON-RPC message of an SSE event, or undefined (comment, priming event, not JSON). */
function parseEvent(block: string): Record<string, unknown> | undefined {
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) {
      const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      data = data === undefined ? v : `${data}\n${v}`;
    }
  }
  if (!data) return undefined;
  try {
    const m: unknown = JSON.parse(data);
    return typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
