/**
 * What a handler sees of its job: `ctx.job` ({@link JobContext}) and the errors a job may meet
 * ({@link JobExpired} on its signal, {@link PartialLimitError} from `append`).
 */
import { DeadlineExceeded } from '@mcp-tether/core';
import type { JobMode } from './store.js';

/** The job's TTL passed while it ran: its signal aborts with this (a {@link DeadlineExceeded}, kind `timeout`). */
export class JobExpired extends DeadlineExceeded {
  constructor(ttlMs: number) {
    super(ttlMs);
    this.message = `job expired: its TTL of ${ttlMs} ms passed`;
  }
}

/** What the handler sees as `ctx.job` inside a job. */
export interface JobContext {
  /** The job id (also the MCP `taskId`). */
  readonly id: string;
  readonly mode: JobMode;
  /** URI of the partial-output resource (`job://{jobId}/partial` by default). */
  readonly partialUri: string;
  /**
   * Publish a chunk of partial output (pattern C): readable at once as the job's partial resource,
   * subscribers are told with `notifications/resources/updated`. Chunks are stored in call order;
   * after the job ended (cancelled, expired) a chunk is dropped. Resolves with the new chunk count
   * (`-1` when dropped); never rejects (store errors go to `onError`).
   * @throws TypeError (synchronously) if `chunk` is not a string
   * @throws PartialLimitError (synchronously) when the job's partial output would pass
   *   `maxPartialBytes` (UTF-8 bytes, default 8 MiB) or `maxPartialChunks` (default 100 000)
   */
  append(chunk: string): Promise<number>;
  /** This run of the job: 1, then 2, 3, … when an executor ran it again (a worker died or handed it back). */
  readonly attempt: number;
  /**
   * The last value an earlier attempt passed to {@link JobContext.checkpoint}, or `undefined`
   * (first attempt, or none stored): continue from it instead of starting over.
   */
  readonly resumeFrom: unknown;
  /**
   * Store a small JSON value (at most `MAX_CHECKPOINT_BYTES`, 65 536, serialized) that a later
   * attempt reads as `resumeFrom`, e.g. `{ done: 120 }` after each document. Written in order with
   * the job's other writes, fenced like them. Resolves `true` once stored, `false` when the job
   * ended (or this attempt was fenced off); never rejects (store errors go to `onError`).
   * @throws TypeError (synchronously) for a value that is not JSON; RangeError over the size cap
   */
  checkpoint(value: unknown): Promise<boolean>;
}

/**
 * A job's partial output would pass its bound (`JobEngineOptions.maxPartialBytes` or
 * `maxPartialChunks`): thrown by `ctx.job.append`; nothing of the chunk is stored. Uncaught, the job
 * fails with this message.
 */
export class PartialLimitError extends RangeError {
  override readonly name = 'PartialLimitError';
  constructor(
    readonly jobId: string,
    readonly limit: { bytes: number; chunks: number },
  ) {
    super(
      `partial output of job ${jobId} would exceed its bound (${limit.bytes} bytes, ${limit.chunks} chunks): keep the output in the result, or in your own storage`,
    );
  }
}
