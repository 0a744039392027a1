/** The waits between polls, shared by the job and task followers. */

/**
 * The client's own poll schedule when a handle carries no usable `pollAfterMs`: 1 000 ms, then
 * doubling, at most `maxMs` (15 000). `attempt` counts from 0.
 */
export function backoffMs(attempt: number, maxMs = 15_000): number {
  return Math.min(1_000 * 2 ** Math.min(attempt, 30), maxMs);
}

/** The next wait, ms: the server's hint clamped to `[minMs, maxMs]`, else {@link backoffMs}. */
export function pollDelay(hint: unknown, attempt: number, minMs: number, maxMs: number): number {
  return typeof hint === 'number' && Number.isFinite(hint)
    ? Math.min(Math.max(hint, minMs), maxMs)
    : backoffMs(attempt, maxMs);
}

/** Waits `ms`; rejects with `signal.reason` at the abort. */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
