import type { ProgressEvent } from './types.js';

const BRAND = Symbol.for('mcp-tether.handler-event');

/**
 * Make a progress event a generator handler can `yield` (or pass to `ctx.emit`). Only events made
 * here reach the client; any other yielded value is ignored.
 * @param progress amount done, in the unit of `total`
 * @param total total amount, when known
 * @param message human-readable status
 */
export function progressEvent(progress: number, total?: number, message?: string): ProgressEvent {
  const e: ProgressEvent & { [BRAND]?: true } = { type: 'progress', progress };
  if (total !== undefined) (e as { total?: number }).total = total;
  if (message !== undefined) (e as { message?: string }).message = message;
  Object.defineProperty(e, BRAND, { value: true });
  return e;
}

/** True for events made by {@link progressEvent} (works across duplicate copies of this package). */
export function isProgressEvent(value: unknown): value is ProgressEvent {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
