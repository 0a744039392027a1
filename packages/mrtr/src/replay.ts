/**
 * One-time `requestState`s (2026-07-28, `MrtrOptions.oneTime`): where consumed states are
 * recorded ({@link ReplayStore}, in memory here, in Redis with `@mcp-tether/redis`), reading the
 * option, and consuming a retry's state so that a second retry with it (a replay) is refused with
 * `-32602` (`data.reason: 'replayed'`) before the handler runs.
 */
import { JsonRpcErrorCode, ProtocolError } from '@mcp-tether/core';
import { StateRejectedError } from './seal.js';

/**
 * Where consumed `requestState`s are recorded (see {@link MrtrOptions.oneTime}).
 */
export interface ReplayStore {
  /**
   * Record `id` as consumed until `expiresAt` (ms since the epoch; it may be forgotten after).
   * @returns true the first time `id` is recorded, false when it already was (a replay)
   * @throws (or rejects) when the store is unreachable: the call then fails with a JSON-RPC error and nothing runs
   */
  consume(id: string, expiresAt: number): boolean | Promise<boolean>;
}

/**
 * The in-memory {@link ReplayStore}: one process. Entries are forgotten once expired (swept as new
 * ones arrive), so it holds at most the states consumed within one `ttlMs`.
 */
export class MemoryReplayStore implements ReplayStore {
  readonly #seen = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}
  consume(id: string, expiresAt: number): boolean {
    const now = this.now();
    // Entries arrive in roughly increasing expiry: drop expired ones from the oldest end.
    for (const [k, exp] of this.#seen) {
      if (exp >= now) break;
      this.#seen.delete(k);
    }
    const known = this.#seen.get(id);
    if (known !== undefined && known >= now) return false;
    this.#seen.set(id, expiresAt);
    return true;
  }
  /** Consumed states remembered now. */
  get size(): number {
    return this.#seen.size;
  }
}

/**
 * The replay store of `MrtrOptions.oneTime`: `true` is a {@link MemoryReplayStore} on `now`.
 * @throws TypeError for anything but a boolean or a {@link ReplayStore}
 */
export function replayStoreOf(option: boolean | ReplayStore | undefined, now: () => number): ReplayStore | undefined {
  const oneTime: ReplayStore | undefined =
    option === true ? new MemoryReplayStore(now) : option === false || option === undefined ? undefined : option;
  if (
    oneTime !== undefined &&
    (typeof oneTime !== 'object' || oneTime === null || typeof oneTime.consume !== 'function')
  ) {
    throw new TypeError('mrtr: oneTime must be true, false or a ReplayStore (a consume(id, expiresAt) method)');
  }
  return oneTime;
}

/**
 * Consume a retry's sealed `token` (its last segment is the id), good until `expiresAt` (ms since the epoch).
 * @throws ProtocolError `-32603` (`data.code: 'STORE_UNAVAILABLE'`) when the store fails
 * @throws StateRejectedError `replayed` when the state was already used
 */
export async function consumeState(store: ReplayStore, token: string, expiresAt: number): Promise<void> {
  let fresh: boolean;
  try {
    fresh = await store.consume(token.slice(token.lastIndexOf('.') + 1), expiresAt);
  } catch (err) {
    throw new ProtocolError(
      JsonRpcErrorCode.InternalError,
      `requestState could not be checked for reuse (the replay store is unavailable: ${(err as Error)?.message ?? String(err)}). Try again later.`,
      { code: 'STORE_UNAVAILABLE' },
    );
  }
  if (!fresh)
    throw new StateRejectedError(
      'replayed',
      'already used (each requestState is good for one retry; start the call again)',
    );
}
