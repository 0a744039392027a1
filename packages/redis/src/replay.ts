import { connect, type Connections, type RedisConnectionOptions } from './connection.js';

/**
 * The `ReplayStore` of `@mcp-tether/mrtr` on Redis (`mrtr({ oneTime: new RedisReplayStore(...) })`):
 * every replica refuses a 2026-07-28 `requestState` that a retry on any replica already consumed.
 * One `SET <prefix>mrtr:used:<id> 1 NX PXAT <expiresAt>` per retry: atomic, and the record is gone
 * when the state would have expired anyway.
 */
export class RedisReplayStore {
  readonly #conn: Connections;

  constructor(options: RedisConnectionOptions = {}) {
    this.#conn = connect(options, '@mcp-tether/redis: RedisReplayStore');
  }

  /**
   * Record `id` until `expiresAt` (ms since the epoch).
   * @returns true the first time, false when any replica already recorded it
   * @throws when Redis is unreachable (mrtr then fails the retry with a JSON-RPC error; nothing runs)
   */
  async consume(id: string, expiresAt: number): Promise<boolean> {
    const at = Math.max(Math.ceil(expiresAt), Date.now() + 1);
    return (await this.#conn.redis.set(`${this.#conn.prefix}mrtr:used:${id}`, '1', 'PXAT', at, 'NX')) === 'OK';
  }

  /** Close the connections the store opened. */
  close(): Promise<void> {
    return this.#conn.close();
  }
}
