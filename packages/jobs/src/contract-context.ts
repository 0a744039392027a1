/**
 * What the parts of the {@link JobStore} contract suite share (`jobStoreContract` of
 * `@mcp-tether/jobs/testing` builds it once per store).
 */
import type { RetentionLimits } from './retention.js';
import type { CreateLimits, JobSignal, JobStore, NewJob } from './store.js';

/** The suite's helpers, handed to every group of rules. */
export interface SuiteContext {
  /** A fresh store (and its peer: another process's view) for one test, with these retention bounds. */
  setup(retention?: RetentionLimits): Promise<{ store: JobStore; peer: JobStore }>;
  /** A new job of owner `alice` (status `working`, TTL {@link SuiteContext.TTL}) with `over` applied. */
  job(over?: Partial<NewJob>): NewJob;
  /** Generous caps for tests that are not about caps. */
  cap: CreateLimits;
  /** The suite's clock, ms. */
  now(): number;
  /** Move the clock on by `ms` (real time: wait). */
  advance(ms: number): Promise<void>;
  /** TTL of the suite's jobs, ms (short in real time). */
  TTL: number;
  /** The store keeps time itself (the suite waits instead of moving a fake clock). */
  realTime: boolean;
  /** Collect the signals of one id; `until(n)` waits for at least n of them. */
  collect(
    store: JobStore,
    id: string,
  ): { got: JobSignal[]; off: () => void; until: (n: number, what?: string) => Promise<JobSignal[]> };
}
