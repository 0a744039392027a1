/**
 * What the task fronts need from the job runner (`JobEngine`). The fronts only translate MCP task
 * requests into these calls; running, storing, cancelling and re-entering a job is the engine's.
 */
import type { CallContext, JsonObject, Next, ServerHost } from '@mcp-tether/core';
import type { JobMode, JobRecord } from '../store.js';

/** How a front asks the engine to start a job from a call. */
export interface TaskStartOptions {
  /** `task-2025` (2025-11-25 `params.task`) or `task-2026` (tasks extension). */
  mode: Extract<JobMode, 'task-2025' | 'task-2026'>;
  /** Time to live from creation, ms; `null` = unlimited. */
  ttlMs: number | null;
  /** Suggested poll interval, ms. */
  pollIntervalMs?: number;
}

/** Who asks (a call, or a `tasks/*` request): the engine turns it into a job owner. */
export interface TaskRequester {
  principal: string | undefined;
  sessionId: string | undefined;
  host: ServerHost;
}

/** The part of the job runner the task fronts use. */
export interface TaskEngine {
  /**
   * Start a job from this call: resolves with the stored record once `get` would find it (the
   * tasks extension forbids answering before); the rest of the chain and the handler then run
   * detached, with the job's own signal.
   */
  start(ctx: CallContext, next: Next, options: TaskStartOptions): Promise<JobRecord>;
  /** The job, or undefined for an unknown, expired or foreign id. */
  get(id: string, owner: string): Promise<JobRecord | undefined>;
  /** The owner's jobs, newest first. Rejects for a cursor it did not issue. */
  list(owner: string, options?: { cursor?: string; limit?: number }): Promise<{ jobs: JobRecord[]; nextCursor?: string }>;
  /** Cancel: the job turns `cancelled` (terminal) and its signal aborts. False if unknown, foreign or terminal. */
  cancel(id: string, owner: string, reason?: string): Promise<boolean>;
  /** Answers to outstanding input requests, by key (unknown or answered keys are ignored). False if unknown/foreign/terminal. */
  answer(id: string, owner: string, inputResponses: Record<string, JsonObject>): Promise<boolean>;
  /** Listen to a job's record after every change; returns the unsubscribe function. */
  onUpdate(id: string, listener: (job: JobRecord) => void): () => void;
  /** The owner a call or a `tasks/*` request maps to (principal, else session, else connection). */
  ownerOf(who: TaskRequester): string;
}
