import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/index.js';

/** A store on a clock the test moves. */
function clocked(options: { maxBuckets?: number } = {}) {
  let now = 1_000_000;
  const store = new MemoryRateLimitStore({ ...options, now: () => now });
  return { store, advance: (ms: number) => (now += ms) };
}

const rate = { burst: 3, perSecond: 2 }; // 3 at once, then one every 500 ms

describe('MemoryRateLimitStore (fake time)', () => {
  it('lets a burst through, then refuses with the exact wait until the next token; refills at perSecond, never past burst', () => {
    const { store, advance } = clocked();
    const check = [{ key: 'a', ...rate }];
    for (let i = 0; i < 3; i++) expect(store.take(check).allowed).toBe(true);
    expect(store.take(check)).toEqual({ allowed: false, retryAfterMs: 500, refusedBy: 0 });
    advance(499);
    expect(store.take(check)).toEqual({ allowed: false, retryAfterMs: 1, refusedBy: 0 });
    advance(1);
    expect(store.take(check).allowed).toBe(true);
    expect(store.take(check).allowed).toBe(false);
    advance(60_000); // a long quiet period refills to burst, not beyond
    for (let i = 0; i < 3; i++) expect(store.take(check).allowed).toBe(true);
    expect(store.take(check).allowed).toBe(false);
  });

  it('is all or nothing across buckets: a refusal takes no token from the others, and names the bucket with the longest wait', () => {
    const { store } = clocked();
    const wide = { key: 'client', burst: 10, perSecond: 1 };
    const narrow = { key: 'tool', burst: 1, perSecond: 0.1 };
    expect(store.take([wide, narrow]).allowed).toBe(true);
    expect(store.take([wide, narrow])).toEqual({ allowed: false, retryAfterMs: 10_000, refusedBy: 1 });
    expect(store.peek('client', wide)).toBe(9); // the refused check took nothing
    expect(store.take([wide]).allowed).toBe(true);
    expect(store.peek('client', wide)).toBe(8);
  });

  it('forgets a bucket once it is full again, and never holds more than maxBuckets', () => {
    const { store, advance } = clocked({ maxBuckets: 50 });
    for (let i = 0; i < 1_000; i++) store.take([{ key: `k${i}`, ...rate }]);
    expect(store.size).toBe(50); // least recently used dropped
    advance(500); // each bucket lost one token: full again after 500 ms
    for (let i = 0; i < 20; i++) store.take([{ key: 'fresh', ...rate }]);
    expect(store.size).toBeLessThan(50); // swept as it was used
    expect(store.peek('k999', rate)).toBeUndefined();
  });

  it('refuses bad options', () => {
    expect(() => new MemoryRateLimitStore({ maxBuckets: 0 })).toThrow(TypeError);
  });
});
