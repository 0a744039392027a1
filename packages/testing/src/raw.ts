/**
 * The raw JSON-RPC side of the test clients, the same on both SDK lines (the SDK 1.x client of
 * index.ts and the 2.x one of v2.ts import it; it imports neither SDK): recording what a client
 * transport sends and receives, the params of a `tools/call`, the SDK request options of one call,
 * the `notifications/cancelled` message, and waiting for a response on the wire.
 */
import type { WireLog } from './wire.js';

/** What both test clients' `start()` take besides the tool's name and arguments. */
export interface RawCallOptions {
  /** The JSON-RPC id (default: a fresh string id). */
  id?: string | number;
  /** Put this progress token in `_meta` (string or number, sent exactly). */
  progressToken?: string | number;
  /** Extra `_meta` fields. */
  meta?: Record<string, unknown>;
}

/** The options of one call that both SDK lines share (each kit adds its own `signal` and `resetTimeoutOnProgress`). */
export interface BaseCallOptions {
  /** Put this progress token in `_meta` (string or number, sent exactly). */
  progressToken?: string | number;
  /** Extra `_meta` fields (e.g. `io.modelcontextprotocol/logLevel` on 2026-07-28). */
  meta?: Record<string, unknown>;
  /** Client-side timeout in ms (SDK default 60 000). */
  timeout?: number;
  /** SDK progress callback; the SDK then sets its own numeric token (`progressToken` is ignored). */
  onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
}

/** The part of a client transport of either SDK line that {@link tapTransport} wraps. */
export interface TappableTransport {
  send(message: any, options?: any): Promise<void>;
  onmessage?: ((message: any, extra?: any) => void) | undefined;
}

/**
 * Record every message `transport` sends (`client->server`) and receives (`server->client`) in
 * `wire`. Call it before the SDK's `connect`: Protocol.connect chains an `onmessage` that is already
 * set, so this sees every inbound message first.
 */
export function tapTransport(transport: TappableTransport, wire: WireLog): void {
  const origSend = transport.send.bind(transport);
  transport.send = (message, opts) => {
    wire.record('client->server', message);
    return origSend(message, opts);
  };
  transport.onmessage = (message) => wire.record('server->client', message);
}

/** The `params` of a `tools/call`: `name`, `arguments`, and `_meta` (the progress token and `o.meta`) when not empty. */
export function callParams(
  name: string,
  args: Record<string, unknown>,
  o: { progressToken?: string | number; meta?: Record<string, unknown> },
): Record<string, unknown> {
  const meta: Record<string, unknown> = { ...o.meta };
  if (o.progressToken !== undefined) meta.progressToken = o.progressToken;
  const params: Record<string, unknown> = { name, arguments: args };
  if (Object.keys(meta).length) params._meta = meta;
  return params;
}

/** The SDK's request options of one call (the same names on SDK 1.x and 2.x): only those set. */
export function requestOptions(
  o: BaseCallOptions & { resetTimeoutOnProgress?: boolean; signal?: AbortSignal },
): Record<string, unknown> {
  const ro: Record<string, unknown> = {};
  if (o.timeout !== undefined) ro.timeout = o.timeout;
  if (o.resetTimeoutOnProgress !== undefined) ro.resetTimeoutOnProgress = o.resetTimeoutOnProgress;
  if (o.onprogress) ro.onprogress = o.onprogress;
  if (o.signal) ro.signal = o.signal;
  return ro;
}

/** `notifications/cancelled` for `requestId` (any id: unknown, 0, twice), with `reason` when given. */
export function cancelledNotification(requestId: string | number, reason?: string): Record<string, unknown> {
  const params: Record<string, unknown> = { requestId };
  if (reason !== undefined) params.reason = reason;
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params };
}

/** The response (result or error) to request `id` on the wire; rejects after `timeoutMs` (5 000) without one. */
export function responseOf(wire: WireLog, id: string | number, timeoutMs = 5_000): Promise<Record<string, any>> {
  return wire
    .waitFor(
      (m) => m.direction === 'server->client' && m.message.id === id && m.message.method === undefined,
      timeoutMs,
    )
    .then((m) => m.message);
}
