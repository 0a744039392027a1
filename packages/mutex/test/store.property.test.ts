import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLockStore, QueueFullError, isQueueFull } from '../src/index.js';

type Op = { t: 'acquire'; preAborted: boolean } | { t: 'abort'; pick: number } | { t: 'release'; pick: number };
type Status = 'waiting' | 'held' | 'released' | 'busy' | 'aborted';

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('acquire' as const), preAborted: fc.integer({ min: 0, max: 9 }).map((n) => n === 0) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('release' as const), pick: fc.nat() }) },
);

const flush = () => new Promise<void>((r) => setImmediate(r));

/** The reference model: what the contract says must happen, step by step. */
class Model {
  status: Status[] = [];
  queue: number[] = [];
  grants: number[] = [];
  constructor(
    readonly max: number,
    readonly maxQueue: number,
  ) {}
  held() {
    return this.status.filter((s) => s === 'held').length;
  }
  acquire(id: number, preAborted: boolean) {
    if (preAborted) this.status[id] = 'aborted';
    else if (this.held() < this.max && this.queue.length === 0) this.grant(id);
    else if (this.queue.length >= this.maxQueue) this.status[id] = 'busy';
    else {
      this.status[id] = 'waiting';
      this.queue.push(id);
    }
  }
  abort(id: number) {
    if (this.status[id] !== 'waiting') return; // a holder is never interrupted
    this.status[id] = 'aborted';
    this.queue = this.queue.filter((q) => q !== id);
  }
  release(id: number) {
    if (this.status[id] !== 'held') return; // releasing twice, or a non-holder: no effect
    this.status[id] = 'released';
    while (this.queue.length && this.held() < this.max) this.grant(this.queue.shift()!);
  }
  private grant(id: number) {
    this.status[id] = 'held';
    this.grants.push(id);
  }
}

describe('MemoryLockStore (property)', () => {
  it('random sequences of acquire / abort / release keep exclusion (≤ max holders), FIFO, bounded queues, and aborted waiters never get the lock', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.constantFrom(0, 1, 2, 3, Infinity),
        fc.array(opArb, { minLength: 1, maxLength: 40 }),
        async (max, maxQueue, ops) => {
          const store = new MemoryLockStore();
          const model = new Model(max, maxQueue);
          const status: Status[] = [];
          const releases: Array<(() => void | Promise<void>) | undefined> = [];
          const controllers: AbortController[] = [];
          const grants: number[] = [];
          let holding = 0;
          let maxHolding = 0;
          for (const op of ops) {
            if (op.t === 'acquire') {
              const id = status.length;
              const ac = new AbortController();
              controllers.push(ac);
              if (op.preAborted) ac.abort(new Error(`pre-aborted ${id}`));
              status[id] = 'waiting';
              store.acquire('k', { max, maxQueue, signal: ac.signal }).then(
                (release) => {
                  status[id] = 'held';
                  releases[id] = release;
                  grants.push(id);
                  holding++;
                  maxHolding = Math.max(maxHolding, holding);
                },
                (err: unknown) => {
                  status[id] = isQueueFull(err) ? 'busy' : 'aborted';
                  if (!isQueueFull(err)) expect(err).toBe(ac.signal.reason);
                  else expect(err).toBeInstanceOf(QueueFullError);
                },
              );
              model.acquire(id, op.preAborted);
            } else if (status.length > 0) {
              const id = op.pick % status.length;
              if (op.t === 'abort') {
                controllers[id]!.abort(new Error(`abort ${id}`));
                model.abort(id);
              } else {
                const release = releases[id];
                if (release) {
                  if (status[id] === 'held') {
                    status[id] = 'released';
                    holding--;
                  }
                  void release(); // a second call must do nothing
                }
                model.release(id);
              }
            }
            await flush();
            expect(status).toEqual(model.status);
            expect(grants).toEqual(model.grants);
            expect(store.inspect('k')).toEqual({ holders: model.held(), waiting: model.queue.length });
            expect(maxHolding).toBeLessThanOrEqual(max);
          }
          // abort every waiter, release every holder: the store forgets the key
          for (const ac of controllers) ac.abort(new Error('end'));
          for (const release of releases) void release?.();
          await flush();
          expect(store.size).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
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
});
