import { describe, expect, it } from 'vitest';
import { MemoryLockStore } from '../src/index.js';
import { lockStoreContract } from '../src/testing.js';

describe('MemoryLockStore (property)', () => {
  it('random sequences of acquire / abort / release keep exclusion (≤ max holders), FIFO, bounded queues, increasing fencing tokens, and aborted waiters never get the lock', async () => {
    const store = new MemoryLockStore();
    await lockStoreContract({
      stores: [store],
      inspect: (key) => store.inspect(key),
      idle: () => store.size === 0,
      numRuns: 300,
    });
  });

  it('rejects a bad max; an already-aborted signal never queues', async () => {
    const store = new MemoryLockStore();
    const ac = new AbortController();
    await expect(store.acquire('k', { max: 0, maxQueue: 1, signal: ac.signal })).rejects.toThrow(TypeError);
    await expect(store.acquire('k', { max: 1.5, maxQueue: 1, signal: ac.signal })).rejects.toThrow(/positive integer/);
    ac.abort(new Error('gone'));
    await expect(store.acquire('k', { max: 1, maxQueue: 1, signal: ac.signal })).rejects.toThrow('gone');
    expect(store.size).toBe(0);
  });

  it('the contract catches a store that breaks it (a store that never queues: two holders of a mutex)', async () => {
    const broken = { acquire: async () => () => {} };
    await expect(lockStoreContract({ stores: [broken], numRuns: 50, settleMs: 50 })).rejects.toThrow();
  });
});
