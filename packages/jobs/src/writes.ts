/**
 * The store writes of one job attempt: queued in order, fenced (contract rule 8), progress
 * coalesced to at most one write per `progressEveryMs`, partial output kept within its bound.
 */
import { PartialLimitError } from './context.js';
import type { JobPatch, JobRecord, JobStore, WriteOptions } from './store.js';

const noop = () => {};

/** What a {@link RunWrites} needs of the engine. */
export interface WriteSettings {
  readonly store: JobStore;
  /** Progress reaches the store at most this often, ms. */
  readonly progressEveryMs: number;
  /** Partial output one job may append, in UTF-8 bytes, and in chunks. */
  readonly maxPartialBytes: number;
  readonly maxPartialChunks: number;
  readonly reportError: (error: unknown) => void;
}

/** One attempt's writes to its job's record, in order. */
export class RunWrites {
  /** Store writes, in order. */
  private chain: Promise<unknown> = Promise.resolve();
  private pendingProgress: JobPatch | undefined;
  private progressTimer: ReturnType<typeof setTimeout> | undefined;
  private lastProgressWrite = 0;
  /** Partial output appended by this attempt so far: UTF-8 bytes and chunks. */
  private partialBytes = 0;
  private partialChunks = 0;
  private readonly options: WriteOptions | undefined;

  /**
   * @param fence the fence of this attempt's writes, when it was claimed
   * @param written told of every update the store answered: the new record, or `undefined` when the
   *   store refused it (the job is terminal elsewhere, expired, or this attempt was fenced off);
   *   runs before the write's promise resolves
   */
  constructor(
    private readonly settings: WriteSettings,
    private readonly jobId: string,
    fence: number | undefined,
    private readonly written: (patch: JobPatch, job: JobRecord | undefined) => void,
  ) {
    this.options = fence === undefined ? undefined : { fence };
  }

  /** Settles once every write queued so far has (never rejects). */
  get idle(): Promise<unknown> {
    return this.chain;
  }

  /** Queue an update (in order). Resolves with the new record, or `undefined` (refused, or a store error, reported). */
  write(patch: JobPatch): Promise<JobRecord | undefined> {
    const p = this.chain.then(() => this.settings.store.update(this.jobId, patch, this.options));
    this.chain = p.catch(noop);
    return p.then(
      (job) => {
        this.written(patch, job);
        return job;
      },
      (err: unknown) => {
        this.settings.reportError(err);
        return undefined;
      },
    );
  }

  /** Merge progress fields into the pending write; written now, or once `progressEveryMs` has passed since the last. */
  progress(patch: JobPatch): void {
    this.pendingProgress = { ...this.pendingProgress, ...patch };
    const wait = this.lastProgressWrite + this.settings.progressEveryMs - Date.now();
    if (wait <= 0) {
      this.flushProgress();
      return;
    }
    if (this.progressTimer === undefined) {
      this.progressTimer = setTimeout(() => this.flushProgress(), wait);
      this.progressTimer.unref?.();
    }
  }

  /** Queue the pending progress write now, if any. */
  flushProgress(): void {
    if (this.progressTimer !== undefined) clearTimeout(this.progressTimer);
    this.progressTimer = undefined;
    const patch = this.pendingProgress;
    if (patch === undefined) return;
    this.pendingProgress = undefined;
    this.lastProgressWrite = Date.now();
    this.write(patch);
  }

  /**
   * Queue a chunk of partial output (after the pending progress). Resolves with the new chunk count,
   * `-1` when refused or on a store error (reported).
   * @throws PartialLimitError (synchronously) past `maxPartialBytes` or `maxPartialChunks`
   */
  append(chunk: string): Promise<number> {
    const bytes = Buffer.byteLength(chunk, 'utf8');
    const { maxPartialBytes, maxPartialChunks } = this.settings;
    if (this.partialBytes + bytes > maxPartialBytes || this.partialChunks + 1 > maxPartialChunks)
      throw new PartialLimitError(this.jobId, { bytes: maxPartialBytes, chunks: maxPartialChunks });
    this.partialBytes += bytes;
    this.partialChunks++;
    this.flushProgress();
    const p = this.chain.then(() => this.settings.store.appendPartial(this.jobId, chunk, this.options));
    this.chain = p.catch(noop);
    return p.catch((err: unknown) => {
      this.settings.reportError(err);
      return -1;
    });
  }
}
