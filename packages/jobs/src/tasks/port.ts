/**
 * What the task fronts need from the job runner: the part of {@link JobEngine} they call. The
 * fronts only translate MCP task requests into these calls; running, storing, cancelling and
 * re-entering a job is the engine's.
 */
import type { JobEngine } from '../engine.js';

/** The part of the job runner the task fronts use. */
export type TaskEngine = Pick<
  JobEngine,
  'start' | 'get' | 'list' | 'cancel' | 'answer' | 'wait' | 'watch' | 'ownerOf' | 'tap'
>;
