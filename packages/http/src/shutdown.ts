/**
 * Ending the front: graceful shutdown (fault 10: new work refused at once, running calls get a
 * grace period, then are answered and aborted, then every session closes) and the immediate close.
 */
import { abortCalls, Disconnected, ShuttingDown } from '@mcp-tether/core';
import { shuttingDownError } from './jsonrpc.js';
import type { ModernExchanges } from './exchanges.js';
import type { LegacySessions } from './sessions.js';
import type { ShutdownResult } from './state.js';

/** Calls in flight across sessions and 2026-07-28 exchanges. */
function inflightCount(legacy: LegacySessions, modern: ModernExchanges): number {
  let n = 0;
  for (const s of legacy.sessions.values()) n += s.inflight.size;
  for (const e of modern.exchanges) n += e.ids.length;
  return n;
}

/**
 * Wait up to `graceMs` for the calls in flight, answer the rest with a `SHUTTING_DOWN` JSON-RPC
 * error and abort them (`signal.reason.kind` `shutdown` on tethered servers), close every session.
 * The caller has already stopped taking new work.
 */
export async function drain(legacy: LegacySessions, modern: ModernExchanges, graceMs: number): Promise<ShutdownResult> {
  const before = inflightCount(legacy, modern);
  const end = Date.now() + graceMs;
  while (inflightCount(legacy, modern) > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, Math.min(20, Math.max(1, end - Date.now()))));
  }
  const error = shuttingDownError(`The server shut down before this call finished (grace period ${graceMs} ms).`, {
    graceMs,
  });
  let aborted = 0;
  const sessions = [...legacy.sessions.values()];
  for (const s of sessions) {
    for (const id of [...s.inflight]) {
      aborted++;
      await s.transport.send({ jsonrpc: '2.0', id, error }).catch(() => {});
    }
    abortCalls(s.server, new ShuttingDown());
  }
  for (const e of [...modern.exchanges]) {
    aborted += e.ids.length;
    e.fail(error);
  }
  for (const server of modern.servers) abortCalls(server, new ShuttingDown());
  for (const e of [...modern.exchanges]) e.abort.abort();
  await Promise.all(sessions.map((s) => legacy.close(s, 'closed (shutdown)')));
  legacy.stopSweep();
  return { finished: Math.max(0, before - aborted), aborted, sessions: sessions.length };
}

/** Close at once: calls abort with `Disconnected`, sessions and the SDK's modern handler close. */
export async function closeNow(legacy: LegacySessions, modern: ModernExchanges): Promise<void> {
  const error = shuttingDownError('The server closed before this call finished.');
  for (const e of [...modern.exchanges]) {
    e.fail(error); // a JSON-RPC error body, not the SDK's empty 499
    e.abort.abort(new Disconnected('server closed'));
  }
  await Promise.all([...legacy.sessions.values()].map((s) => legacy.close(s, 'closed (server closed)')));
  legacy.stopSweep();
  await modern.closeHandler();
}
