/**
 * Typed abort reasons: `ctx.signal.reason` is always one of these once a call is aborted.
 * They are `Error`s named `AbortError`, so code that only knows the DOM convention still works
 * (e.g. `fetch(url, { signal })` rejects with the reason).
 */

/** Why a call was aborted. */
export type AbortKind = 'cancelled' | 'disconnect' | 'timeout' | 'shutdown';

const BRAND = Symbol.for('mcp-tether.abort-reason');

/** Base class of every abort reason. */
export class CallAbortReason extends Error {
  readonly [BRAND] = true;
  /**
   * @param kind why the call stopped
   * @param respond whether the server still answers the request (true only for a server-side
   *   deadline, so the client learns it timed out instead of waiting for its own timeout)
   */
  constructor(
    readonly kind: AbortKind,
    message: string,
    readonly respond = false,
  ) {
    super(message);
    this.name = 'AbortError';
  }
}

/** The client sent `notifications/cancelled` (spec `basic/utilities/cancellation`). */
export class ClientCancelled extends CallAbortReason {
  /** @param clientReason the client's `params.reason`, kept verbatim */
  constructor(readonly clientReason: string | undefined) {
    super('cancelled', clientReason ? `cancelled by client: ${clientReason}` : 'cancelled by client');
  }
}

/** The transport or session closed (2026-07-28 HTTP: the client closed the response stream). */
export class Disconnected extends CallAbortReason {
  constructor(detail?: string) {
    super('disconnect', detail ? `connection closed: ${detail}` : 'connection closed');
  }
}

/** A deadline passed. The client gets an `isError` result with code `TIMEOUT`. */
export class DeadlineExceeded extends CallAbortReason {
  /** @param timeoutMs the deadline that passed, in ms */
  constructor(readonly timeoutMs: number) {
    super('timeout', `deadline of ${timeoutMs} ms exceeded`, true);
  }
}

/** The server is shutting down (`drain()`). */
export class ShuttingDown extends CallAbortReason {
  constructor() {
    super('shutdown', 'server shutting down');
  }
}

/** True for any {@link CallAbortReason}, across duplicate copies of this package. */
export function isCallAbortReason(value: unknown): value is CallAbortReason {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** The typed reason of an aborted signal, or undefined if it is not aborted. */
export function abortReason(signal: AbortSignal): CallAbortReason | undefined {
  if (!signal.aborted) return undefined;
  const r: unknown = signal.reason;
  return isCallAbortReason(r)
    ? r
    : new Disconnected(r instanceof Error ? r.message : r === undefined ? undefined : String(r));
}
