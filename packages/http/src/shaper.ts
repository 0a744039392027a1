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
      params: { level, logger: LOGGER, data: { message: `${n} log message(s) dropped while the client was not reading this stream`, dropped: n } },
    });
  }
}

/** Cuts SSE text into events and shapes them (for streams the front only sees as bytes). */
export class SseShaper {
  private rest = '';
  readonly shaper: Shaper<string>;

  constructor(sink: { write(block: string): void; backlog(): number }, limits: StreamLimits & { maxBufferedBytes: number }, stats: StreamStats) {
    this.shaper = new Shaper<string>(
      {
        write: (block) => sink.write(block),
        writeNotice: (m) => sink.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`),
        backedUp: () => sink.backlog() >= limits.maxBufferedBytes,
      },
      limits,
      stats,
      parseEvent,
    );
  }

  get drained(): boolean {
    return this.shaper.drained;
  }

  /** Text from the SDK's stream (any cut: events are put together here). */
  push(text: string): void {
    let data = this.rest === '' ? text : this.rest + text;
    let i: number;
    while ((i = data.indexOf('\n\n')) >= 0) {
      const block = i + 2 === data.length ? data : data.slice(0, i + 2);
      data = i + 2 === data.length ? '' : data.slice(i + 2);
      // A comment (keep-alive) while backed up is dropped: the stream is not idle.
      if (block.startsWith(':') && !this.shaper.drained) continue;
      this.shaper.push(block);
    }
    this.rest = data;
  }

  flush(): void {
    this.shaper.flush();
  }

  discard(): void {
    this.shaper.discard();
    this.rest = '';
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
