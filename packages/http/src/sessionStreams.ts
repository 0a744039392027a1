/**
 * The streams of 2025-era sessions: bounded where the SDK writes them (fault 5 of issue 16), the
 * in-flight ids a response releases, and the stream of a cancelled request ended (fault 2).
 */
import { type Id, isResponse, type Message } from './jsonrpc.js';
import { MAX_QUEUED_EVENTS, type SourceEvent, type WebTransport, type WriteSse } from './sdk.js';
import { Shaper } from './shaper.js';
import type { FrontContext, Session } from './state.js';

/** Streams of one session remembered as ended by a cancel (a resume of one gets 405). */
const MAX_ENDED_STREAMS = 256;

export class SessionStreams {
  /** The shaper of each session stream, by the SDK's stream controller. */
  private readonly shapers = new WeakMap<object, Shaper<SourceEvent>>();

  constructor(private readonly ctx: FrontContext) {}

  /**
   * Track responses (in-flight ids leave) on the session's transport, and bound its streams: the
   * SDK writes each event into the stream's queue without looking at it, so the front shapes
   * events where the SDK writes them (`writeSSEEvent`, shared by SDK 1.x and 2.x): past
   * {@link MAX_QUEUED_EVENTS} unread events (the adapter reads a stream only while the client
   * takes what was written), progress coalesces and logs are shed (see `shaper.ts`).
   */
  instrument(transport: WebTransport, session: () => Session | undefined): void {
    // The fields read here are core's SDK_SEAMS `webTransportV1`/`webTransportV2`, checked when the class loaded (seams.ts).
    const t = transport as WebTransport & { writeSSEEvent: WriteSse };
    t.writeSSEEvent = this.shapedWrite(t, t.writeSSEEvent.bind(t), session);
    const send = transport.send.bind(transport);
    const stats = this.ctx.stats;
    transport.send = async (message: unknown, options?: unknown) => {
      try {
        return await send(message, options);
      } finally {
        const m = message as Message;
        if (isResponse(m)) {
          const s = session();
          if (s?.inflight.delete(m.id as Id)) stats.inflight--;
        }
      }
    };
  }

  /** A `writeSSEEvent` that writes through the stream's shaper once the stream is backed up. */
  private shapedWrite(t: WebTransport, write: WriteSse, session: () => Session | undefined): WriteSse {
    const shapers = this.shapers;
    const limits = { maxHeldMessages: this.ctx.opts.maxHeldMessages };
    const stats = this.ctx.stats;
    return (controller, encoder, message, eventId) => {
      const s = session();
      if (s) s.lastActive = Date.now(); // a message sent is activity (a keep-alive comment is not: it is not written here)
      let sh = shapers.get(controller);
      if (sh === undefined) {
        sh = new Shaper<SourceEvent>(
          {
            write: (e) => void write(e.controller, e.encoder, e.message, e.eventId),
            writeNotice: (m) => void write(controller, encoder, m),
            backedUp: () => 1 - (controller.desiredSize ?? 1) >= MAX_QUEUED_EVENTS,
          },
          limits,
          stats,
          (e) => e.message,
        );
        shapers.set(controller, sh);
        // The SDK closes a stream right after its last response: what is still held goes first.
        const shaper = sh;
        const close = controller.close.bind(controller);
        controller.close = () => {
          if ((t as WebTransport & { _closed: boolean })._closed) shaper.discard(); // the session is closing: nothing more will be read
          shaper.whenDrained(() => {
            try {
              close();
            } catch {
              /* already closed or cancelled */
            }
          });
        };
      }
      if (sh.drained && 1 - (controller.desiredSize ?? 1) < MAX_QUEUED_EVENTS)
        return write(controller, encoder, message, eventId);
      sh.push({ controller, encoder, message: message as Record<string, unknown>, eventId });
      if (!sh.drained) s?.holding.add(sh);
      return true;
    };
  }

  /** End the SSE stream of a cancelled request: no response will come for it (spec: none after a cancel). */
  endCancelledStream(session: Session, id: Id): void {
    if (!session.inflight.delete(id)) return;
    this.ctx.stats.inflight--;
    const t = session.transport;
    const streamId = t._requestToStreamMapping.get(id);
    if (streamId === undefined) return;
    t._requestToStreamMapping.delete(id);
    t._requestResponseMap.delete(id);
    for (const other of t._requestToStreamMapping.values()) if (other === streamId) return; // a batch: the others' responses end it
    const stream = t._streamMapping.get(streamId) as { cleanup(): void; controller?: object } | undefined;
    // Nothing more goes out for a cancelled call: what its stream still holds is dropped.
    const shaper = stream?.controller ? this.shapers.get(stream.controller) : undefined;
    if (shaper) {
      shaper.discard();
      session.holding.delete(shaper);
    }
    stream?.cleanup();
    t._resumableStreams?.delete(streamId); // SDK 1.x only (see core SDK_SEAMS)
    if (session.endedStreams.size >= MAX_ENDED_STREAMS)
      session.endedStreams.delete(session.endedStreams.values().next().value as string);
    session.endedStreams.add(streamId);
    this.ctx.stats.cancelledStreams++;
  }
}
