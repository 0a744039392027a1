/**
 * Bounded SSE streams (fault 5 of issue 16).
 *
 * The SDK transports write every SSE event into a `ReadableStream` whose queue has no bound, and
 * the bytes then wait in Node's socket buffer, so a client that stops reading its stream made the
 * server hold everything sent to it. The front reads an SDK stream only while the client takes
 * what was written (Node's buffer under `maxStreamBufferBytes`), and sits where the SDK writes
 * each event (`writeSSEEvent` of the session transports, `writeMessageFrame` of the 2026-07-28
 * per-request transport). Past a few unread events in the SDK's stream, the stream is *backed
 * up*, and until the client reads again a {@link Shaper} applies these rules:
 * - `notifications/progress` coalesce per progress token: only the latest value is kept (the
 *   values a server sends strictly increase, so the one sent later is still above the last one
 *   the client saw);
 * - `notifications/message` (logs) are shed and counted; once the stream flows again, one
 *   `notifications/message` (logger `@mcp-tether/http`, the most severe level shed) says how many;
 * - other notifications are kept up to `maxHeldMessages`, then shed and counted;
 * - responses and server→client requests are always kept (at most one response per call), and
 *   the SDK's close of the stream after its last response waits for them.
 * What one stream holds is therefore bounded: Node's buffer, a few events in the SDK's stream,
 * one progress event per token, the kept messages.
 */
import type { LogLevel } from '@mcp-tether/core';
import { diagnostics, LOG_LEVELS } from '@mcp-tether/core';

/** Where a shaper writes. */
export interface ShaperSink<T> {
  /** Write one item (an SSE event, or a message for the SDK's stream). */
  write(item: T): void;
  /** Write a `notifications/message` telling how many logs were shed. */
  writeNotice(message: Record<string, unknown>): void;
  /** True while the client has not taken what was written (past the bound). */
  backedUp(): boolean;
}

/** Bounds of one SSE stream. */
export interface StreamLimits {
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

interface Held<T> {
  item: T;
  /** Progress token key, for coalescing. */
  key: string | undefined;
}

const LOGGER = '@mcp-tether/http';

/** Applies the rules above to the items of one stream. */
export class Shaper<T> {
  private held: Array<Held<T>> = [];
  private readonly progress = new Map<string, Held<T>>();
  private droppedLogs = 0;
  private worstLevel = 0;
  private wasBackedUp = false;
  private onDrained: (() => void) | undefined;

  constructor(
    private readonly sink: ShaperSink<T>,
    private readonly limits: StreamLimits,
    private readonly stats: StreamStats,
    /** The JSON-RPC message of an item (undefined for a comment or priming event); read only while backed up. */
    private readonly messageOf: (item: T) => Record<string, unknown> | undefined,
  ) {}

  /** Events waiting for the client to read (0 when the stream flows). */
  get holding(): number {
    return this.held.length;
  }

  /** True when nothing is held (everything given to the sink). */
  get drained(): boolean {
    return this.held.length === 0 && this.droppedLogs === 0;
  }

  /** One item on its way out. */
  push(item: T): void {
    if (this.held.length === 0 && this.droppedLogs === 0 && !this.sink.backedUp()) {
      this.sink.write(item);
      return;
    }
    const message = this.messageOf(item);
    if (!this.wasBackedUp) {
      this.wasBackedUp = true;
      this.stats.backedUpStreams++;
    }
    if (message === undefined) {
      this.held.push({ item, key: undefined });
      return;
    }
    const method = typeof message.method === 'string' ? message.method : undefined;
    if (method === 'notifications/progress') {
      const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
      const key = `${typeof token}:${String(token)}`;
      const h = this.progress.get(key);
      if (h !== undefined) {
        h.item = item;
        this.stats.coalescedProgress++;
        if (diagnostics.progress.hasSubscribers) {
          const p = (message.params as { progress?: unknown } | undefined)?.progress;
          diagnostics.progress.publish({
            ctx: undefined,
            kind: 'coalesced',
            progress: typeof p === 'number' ? p : Number.NaN,
            source: 'http',
          });
        }
        return;
      }
      const e: Held<T> = { item, key };
      this.progress.set(key, e);
      this.held.push(e);
      return;
    }
    if (method === 'notifications/message') {
      this.droppedLogs++;
      this.stats.droppedLogs++;
      if (diagnostics.logDropped.hasSubscribers)
        diagnostics.logDropped.publish({ ctx: undefined, count: 1, sessionId: undefined, reason: 'buffer' });
      const level = LOG_LEVELS.indexOf((message.params as { level?: LogLevel } | undefined)?.level as LogLevel);
      if (level > this.worstLevel) this.worstLevel = level;
      return;
    }
    const isNotification = method !== undefined && message.id === undefined;
    if (isNotification && this.held.length >= this.limits.maxHeldMessages) {
      this.stats.droppedNotifications++;
      return;
    }
    this.held.push({ item, key: undefined });
  }

  /** The client took what was buffered: send what was held, as far as the bound allows. */
  flush(): void {
    let i = 0;
    while (i < this.held.length && !this.sink.backedUp()) {
      if (this.droppedLogs > 0) this.writeDropNotice();
      const e = this.held[i++]!;
      if (e.key !== undefined) this.progress.delete(e.key);
      this.sink.write(e.item);
    }
    if (i > 0) this.held = this.held.slice(i);
    if (this.held.length === 0 && this.droppedLogs > 0 && !this.sink.backedUp()) this.writeDropNotice();
    if (this.drained && this.onDrained) {
      const fn = this.onDrained;
      this.onDrained = undefined;
      fn();
    }
  }

  /** Run `fn` once nothing is held any more (at once if nothing is). */
  whenDrained(fn: () => void): void {
    if (this.drained) fn();
    else this.onDrained = fn;
  }

  /** Forget what is held (the stream is gone). */
  discard(): void {
    this.held = [];
    this.progress.clear();
    this.droppedLogs = 0;
    const fn = this.onDrained;
    this.onDrained = undefined;
    fn?.();
  }

  private writeDropNotice(): void {
    const n = this.droppedLogs;
    this.droppedLogs = 0;
    const level = LOG_LEVELS[this.worstLevel] ?? 'debug';
    this.worstLevel = 0;
    this.sink.writeNotice({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: {
        level,
        logger: LOGGER,
        data: { message: `${n} log message(s) dropped while the client was not reading this stream`, dropped: n },
      },
    });
  }
}
