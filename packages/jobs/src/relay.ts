/**
 * A job's progress, as its record shows it, relayed to an open request's progress token: the
 * `jobs.status` long-poll, and the inline window of a handle-mode call whose job runs elsewhere
 * (a remote executor's worker), where the handler's own progress events cannot reach the request.
 */
import { progressEvent, type CallContext } from '@mcp-tether/core';
import type { JobEngine } from './engine.js';
import type { JobRecord } from './store.js';

/**
 * Send the job's progress (`progress`, `total`, `statusMessage` of its record, strictly increasing,
 * through the chain: the progress middleware throttles it) on `ctx`'s progress token until the
 * returned function is called. Nothing is sent when the request has no progress token.
 * @returns the function that stops the relay, or `undefined` (no token, or the job is unknown)
 */
export async function relayProgress(
  engine: JobEngine,
  ctx: CallContext,
  id: string,
  owner: string,
): Promise<(() => void) | undefined> {
  if (ctx.progressToken === undefined) return undefined;
  let last = Number.NEGATIVE_INFINITY;
  const report = (job: JobRecord) => {
    if (job.status !== 'working' || typeof job.progress !== 'number' || !(job.progress > last)) return;
    last = job.progress;
    ctx.emit(progressEvent(job.progress, job.total, job.statusMessage)).catch(() => undefined);
  };
  const off = await engine
    .watch(id, owner, (signal) => signal.type === 'update' && report(signal.job))
    .catch(() => undefined);
  const now = off === undefined ? undefined : await engine.get(id, owner).catch(() => undefined);
  if (now !== undefined) report(now);
  return off;
}
