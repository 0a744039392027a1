/**
 * Small helpers shared by the packages' wire tests: waiting, polling, reading a tool result,
 * summarizing latencies. They use real timers: under `vi.useFakeTimers()`, advance the clock
 * yourself instead of awaiting {@link pause} or {@link until}.
 */

/**
 * Resolve after `ms` milliseconds (a plain `setTimeout`, not abortable).
 * @param ms delay in ms; negative or `NaN` counts as 0 (as `setTimeout` does)
 */
export function pause(ms: number): Promise<void> {
  return new Promise<void>((resolve) => setTimeout(resolve, ms));
}

/**
 * Resolve after `ms` milliseconds, or reject with `signal.reason` as soon as `signal` aborts (at
 * once when it already has): a handler's abortable wait in test servers.
 * @param ms delay in ms
 * @param signal the call's signal (`ctx.signal`)
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Poll `pred` every 2 ms until it returns true.
 * @param pred checked at once, then after each pause; must not throw
 * @param timeoutMs how long to wait, in ms (default 5 000). Keep it generous: the machine running
 *   the tests may be shared
 * @param what what is awaited, for the error message
 * @returns a promise that resolves once `pred()` is true
 * @throws Error `timed out waiting for <what>` (the promise rejects) when `timeoutMs` passed first
 */
export async function until(pred: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await pause(2);
  }
}

/**
 * The `p`-th percentile of `values` by the nearest-rank method: the smallest value such that at
 * least `p` percent of the values are less than or equal to it (`p = 0` gives the minimum, `100`
 * the maximum). `values` is not modified.
 * @param values numbers in any unit (typically latencies in ms); at least one
 * @param p percent, from 0 to 100
 * @throws RangeError for an empty list or a `p` outside 0..100
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError('percentile: needs at least one value');
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile: p must be a percent from 0 to 100, got ${String(p)}`);
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * The `text` of the first content block of a tool result (`result.content[0].text`), or
 * `undefined` when there is no such block or it has no string `text` (any value is accepted, so
 * it can read results of either SDK line, or a rejected call's `undefined`).
 */
export function firstText(result: unknown): string | undefined {
  const block = (result as { content?: unknown } | null | undefined)?.content;
  const first: unknown = Array.isArray(block) ? block[0] : undefined;
  const text = (first as { text?: unknown } | null | undefined)?.text;
  return typeof text === 'string' ? text : undefined;
}
