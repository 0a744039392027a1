import type { EventStore } from './options.js';

/** A JSON-RPC message as the SDK transports store it. */
type Message = any;

/**
 * A bounded in-memory {@link EventStore} for Streamable HTTP resumability (one per session).
 *
 * Why not the SDK's `examples/shared/inMemoryEventStore.js` (importable through the package's
 * `./*` export): it never forgets an event, orders a replay by sorting `"<stream>_<ms>_<random>"`
 * strings (two events in the same millisecond replay in random order), and cannot parse the ids of
 * the standalone GET stream (`_GET_stream` contains the separator). This one keeps insertion order,
 * looks ids up instead of parsing them, skips the empty priming events on replay, and evicts the
 * oldest events past `maxEvents`.
 */
export class MemoryEventStore implements EventStore {
  #seq = 0;
  /** eventId → event, in insertion (= chronological) order. */
  readonly #events = new Map<string, { streamId: string; message: Message }>();
  /** streamId → its event ids, chronological. */
  readonly #streams = new Map<string, string[]>();

  /** @param maxEvents events kept per store (per session); the oldest are forgotten first. */
  constructor(readonly maxEvents = 5_000) {}

  /** Number of events held. */
  get size(): number {
    return this.#events.size;
  }

  async storeEvent(streamId: string, message: Message): Promise<string> {
    const eventId = `${streamId}.${++this.#seq}`;
    this.#events.set(eventId, { streamId, message });
    let ids = this.#streams.get(streamId);
    if (!ids) {
      ids = [];
      this.#streams.set(streamId, ids);
    }
    ids.push(eventId);
    while (this.#events.size > this.maxEvents) {
      const oldest = this.#events.keys().next().value as string;
      const stream = this.#events.get(oldest)!.streamId;
      this.#events.delete(oldest);
      const list = this.#streams.get(stream)!;
      list.shift(); // the globally oldest event is also the oldest of its stream
      if (list.length === 0) this.#streams.delete(stream);
    }
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
    if (!event) throw new Error(`unknown or expired event id ${lastEventId}`);
    const ids = this.#streams.get(event.streamId) ?? [];
    for (let i = ids.indexOf(lastEventId) + 1; i < ids.length; i++) {
      const id = ids[i]!;
      const message = this.#events.get(id)?.message;
      if (message && Object.keys(message as object).length > 0) await send(id, message);
    }
    return event.streamId;
  }
}
