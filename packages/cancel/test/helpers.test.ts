import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClientCancelled, ShuttingDown, raceSignal, sleep } from '../src/index.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('sleep(ms, signal)', () => {
  it('resolves after ms (fake time), and leaves no listener behind', async () => {
    vi.useFakeTimers();
    const ac = new AbortController();
    let done = false;
    const p = sleep(1_000, ac.signal).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);
    ac.abort(new ShuttingDown()); // after resolution: nothing happens, nothing rejects
  });

  it('rejects with signal.reason at the abort, at once if already aborted; the timer is cleared', async () => {
    vi.useFakeTimers();
    const ac = new AbortController();
    const p = sleep(10_000, ac.signal);
    const reason = new ClientCancelled('stop');
    ac.abort(reason);
    await expect(p).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    await expect(sleep(5, ac.signal)).rejects.toBe(reason);
  });

  it('without a signal it is a plain timer; bad ms counts as 0', async () => {
    vi.useFakeTimers();
    const p = sleep(Number.NaN);
    await vi.advanceTimersByTimeAsync(0);
    await expect(p).resolves.toBeUndefined();
    const q = sleep(-5);
    await vi.advanceTimersByTimeAsync(0);
    await expect(q).resolves.toBeUndefined();
  });
});

describe('raceSignal(promise, signal)', () => {
  it('settles with the promise when it wins (value or error)', async () => {
    const ac = new AbortController();
    await expect(raceSignal(Promise.resolve(7), ac.signal)).resolves.toBe(7);
    await expect(raceSignal(42, ac.signal)).resolves.toBe(42);
    const boom = new Error('boom');
    await expect(raceSignal(Promise.reject(boom), ac.signal)).rejects.toBe(boom);
  });

  it('rejects with signal.reason when the signal wins; a later rejection of the promise is swallowed', async () => {
    const ac = new AbortController();
    let rejectLater!: (e: unknown) => void;
    const slow = new Promise((_, reject) => (rejectLater = reject));
    const raced = raceSignal(slow, ac.signal);
    const reason = new ClientCancelled('user');
    ac.abort(reason);
    await expect(raced).rejects.toBe(reason);
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    rejectLater(new Error('late'));
    await new Promise((r) => setTimeout(r, 20));
    process.off('unhandledRejection', unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });

  it('an already aborted signal rejects at once', async () => {
    const ac = new AbortController();
    const reason = new ShuttingDown();
    ac.abort(reason);
    await expect(raceSignal(new Promise(() => {}), ac.signal)).rejects.toBe(reason);
  });
});
