/**
 * Requests in flight per client key (`maxClientRequestsInFlight`): taken right after the guard
 * (Host/Origin, `authenticate`), before a byte of the body is read, and given back when the
 * response ends. A client past its bound is answered 429 at once, before the body, the session
 * lookup and the SDK. (Fast requests are answered within the callback that read them and never
 * pile up here: the latency a flood of them causes is bounded by the fair turns of `fair.ts`, whose
 * waiting requests hold their slots here; see DESIGN.md.)
 */
import { ErrorCode, JsonRpcErrorCode } from '@mcp-tether/core';
import { errorResponse } from './jsonrpc.js';

/** How long a client refused for its requests in flight should wait, in ms (a slot frees when one of its responses ends). */
const RETRY_MS = 1_000;

/** One request's slot: give it back once (later calls do nothing). */
export type Release = () => void;

const nothing: Release = () => {};

/** Requests in flight per client key. */
export class RequestSlots {
  readonly #perClient = new Map<string, number>();
  /** Slots held now, all clients. */
  total = 0;

  /** @param max most requests in flight per client key (`Infinity`: no bound, nothing counted) */
  constructor(readonly max: number) {}

  /**
   * Take a slot for `key`: its release (call it when the response ends), or undefined when the
   * client already has `max` requests in flight. A request with no key is not counted.
   */
  take(key: string | undefined): Release | undefined {
    if (key === undefined || this.max === Number.POSITIVE_INFINITY) return nothing;
    const mine = this.#perClient.get(key) ?? 0;
    if (mine >= this.max) return undefined;
    this.#perClient.set(key, mine + 1);
    this.total++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total--;
      const left = (this.#perClient.get(key) ?? 1) - 1;
      if (left > 0) this.#perClient.set(key, left);
      else this.#perClient.delete(key);
    };
  }

  /** Requests `key` has in flight now. */
  of(key: string): number {
    return this.#perClient.get(key) ?? 0;
  }
}

/** 429 with a JSON-RPC `BUSY` error (id null: the body was not read) and `Retry-After`. */
export function tooManyRequests(max: number): Response {
  return errorResponse(
    429,
    null,
    JsonRpcErrorCode.InternalError,
    `Too many requests in flight: this client has ${max}, its limit. Wait for a response to end, then try again.`,
    {
      code: ErrorCode.BUSY,
      reason: 'client-requests',
      limit: max,
      maxClientRequestsInFlight: max,
      retryAfterMs: RETRY_MS,
      retryAfterSeconds: RETRY_MS / 1_000,
    },
    { 'retry-after': String(RETRY_MS / 1_000) },
  );
}
