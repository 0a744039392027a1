/** Sizes of every scenario, for the full run and for `--quick` (CI smoke: proves the harness works). */
import type { AttackScenarioParams } from './scenarios/attack.js';

export interface Config {
  mode: 'full' | 'quick';
  overhead: {
    calls: number;
    warmup: number;
    /** Rounds of `stacks` (bare, full, core): each stack in a fresh process per round, order rotated. */
    rounds: number;
    stacks: string[];
    /** fastmcp runs in the first `fastmcpRounds` rounds only (its 1 ms floor per call makes it long). */
    fastmcpCalls: number;
    fastmcpRounds: number;
  };
  /** What each middleware adds: core, core + each one alone, all six; in one process, rounds alternated. */
  breakdown: null | { stacks: string[]; calls: number; warmup: number; rounds: number };
  flood: { n: number; kinds: string[] };
  cancel: { calls: number; styles: Array<'signal' | 'generator'> };
  mutex: { calls: number; concurrent: number; waiters: number; rounds: number };
  heartbeat: { calls: number; silenceMs: number; windowMs: number; variants: Array<'none' | 'full'> };
  memory: {
    small: number;
    runs: Array<{ workload: 'echo' | 'busy'; stack: 'full' | 'bare'; large: number }>;
    /** Calls held open to measure what one in-flight call keeps alive, on these stacks; `snapshot`: heap snapshot counts too. */
    openCalls: number;
    openCallStacks: Array<'bare' | 'core' | 'full'>;
    snapshot: boolean;
  };
  /**
   * (7) 1, 3 and 5 again at 10x the work; full run only.
   * - (5) `heartbeat`: 10x the heartbeat demand: the same 10 000 calls with `silenceMs` / 10.
   * - (5) `heartbeatCalls` (only with `--heavy`, outside the 5-minute budget): 10x the watched calls,
   *   100 000, against 10 000, both at `heavySilenceMs` (1 000: the same demand as section 5).
   *   At 100 ms, 100 000 calls would ask for ~900 000 heartbeats per second while they start.
   */
  scaling: null | {
    overheadCalls: number;
    cancelCalls: number;
    heartbeatSilenceMs: number;
    heavyCalls: number;
    heavySilenceMs: number;
  };
  /**
   * (8) the trivial call over real transports (server in a child process): stdio, Streamable HTTP
   * stateful (2025) and stateless (2026-07-28). Runs after (7), outside the 5-minute budget; full run only.
   */
  transport: null | {
    transports: Array<'stdio' | 'http-2025' | 'http-2026'>;
    stacks: string[];
    calls: number;
    warmup: number;
    rounds: number;
    maxMs: number;
  };
  /**
   * (9) jobs on BullMQ (needs `redis-server` on the PATH; skipped without it): enqueue → complete
   * latency and jobs/s of a trivial job, in process and on BullMQ with 1 and 2 workers, beside raw
   * BullMQ; Redis memory per held job.
   */
  bullmq: null | { sequential: number; burst: number; held: number };
  /**
   * (10) attacks (issue 26): for each, one attacker (no principal, one address, full speed) beside
   * a victim client doing normal work, against a fresh server with the default bounds; and a
   * baseline with no attacker. Server, attacker and victim are three processes.
   */
  attack: AttackScenarioParams;
  /** Longest a scenario process may run before it is killed, ms. */
  childTimeoutMs: number;
  /** The whole run's budget, ms: (7) is skipped or cut short rather than run past it. */
  budgetMs: number;
}

export const FULL: Config = {
  mode: 'full',
  overhead: {
    calls: 10_000,
    warmup: 1_000,
    rounds: 9,
    stacks: ['bare', 'full', 'full-noctx', 'core', 'bare-als'],
    fastmcpCalls: 10_000,
    fastmcpRounds: 1,
  },
  breakdown: {
    stacks: ['core', 'cancel', 'heartbeat', 'progress', 'log-channel', 'mrtr', 'mutex', 'full'],
    calls: 1_500,
    warmup: 1_000,
    rounds: 10,
  },
  flood: { n: 100_000, kinds: ['bare', 'fastmcp', 'ours', 'ours-ctx', 'ours-delta'] },
  cancel: { calls: 1_000, styles: ['signal', 'generator'] },
  mutex: { calls: 10_000, concurrent: 10_000, waiters: 1_000, rounds: 3 },
  heartbeat: { calls: 10_000, silenceMs: 100, windowMs: 3_000, variants: ['none', 'full'] },
  memory: {
    small: 1_000,
    runs: [
      { workload: 'echo', stack: 'full', large: 100_000 },
      { workload: 'busy', stack: 'full', large: 20_000 },
      { workload: 'echo', stack: 'bare', large: 100_000 },
    ],
    openCalls: 1_000,
    openCallStacks: ['bare', 'core', 'full'],
    snapshot: true,
  },
  scaling: {
    overheadCalls: 100_000,
    cancelCalls: 10_000,
    heartbeatSilenceMs: 10,
    heavyCalls: 100_000,
    heavySilenceMs: 1_000,
  },
  transport: {
    transports: ['stdio', 'http-2025', 'http-2026'],
    stacks: ['bare', 'core', 'full-noctx', 'full'],
    calls: 1_000,
    warmup: 300,
    rounds: 3,
    maxMs: 15_000,
  },
  bullmq: { sequential: 300, burst: 200, held: 100 },
  attack: {
    durationMs: 15_000,
    attacks: ['sessions', 'jobs', 'calls', 'bodies', 'events'],
    concurrency: 32,
    jobConcurrency: 64,
    // 400 × (4 MiB − 1 KiB), the attack; the server's body timeout is its default (10 s).
    bodies: { sockets: 400, bodyBytes: 4 * 2 ** 20, withheldBytes: 1024, dropWaitMs: 20_000 },
    events: { kib: 256, sessions: 100 },
    server: { search: { burst: 10, perSecond: 5 }, inlineMs: 1_000 },
    victimPauseMs: 20,
  },
  childTimeoutMs: 240_000,
  budgetMs: 290_000,
};

export const QUICK: Config = {
  mode: 'quick',
  overhead: { calls: 300, warmup: 100, rounds: 1, stacks: ['bare', 'full'], fastmcpCalls: 100, fastmcpRounds: 1 },
  breakdown: null,
  flood: { n: 2_000, kinds: ['bare', 'fastmcp', 'ours'] },
  cancel: { calls: 50, styles: ['signal'] },
  mutex: { calls: 300, concurrent: 300, waiters: 100, rounds: 1 },
  heartbeat: { calls: 300, silenceMs: 100, windowMs: 300, variants: ['full'] },
  memory: {
    small: 100,
    runs: [{ workload: 'echo', stack: 'full', large: 1_000 }],
    openCalls: 200,
    openCallStacks: ['full'],
    snapshot: false,
  },
  scaling: null,
  transport: null,
  bullmq: { sequential: 30, burst: 30, held: 20 },
  attack: {
    durationMs: 1_000,
    attacks: ['sessions', 'jobs', 'calls', 'bodies', 'events'],
    concurrency: 8,
    jobConcurrency: 40,
    bodies: { sockets: 20, bodyBytes: 4 * 2 ** 20, withheldBytes: 1024, dropWaitMs: 10_000 },
    events: { kib: 64, sessions: 10 },
    server: { search: { burst: 10, perSecond: 5 }, inlineMs: 1_000, http: { bodyTimeoutMs: 1_000 } },
    victimPauseMs: 20,
  },
  childTimeoutMs: 120_000,
  budgetMs: 120_000,
};
