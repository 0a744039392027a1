/**
 * Small helpers for handler code that should stop when its call's signal aborts.
 * They reject with `signal.reason` (for a tether call: a typed `CallAbortReason`), the same value
 * `fetch(url, { signal })` rejects with, so one `catch` sees one kind of error.
 */

const noop = () => {};

/**
 * Wait `ms` milliseconds, or less if `signal` aborts.
 *
 * @param ms how long to wait, in ms (negative or NaN counts as 0)
 * @param signal usually `ctx.signal`; optional
 * @returns resolves after `ms`
 * @throws (rejects with) `signal.reason` as soon as the signal aborts, at once if it already has;
 *   the timer is cleared, so nothing keeps running.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Number.isFinite(ms) && ms > 0 ? ms : 0,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settle with `promise`, or reject with `signal.reason` as soon as `signal` aborts, whichever comes
 * first. Use it around I/O that takes no signal of its own.
 *
 * JavaScript cannot stop the work behind `promise`: it goes on, and its eventual result is
 * dropped (a later rejection is swallowed, so it cannot become an unhandled rejection).
 *
 * @param promise any promise (or value)
 * @param signal usually `ctx.signal`
 * @throws (rejects with) `signal.reason` when the signal aborts first (at once if already aborted),
 *   else whatever `promise` rejects with.
 */
export function raceSignal<T>(promise: PromiseLike<T> | T, signal: AbortSignal): Promise<T> {
  const p = Promise.resolve(promise);
  if (signal.aborted) {
    p.catch(noop);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      p.catch(noop);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
