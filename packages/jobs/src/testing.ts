/**
 * @mcp-tether/jobs/testing — the {@link JobStore} contract as a vitest suite any store runs.
 *
 * ```ts
 * import { jobStoreContract } from '@mcp-tether/jobs/testing';
 * import { MemoryJobStore } from '@mcp-tether/jobs';
 *
 * jobStoreContract('MemoryJobStore', ({ now, retention }) => new MemoryJobStore({ now, sweepIntervalMs: 0, ...retention }));
 * ```
 *
 * A store that keeps time itself (Redis `PEXPIRE`) passes `{ realTime: true }`: the suite then uses
 * `Date.now` and really waits (TTLs of a few hundred ms, generous margins) instead of moving a fake clock.
 * @packageDocumentation
 */
import { afterEach, describe } from 'vitest';
import { basicRules } from './contract-basics.js';
import type { SuiteContext } from './contract-context.js';
import { fencingRules } from './contract-fencing.js';
import { lifecycleRules } from './contract-lifecycle.js';
import { limitRules } from './contract-limits.js';
import { listRules } from './contract-list.js';
import { newJobId } from './ids.js';
import type { RetentionLimits } from './retention.js';
import type { JobSignal, JobStore, NewJob } from './store.js';

/** What the suite hands your store factory. */
export interface ContractContext {
  /** The suite's clock (`Date.now()` ms): a fake one unless `realTime`. Pass it to the store. */
  now: () => number;
  /**
   * Retention bounds the test needs (rule 9): pass them to the store (`{ ...retention }`); absent,
   * the store's defaults.
   */
  retention?: RetentionLimits;
}

/** Options of {@link jobStoreContract}. */
export interface ContractOptions {
  /** The store keeps time itself: the suite uses the real clock and waits. Default false. */
  realTime?: boolean;
  /**
   * A second handle onto the same backend (another process's view: a second Redis client), used to
   * check that signals and records cross instances. Default: the same store object.
   */
  peer?: (store: JobStore, ctx: ContractContext) => JobStore | Promise<JobStore>;
  /** How long to wait for a signal to arrive, ms (real time). Default 2 000. */
  signalTimeoutMs?: number;
}

export { newJobId };

/**
 * Register the JobStore contract (rules 1–10 of {@link JobStore}; rule 8 only for stores with `claim`) as vitest `describe` blocks.
 * `makeStore` is called once per test; the suite closes the store (and its peer) after each test.
 */
export function jobStoreContract(
  name: string,
  makeStore: (ctx: ContractContext) => JobStore | Promise<JobStore>,
  options: ContractOptions = {},
): void {
  const realTime = options.realTime === true;
  const signalTimeoutMs = options.signalTimeoutMs ?? 2000;
  /** TTLs the suite uses: short in real time, so tests stay quick. */
  const TTL = realTime ? 400 : 60_000;

  describe(`JobStore contract: ${name}`, () => {
    let offset = 0;
    const base = Date.now();
    const now = realTime ? Date.now : () => base + offset;
    const advance = async (ms: number) => {
      if (realTime) await new Promise((r) => setTimeout(r, ms));
      else offset += ms;
    };
    const opened: JobStore[] = [];

    async function setup(retention?: RetentionLimits): Promise<{ store: JobStore; peer: JobStore }> {
      offset = 0;
      const ctx: ContractContext = retention === undefined ? { now } : { now, retention };
      const store = await makeStore(ctx);
      opened.push(store);
      const peer = options.peer ? await options.peer(store, ctx) : store;
      if (peer !== store) opened.push(peer);
      return { store, peer };
    }

    afterEach(async () => {
      const all = opened.splice(0);
      for (const s of all) await s.close?.();
    });

    const job = (over: Partial<NewJob> = {}): NewJob => ({
      id: newJobId(),
      owner: 'alice',
      mode: 'handle',
      tool: 'corpus.reindex',
      status: 'working',
      ttlMs: TTL,
      ...over,
    });
    const cap = { maxLivePerClient: 100 };

    /** Collect signals of one id; `until(n)` waits (real time) for at least n of them. */
    function collect(store: JobStore, id: string) {
      const got: JobSignal[] = [];
      const off = store.subscribe(id, (s) => got.push(s));
      const until = async (n: number, what = `${n} signals`) => {
        const deadline = Date.now() + signalTimeoutMs;
        while (got.length < n) {
          if (Date.now() > deadline)
            throw new Error(
              `timed out waiting for ${what} (got ${got.length}: ${JSON.stringify(got.map((s) => s.type))})`,
            );
          await new Promise((r) => setTimeout(r, 5));
        }
        return got;
      };
      return { got, off, until };
    }
    const suite: SuiteContext = { setup, job, cap, now, advance, TTL, realTime, collect };

    basicRules(suite);
    limitRules(suite);
    lifecycleRules(suite);
    fencingRules(suite);
    listRules(suite);
  });
}
