/**
 * Waiting for a job to reach a state, driven by the store's signals (so it sees jobs run by any
 * replica), bounded by a timeout and a signal.
 */
import { isTerminal, type JobRecord, type JobStore } from './store.js';

/** Options of {@link JobEngine.wait}. */
export interface WaitOptions {
  /**
   * What to wait for: `terminal` (completed, failed, cancelled), `settled` (terminal or
   * `input_required`: the job needs the client), `change` (status, progress, message, questions
   * or partial length differ from the record seen when the wait began). Default `terminal`.
   */
  until?: 'terminal' | 'settled' | 'change';
  /** Give up after this many ms and return the record as it is. Default: no limit (then pass a signal). */
  timeoutMs?: number;
  /** Stop waiting (resolves with the record as it is). */
  signal?: AbortSignal;
}

const MAX_TIMER_MS = 2_147_483_647;

/** Whether anything a `change` wait looks at differs. */
function changed(a: JobRecord, b: JobRecord): boolean {
  return (
    a.status !== b.status ||
    a.progress !== b.progress ||
    a.total !== b.total ||
    a.statusMessage !== b.statusMessage ||
    a.partialLength !== b.partialLength ||
    JSON.stringify(a.inputRequests) !== JSON.stringify(b.inputRequests)
  );
}

/**
 * Wait until the job reaches `until` (see {@link WaitOptions}), the timeout passes or the signal
 * aborts; resolves with the job as `read` then gives it, or `undefined` when it is unknown, foreign
 * or expired. Driven by the store's signals, so it sees jobs run by any replica.
 */
export async function waitForJob(
  store: JobStore,
  read: (id: string, owner: string) => Promise<JobRecord | undefined>,
  id: string,
  owner: string,
  options: WaitOptions = {},
): Promise<JobRecord | undefined> {
  const until = options.until ?? 'terminal';
  const { signal } = options;
  let dirty = false;
  let wake: (() => void) | undefined;
  // Subscribed before the first read: no change can slip in between.
  const off = store.subscribe(id, (s) => {
    if (s.type !== 'update' && s.type !== 'partial') return;
    dirty = true;
    wake?.();
  });
  try {
    const first = await read(id, owner);
    if (first === undefined) return undefined;
    const done = (job: JobRecord): boolean =>
      isTerminal(job.status) ||
      (until === 'settled' && job.status === 'input_required') ||
      (until === 'change' && changed(first, job));
    if (done(first)) return first;
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    for (;;) {
      if (!dirty) {
        if (signal?.aborted) break;
        const left = deadline === undefined ? undefined : deadline - Date.now();
        if (left !== undefined && left <= 0) break;
        await new Promise<void>((resolve) => {
          const timer = left === undefined ? undefined : setTimeout(finish, Math.min(left, MAX_TIMER_MS));
          function finish() {
            if (timer !== undefined) clearTimeout(timer);
            signal?.removeEventListener('abort', finish);
            wake = undefined;
            resolve();
          }
          wake = finish;
          signal?.addEventListener('abort', finish, { once: true });
        });
        if (!dirty) continue;
      }
      dirty = false;
      const current = await read(id, owner);
      if (current === undefined) return undefined;
      if (done(current)) return current;
    }
    return await read(id, owner);
  } finally {
    off();
  }
}
