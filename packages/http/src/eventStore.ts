import type { EventStore } from './options.js';

/** A JSON-RPC message as the SDK transports store it. */
// biome-ignore lint/suspicious/noExplicitAny: the SDKs' JSONRPCMessage, whichever line stores it
type Message = any;

/**
 * Bytes shared by several {@link MemoryEventStore}s (the front's default stores: one per session,
 * one pool per front). When the stores together would hold more than `maxBytes`, the largest store
 * forgets its oldest events first.
 */
export class EventStorePool {
  /** Bytes held by the stores of this pool (UTF-8 JSON of the stored messages). */
  bytes = 0;
  readonly #stores = new Set<MemoryEventStore>();

  /** @param maxBytes bytes all stores of the pool hold together. */
  constructor(readonly maxBytes: number) {
    if (!(maxBytes > 0))
      throw new TypeError(`@mcp-tether/http: EventStorePool maxBytes must be positive, got ${maxBytes}`);
  }

  /** Stores that hold events. */
  get stores(): number {
    return this.#stores.size;
  }

  /** @internal */
  join(store: MemoryEventStore): void {
    this.#stores.add(store);
  }

  /** @internal */
  leave(store: MemoryEventStore): void {
    this.#stores.delete(store);
  }

  /** @internal Make room: the largest store forgets its oldest events until the pool is within its bound. */
  trim(): void {
    while (this.bytes > this.maxBytes) {
      let largest: MemoryEventStore | undefined;
      for (const s of this.#stores) if (!largest || s.bytes > largest.bytes) largest = s;
      if (!largest || largest.bytes === 0) return;
      largest.evictOldest();
    }
  }
}

/** Options of {@link MemoryEventStore}. */
export interface MemoryEventStoreOptions {
  /** Events kept; the oldest are forgotten first. Default 5 000. */
  maxEvents?: number;
  /** Bytes kept (UTF-8 JSON of the messages); the oldest events are forgotten first. Default unbounded. */
  maxBytes?: number;
  /** A pool whose bound this store shares with others (see {@link EventStorePool}). */
  pool?: EventStorePool;
}

interface Stored {
  readonly streamId: string;
  /** The message as JSON: its size is what it costs, and a replay gets a copy nobody mutated. */
  readonly json: string;
  readonly bytes: number;
}

/**
 * A bounded in-memory {@link EventStore} for Streamable HTTP resumability (one per session).
 *
 * Why not the SDK's `examples/shared/inMemoryEventStore.js` (importable through the package's
 * `./*` export): it never forgets an event, orders a replay by sorting `"<stream>_<ms>_<random>"`
 * strings (two events in the same millisecond replay in random order), and cannot parse the ids of
 * the standalone GET stream (`_GET_stream` contains the separator). This one keeps insertion order,
 * looks ids up instead of parsing them, skips the empty priming events on replay, and forgets the
 * oldest events past `maxEvents` or `maxBytes` (or when its pool is full). A forgotten event id
 * cannot be resumed from (the replay rejects; the client starts over).
 */
export class MemoryEventStore implements EventStore {
  #seq = 0;
  /** eventId → event, in insertion (= chronological) order. */
  readonly #events = new Map<string, Stored>();
  /** streamId → its event ids, chronological. */
  readonly #streams = new Map<string, string[]>();
  /**
   * Event ids in insertion order from `#head` on: the oldest is found in O(1). (Asking the Map for
   * its first key skips every entry deleted since its last rehash: at the bound, each stored event
   * evicted one and scanned ~1 000 holes, 11 700 instructions a request on a 2025-era session.)
   */
  #order: string[] = [];
  #head = 0;
  #bytes = 0;
  readonly maxEvents: number;
  readonly maxBytes: number;
  readonly #pool: EventStorePool | undefined;

  /** @param options events kept per store (a number: `maxEvents`), or the bounds. */
  constructor(options: number | MemoryEventStoreOptions = {}) {
    const o = typeof options === 'number' ? { maxEvents: options } : options;
    this.maxEvents = o.maxEvents ?? 5_000;
    this.maxBytes = o.maxBytes ?? Number.POSITIVE_INFINITY;
    this.#pool = o.pool;
  }

  /** Number of events held. */
  get size(): number {
    return this.#events.size;
  }

  /** Bytes held (UTF-8 JSON of the messages). */
  get bytes(): number {
    return this.#bytes;
  }

  async storeEvent(streamId: string, message: Message): Promise<string> {
    const eventId = `${streamId}.${++this.#seq}`;
    const json = JSON.stringify(message) ?? 'null';
    const bytes = Buffer.byteLength(json);
    if (bytes > this.maxBytes || (this.#pool && bytes > this.#pool.maxBytes)) {
      // Too large to keep at all: it goes out live, and is not resumable (nor is anything before it).
      this.clear();
      return eventId;
    }
    this.#events.set(eventId, { streamId, json, bytes });
    this.#order.push(eventId);
    let ids = this.#streams.get(streamId);
    if (!ids) {
      ids = [];
      this.#streams.set(streamId, ids);
    }
    ids.push(eventId);
    this.#add(bytes);
    while (this.#events.size > this.maxEvents || this.#bytes > this.maxBytes) this.evictOldest();
    this.#pool?.trim();
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: Message) => Promise<void> },
  ): Promise<string> {
    const event = this.#events.get(lastEventId);
    if (!event) throw new Error(`unknown or expired event id ${lastEventId.slice(0, 100)}`);
    const ids = this.#streams.get(event.streamId) ?? [];
    for (let i = ids.indexOf(lastEventId) + 1; i < ids.length; i++) {
      const id = ids[i] as string;
      const stored = this.#events.get(id);
      if (!stored) continue;
      const message = JSON.parse(stored.json);
      if (message && Object.keys(message as object).length > 0) await send(id, message);
    }
    return event.streamId;
  }

  /** Forget the oldest event (used by the bounds and by the pool). */
  evictOldest(): void {
    if (this.#head >= this.#order.length) return;
    const oldest = this.#order[this.#head++] as string;
    if (this.#head >= 1_024 && this.#head * 2 >= this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
    const stored = this.#events.get(oldest) as Stored;
    this.#events.delete(oldest);
    const list = this.#streams.get(stored.streamId);
    list?.shift(); // the globally oldest event is also the oldest of its stream
    if (list?.length === 0) this.#streams.delete(stored.streamId);
    this.#add(-stored.bytes);
  }

  /** Forget every event (the session ended): its bytes go back to the pool. */
  clear(): void {
    this.#events.clear();
    this.#streams.clear();
    this.#order = [];
    this.#head = 0;
    this.#add(-this.#bytes);
  }

  #add(delta: number): void {
    this.#bytes += delta;
    const pool = this.#pool;
    if (!pool) return;
    pool.bytes += delta;
    if (this.#bytes > 0) pool.join(this);
    else pool.leave(this);
  }
}
