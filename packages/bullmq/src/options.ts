/**
 * Options of `bullmqExecutor()` and their checks (a bad option is a TypeError at construction,
 * never a surprise at the first job).
 */
import type { ConnectionOptions } from 'bullmq';

/** How a tool's job is retried when its handler throws. */
export interface RetryPolicy {
  /** Runs of the handler in all (the first included) before the job is `failed` with the last error. Default 1 (no retry). */
  attempts?: number;
  /** Wait before a retry: `fixed` (always `delayMs`) or `exponential` (`delayMs` × 2^(retry − 1)), ms. Default `{ type: 'exponential', delayMs: 1_000 }`. */
  backoff?: { type: 'fixed' | 'exponential'; delayMs: number };
}

/** Options of `bullmqExecutor()`. */
export interface BullmqExecutorOptions extends RetryPolicy {
  /**
   * Where BullMQ keeps its queue: a Redis URL (`redis://host:port[/db]`), or BullMQ's connection
   * options (an ioredis client of yours, or ioredis options). Default `$REDIS_URL`.
   */
  connection?: string | ConnectionOptions;
  /** BullMQ queue name. Default `tether-jobs`. Fronts and workers of one deployment use the same. */
  queue?: string;
  /** Prefix of BullMQ's Redis keys. Default `tether:bull`. */
  prefix?: string;
  /**
   * How long a worker's hold on a running job lasts without renewal, ms: a worker that dies (SIGKILL,
   * OOM, machine loss) or stops answering for longer loses the job, and another worker resumes it
   * within about 1.5 × this (BullMQ's lock duration; the stalled check runs every half of it).
   * Default `$JOB_LEASE_MS`, else 30 000.
   */
  lockMs?: number;
  /** Jobs one worker process runs at once. Default 4. */
  concurrency?: number;
  /** Per tool (by name): `attempts` and `backoff` for that tool's jobs (the top-level ones are the default). */
  tools?: Readonly<Record<string, RetryPolicy>>;
  /** Times a job may lose its worker (crash, pause past the lock) and be resumed before it is `failed`. Default 5. */
  maxStalls?: number;
  /** How long a worker's `close()` lets running jobs finish before it hands them back, ms. Default 10 000. */
  graceMs?: number;
  /** Errors of the queue and the workers (Redis unreachable, a lost lock). Default `console.error`. */
  onError?: (error: unknown) => void;
}

/** The checked options. */
export interface Settings {
  /** For workers (commands wait out a reconnection). */
  readonly connection: ConnectionOptions;
  /** For the fronts' queue (fail fast while Redis is away: the call gets a clear error). */
  readonly queueConnection: ConnectionOptions;
  readonly queue: string;
  readonly prefix: string;
  readonly lockMs: number;
  readonly concurrency: number;
  readonly maxStalls: number;
  readonly graceMs: number;
  readonly onError: (error: unknown) => void;
  policy(tool: string): Required<RetryPolicy>;
}

const WHO = '@mcp-tether/bullmq';

function positiveInt(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new TypeError(`${WHO}: ${name} must be a positive integer, got ${String(value)}`);
  return value;
}

function ms(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min)
    throw new TypeError(`${WHO}: ${name} must be a number of ms ≥ ${min}, got ${String(value)}`);
  return value;
}

function checkPolicy(where: string, p: RetryPolicy | undefined, base: Required<RetryPolicy>): Required<RetryPolicy> {
  if (p === undefined) return base;
  if (typeof p !== 'object' || p === null) throw new TypeError(`${WHO}: ${where} must be an object`);
  const attempts = p.attempts === undefined ? base.attempts : positiveInt(`${where}.attempts`, p.attempts);
  let backoff = base.backoff;
  if (p.backoff !== undefined) {
    const b = p.backoff;
    if (typeof b !== 'object' || b === null || (b.type !== 'fixed' && b.type !== 'exponential'))
      throw new TypeError(`${WHO}: ${where}.backoff.type must be 'fixed' or 'exponential'`);
    backoff = { type: b.type, delayMs: ms(`${where}.backoff.delayMs`, b.delayMs, 0) };
  }
  return { attempts, backoff };
}

/** Check the options; the URL form becomes BullMQ connection options. */
export function settle(options: BullmqExecutorOptions): Settings {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${WHO}: options must be an object`);
  const raw = options.connection ?? process.env.REDIS_URL;
  let connection: ConnectionOptions;
  let queueConnection: ConnectionOptions;
  if (typeof raw === 'string') {
    if (!/^rediss?:\/\//.test(raw)) throw new TypeError(`${WHO}: connection must be a redis:// URL, got ${raw}`);
    // BullMQ's workers block on Redis: commands must wait out a reconnection, not fail after one retry.
    connection = { url: raw, maxRetriesPerRequest: null };
    queueConnection = { url: raw, maxRetriesPerRequest: 1, enableOfflineQueue: false };
  } else if (typeof raw === 'object' && raw !== null) connection = queueConnection = raw;
  else throw new TypeError(`${WHO}: give connection (a redis:// URL or BullMQ connection options) or set REDIS_URL`);
  const envLease = process.env.JOB_LEASE_MS;
  const lockMs = ms(
    'lockMs',
    options.lockMs ?? (envLease !== undefined && envLease !== '' ? Number(envLease) : 30_000),
    200,
  );
  const queue = options.queue ?? 'tether-jobs';
  if (typeof queue !== 'string' || !/^[\w.-]{1,100}$/.test(queue))
    throw new TypeError(`${WHO}: queue must be 1-100 letters, digits, '_', '.' or '-'`);
  const prefix = options.prefix ?? 'tether:bull';
  if (typeof prefix !== 'string' || prefix === '') throw new TypeError(`${WHO}: prefix must be a non-empty string`);
  const base = checkPolicy('options', options, {
    attempts: 1,
    backoff: { type: 'exponential', delayMs: 1_000 },
  });
  const perTool = new Map<string, Required<RetryPolicy>>();
  for (const [name, p] of Object.entries(options.tools ?? {}))
    perTool.set(name, checkPolicy(`tools["${name}"]`, p, base));
  return {
    connection,
    queueConnection,
    queue,
    prefix,
    lockMs,
    concurrency: positiveInt('concurrency', options.concurrency ?? 4),
    maxStalls: positiveInt('maxStalls', options.maxStalls ?? 5),
    graceMs: ms('graceMs', options.graceMs ?? 10_000, 0),
    onError:
      options.onError ??
      ((error) => {
        console.error(`[${WHO}]`, error);
      }),
    policy: (tool) => perTool.get(tool) ?? base,
  };
}
