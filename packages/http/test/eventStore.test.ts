/**
 * The default event store's bounds over many evictions (its oldest event is found in O(1), from an
 * insertion-order list that is compacted as it goes): what it keeps, forgets and replays.
 */
import { describe, expect, it } from 'vitest';
import { EventStorePool, MemoryEventStore } from '../src/index.js';

describe('MemoryEventStore past its bound', () => {
  it('keeps the newest maxEvents, forgets the oldest first, replays a stream in order, and returns its bytes', async () => {
    const pool = new EventStorePool(1 << 20);
    const store = new MemoryEventStore({ maxEvents: 1_000, pool });
    const ids: string[] = [];
    // 5 000 events on 2 500 streams (priming + response, as a 2025-era session's calls): 4 000 evictions.
    for (let i = 0; i < 2_500; i++) {
      ids.push(await store.storeEvent(`s${i}`, {}));
      ids.push(await store.storeEvent(`s${i}`, { jsonrpc: '2.0', id: i, result: { n: i } }));
    }
    expect(store.size).toBe(1_000);
    expect(await store.getStreamIdForEventId(ids[3_999]!)).toBeUndefined();
    expect(await store.getStreamIdForEventId(ids[4_000]!)).toBe('s2000');
    const replayed: unknown[] = [];
    await store.replayEventsAfter(ids[4_998]!, { send: async (_id, m) => void replayed.push(m) });
    expect(replayed).toEqual([{ jsonrpc: '2.0', id: 2_499, result: { n: 2_499 } }]);
    await expect(store.replayEventsAfter(ids[0]!, { send: async () => {} })).rejects.toThrow(/unknown or expired/);
    expect(pool.bytes).toBe(store.bytes);
    // After a clear the order starts over: the next evictions forget the new events, oldest first.
    store.clear();
    expect(pool.bytes).toBe(0);
    const again: string[] = [];
    for (let i = 0; i < 1_001; i++) again.push(await store.storeEvent('t', { n: i }));
    expect(store.size).toBe(1_000);
    expect(await store.getStreamIdForEventId(again[0]!)).toBeUndefined();
    expect(await store.getStreamIdForEventId(again[1]!)).toBe('t');
  });
});
