/**
 * @mcp-tether/mutex/testing — the {@link LockStore} contract as a property test any store can run
 * (the in-memory store runs it, `RedisLockStore` runs it against a real Redis). It needs
 * `fast-check` (an optional peer dependency of this package) and runs under any test runner: it
 * throws an `AssertionError` on the first sequence that breaks the contract, with fast-check's
 * shrunk counterexample.
 * @packageDocumentation
 */
import { deepStrictEqual, ok } from 'node:assert/strict';
import fc from 'fast-check';
import { isQueueFull, type LockStore, type Release } from './store.js';

/** Options of {@link lockStoreContract}. */
export interface LockStoreContractOptions {
  /**
   * The stores under test. With several (e.g. two `RedisLockStore` on two connections, as two
   * processes would have), acquisition `i` goes to `stores[i % stores.length]`: the contract must
   * hold across them.
   */
  stores: readonly LockStore[];
  /** Holders and waiters of a key as the store sees them (checked against the model after every step). Optional. */
  inspect?: (key: string) => { holders: number; waiting: number } | Promise<{ holders: number; waiting: number }>;
  /** True once the store keeps nothing for the key (checked at the end of each run, after everything was released). Optional. */
  idle?: (key: string) => boolean | Promise<boolean>;
  /** Runs of random sequences. Default 300. */
  numRuns?: number;
  /** Operations per sequence, at most. Default 40. */
  maxOps?: number;
  /**
   * How long the store may take to reach the state the model expects after an operation, in ms
   * (a remote store answers over the network). Default 5 000. The in-memory store reaches it
   * after one `setImmediate`.
   */
  settleMs?: number;
  /** The key of one run (a fresh one per run for a shared store). Default `contract:<run>`. */
  keyOf?: (run: number) => string;
  /** fast-check seed (to replay a failure). */
  seed?: number;
}

type Op = { t: 'acquire'; preAborted: boolean } | { t: 'abort'; pick: number } | { t: 'release'; pick: number };
/** What the contract says about one acquisition. */
export type LockStatus = 'waiting' | 'held' | 'released' | 'busy' | 'aborted';

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('acquire' as const),
      preAborted: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('release' as const), pick: fc.nat() }) },
);

/** The reference model: what the contract says must happen, step by step. */
class Model {
  status: LockStatus[] = [];
  queue: number[] = [];
  grants: number[] = [];
  constructor(
    readonly max: number,
    readonly maxQueue: number,
  ) {}
  held(): number {
    return this.status.filter((s) => s === 'held').length;
  }
  acquire(id: number, preAborted: boolean): void {
    if (preAborted) this.status[id] = 'aborted';
    else if (this.held() < this.max && this.queue.length === 0) this.grant(id);
    else if (this.queue.length >= this.maxQueue) this.status[id] = 'busy';
    else {
      this.status[id] = 'waiting';
      this.queue.push(id);
    }
  }
  abort(id: number): void {
    if (this.status[id] !== 'waiting') return; // a holder is never interrupted
    this.status[id] = 'aborted';
    this.queue = this.queue.filter((q) => q !== id);
  }
  release(id: number): void {
    if (this.status[id] !== 'held') return; // releasing twice, or a non-holder: no effect
    this.status[id] = 'released';
    while (this.queue.length && this.held() < this.max) this.grant(this.queue.shift()!);
  }
  private grant(id: number): void {
    this.status[id] = 'held';
    this.grants.push(id);
  }
}

const tick = () => new Promise<void>((r) => setImmediate(r));

/**
 * Run the `LockStore` contract (see `LockStore` in `@mcp-tether/mutex`) as a fast-check property:
 * random sequences of acquire (some with a signal already aborted) / abort / release, with random
 * `max` (1–3) and `maxQueue` (0–3, `Infinity`), checked step by step against a reference model:
 * at most `max` holders at every moment, grants in FIFO order, a bounded queue refusing with a
 * `QueueFullError`, aborted waiters rejected with `signal.reason` and never granted, a second
 * release doing nothing, and fencing tokens (when the store issues them) strictly increasing in
 * grant order. After each run every waiter is aborted and every holder released; the store must
 * then be idle (`idle`).
 *
 * @throws AssertionError (from `node:assert`) with the counterexample when the store breaks the contract
 */
