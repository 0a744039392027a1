/** Sizes of every scenario, for the full run and for `--quick` (CI smoke: proves the harness works). */

export interface Config {
  mode: 'full' | 'quick';
  overhead: { calls: number; fastmcpCalls: number; warmup: number; rounds: number; stacks: string[]; breakdown: string[] };
  flood: { n: number; kinds: string[] };
  cancel: { calls: number; styles: Array<'signal' | 'generator'> };
  mutex: { calls: number; concurrent: number; waiters: number; rounds: number };
  heartbeat: { calls: number; silenceMs: number; windowMs: number; variants: Array<'none' | 'full'> };
  memory: { small: number; large: number; runs: Array<{ workload: 'echo' | 'busy'; stack: 'full' | 'bare' }> };
  /** (7) 1, 3 and 5 again at 10x the work; full run only. */
  scaling: null | { overheadCalls: number; cancelCalls: number; heartbeatCalls: number };
  /** Longest a scenario process may run before it is killed, ms. */
  childTimeoutMs: number;
}

const BREAKDOWN = ['core', 'cancel', 'heartbeat', 'progress', 'log-channel', 'mrtr', 'mutex'];

export const FULL: Config = {
  mode: 'full',
  overhead: { calls: 10_000, fastmcpCalls: 10_000, warmup: 1_000, rounds: 3, stacks: ['bare', 'full', 'fastmcp'], breakdown: BREAKDOWN },
  flood: { n: 100_000, kinds: ['bare', 'fastmcp', 'ours', 'ours-ctx', 'ours-delta'] },
  cancel: { calls: 1_000, styles: ['signal', 'generator'] },
  mutex: { calls: 10_000, concurrent: 10_000, waiters: 1_000, rounds: 3 },
  heartbeat: { calls: 10_000, silenceMs: 100, windowMs: 3_000, variants: ['none', 'full'] },
  memory: {
    small: 1_000,
    large: 100_000,
    runs: [
      { workload: 'echo', stack: 'full' },
      { workload: 'busy', stack: 'full' },
      { workload: 'echo', stack: 'bare' },
    ],
  },
  scaling: { overheadCalls: 100_000, cancelCalls: 10_000, heartbeatCalls: 100_000 },
  childTimeoutMs: 240_000,
};

export const QUICK: Config = {
  mode: 'quick',
  overhead: { calls: 500, fastmcpCalls: 200, warmup: 100, rounds: 1, stacks: ['bare', 'full', 'fastmcp'], breakdown: [] },
  flood: { n: 5_000, kinds: ['bare', 'fastmcp', 'ours'] },
  cancel: { calls: 100, styles: ['signal'] },
  mutex: { calls: 500, concurrent: 500, waiters: 100, rounds: 1 },
  heartbeat: { calls: 500, silenceMs: 100, windowMs: 500, variants: ['full'] },
  memory: { small: 100, large: 2_000, runs: [{ workload: 'echo', stack: 'full' }] },
  scaling: null,
  childTimeoutMs: 120_000,
};