export async function lockStoreContract(options: LockStoreContractOptions): Promise<void> {
  const { stores, inspect, idle } = options;
  ok(stores.length > 0, 'lockStoreContract: give at least one store');
  const settleMs = options.settleMs ?? 5_000;
  let run = 0;
  const keyOf = options.keyOf ?? ((n: number) => `contract:${n}`);

  /** Wait until `check` passes (it throws while it does not), at most `settleMs`. */
  const settle = async (check: () => Promise<void> | void): Promise<void> => {
    const deadline = Date.now() + settleMs;
    for (let i = 0; ; i++) {
      await (i < 5 ? tick() : new Promise<void>((r) => setTimeout(r, 2)));
      try {
        await check();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  };

  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.constantFrom(0, 1, 2, 3, Infinity),
      fc.array(opArb, { minLength: 1, maxLength: options.maxOps ?? 40 }),
      async (max, maxQueue, ops) => {
        const key = keyOf(run++);
        const model = new Model(max, maxQueue);
        const status: LockStatus[] = [];
        const releases: Array<Release | undefined> = [];
        const controllers: AbortController[] = [];
        const grants: number[] = [];
        const tokens: number[] = [];
        const problems: string[] = [];
        let holding = 0;
        let maxHolding = 0;
        const pending: Promise<unknown>[] = [];
        const check = async () => {
          deepStrictEqual(problems, []);
          deepStrictEqual(status, model.status);
          deepStrictEqual(grants, model.grants);
          ok(maxHolding <= max, `${maxHolding} holders at once, max ${max}`);
          if (inspect) deepStrictEqual(await inspect(key), { holders: model.held(), waiting: model.queue.length });
        };
        try {
          for (const op of ops) {
            if (op.t === 'acquire') {
              const id = status.length;
              const ac = new AbortController();
              controllers.push(ac);
              if (op.preAborted) ac.abort(new Error(`pre-aborted ${id}`));
              status[id] = 'waiting';
              const store = stores[id % stores.length]!;
              pending.push(
                store.acquire(key, { max, maxQueue, signal: ac.signal }).then(
                  (release) => {
                    if (status[id] !== 'waiting') problems.push(`#${id} granted while ${status[id]}`);
                    status[id] = 'held';
                    releases[id] = release;
                    grants.push(id);
                    if (release.fencingToken !== undefined) {
                      const last = tokens[tokens.length - 1];
                      if (!Number.isInteger(release.fencingToken))
                        problems.push(`#${id} fencing token ${release.fencingToken} is not an integer`);
                      if (last !== undefined && !(release.fencingToken > last))
                        problems.push(`#${id} fencing token ${release.fencingToken} after ${last}`);
                      tokens.push(release.fencingToken);
                    }
                    holding++;
                    maxHolding = Math.max(maxHolding, holding);
                  },
                  (err: unknown) => {
                    if (status[id] !== 'waiting') problems.push(`#${id} rejected while ${status[id]}`);
                    status[id] = isQueueFull(err) ? 'busy' : 'aborted';
                    if (!isQueueFull(err) && err !== ac.signal.reason)
                      problems.push(`#${id} rejected with ${String(err)}, not its signal's reason`);
                  },
                ),
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
                  pending.push(Promise.resolve(release())); // a second call must do nothing
                }
                model.release(id);
              }
            }
            await settle(check);
          }
        } finally {
          // abort every waiter, release every holder: the store forgets the key
          for (const ac of controllers) ac.abort(new Error('end'));
          await settle(() => ok(!status.includes('waiting'), 'a waiter did not leave after its abort'));
          for (const release of releases) pending.push(Promise.resolve(release?.()));
          await Promise.all(pending);
        }
        if (inspect) await settle(async () => deepStrictEqual(await inspect(key), { holders: 0, waiting: 0 }));
        if (idle)
          await settle(async () => ok(await idle(key), `the store still keeps ${key} after everything was released`));
      },
    ),
    { numRuns: options.numRuns ?? 300, ...(options.seed !== undefined && { seed: options.seed }) },
  );
}
