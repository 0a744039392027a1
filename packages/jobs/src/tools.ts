/**
 * The job tools a model uses in handle mode: `jobs.status { jobId, waitMs?, inputResponses? }`
 * (status, progress, the result once done, answers to input requests, a long-poll) and
 * `jobs.cancel { jobId }`. Answers carry the `JobHandle` as `structuredContent`.
 */
import { ProtocolError, refusal, type CallContext, type CallResult } from '@mcp-tether/core';
import { checkInputResponses } from '@mcp-tether/mrtr';
import { z } from 'zod';
import type { JobEngine } from './engine.js';
import { CANCEL_TOOL, STATUS_TOOL, handleResult } from './handle.js';
import { relayProgress } from './relay.js';
import { isTerminal, type JobRecord } from './store.js';

/** Refusal codes of the job tools (in `structuredContent.code` of an `isError` result). */
export const JobErrorCode = {
  /** Unknown, expired, or another principal's job: the same answer for all three. */
  JOB_NOT_FOUND: 'JOB_NOT_FOUND',
  /** The `jobId` is not shaped like a job id. */
  INVALID_JOB_ID: 'INVALID_JOB_ID',
  /** `inputResponses` were malformed. */
  INVALID_INPUT: 'INVALID_INPUT',
} as const;

/** The part of an `McpServer` (either SDK line) {@link JobsMiddleware.registerTools} uses. */
export interface ToolServer {
  registerTool(name: string, config: Record<string, unknown>, cb: (...args: any[]) => unknown): unknown;
  registerResource(
    name: string,
    template: any,
    config: Record<string, unknown>,
    cb: (...args: any[]) => unknown,
  ): unknown;
}

const JOB_ID = /^[A-Za-z0-9_-]{16,128}$/;

/** `jobs.status` and `jobs.cancel` of one jobs middleware (one engine). */
export class JobTools {
  /** Working answers in a row, per job (for the backoff and the "do other work" hint); bounded. */
  private readonly polls = new Map<string, number>();

  constructor(
    private readonly engine: JobEngine,
    /** Longest `jobs.status` long-poll, ms. */
    private readonly maxWaitMs: number,
  ) {}

  /** Register `jobs.status` and `jobs.cancel` on a server. */
  register(server: ToolServer): void {
    server.registerTool(
      STATUS_TOOL,
      {
        title: 'Job status',
        description:
          'Check a job started by a tool that answered with a jobId: its status, progress, and its result once done. Pass waitMs (up to 25000) to wait for it to finish. When the job needs input, pass the answers as inputResponses.',
        inputSchema: {
          jobId: z.string().describe('The jobId from the tool result'),
          waitMs: z
            .number()
            .int()
            .min(0)
            .optional()
            .describe(`Wait up to this many ms (at most ${this.maxWaitMs}) for the job to finish or need input`),
          inputResponses: z
            .record(z.string(), z.any())
            .optional()
            .describe('Answers to the questions of a job whose status is input_required, by key'),
        },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async (args: { jobId: string; waitMs?: number; inputResponses?: Record<string, unknown> }, ctx: CallContext) =>
        this.status(ctx, args),
    );
    server.registerTool(
      CANCEL_TOOL,
      {
        title: 'Cancel job',
        description: 'Stop a running job (its partial output stays readable until the job expires).',
        inputSchema: { jobId: z.string().describe('The jobId from the tool result') },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      async (args: { jobId: string }, ctx: CallContext) => this.cancel(ctx, args.jobId),
    );
  }

  /** The tool names (the jobs middleware lets them through untouched). */
  static readonly names: ReadonlySet<string> = new Set([STATUS_TOOL, CANCEL_TOOL]);

  private pollsOf(id: string): number {
    const n = this.polls.get(id) ?? 0;
    this.polls.delete(id);
    this.polls.set(id, n + 1);
    if (this.polls.size > 10_000) this.polls.delete(this.polls.keys().next().value!);
    return n;
  }

  async status(
    ctx: CallContext,
    args: { jobId: string; waitMs?: number; inputResponses?: Record<string, unknown> },
  ): Promise<CallResult> {
    const id = args.jobId;
    if (!JOB_ID.test(id)) return invalidId(id);
    const owner = this.engine.ownerOf(ctx);
    let answered = false;
    let note: string | undefined;
    if (args.inputResponses !== undefined) {
      try {
        note = await this.invalidNote(id, owner, args.inputResponses);
        answered = await this.engine.answer(id, owner, args.inputResponses);
      } catch (err) {
        if (err instanceof ProtocolError)
          return refusal(JobErrorCode.INVALID_INPUT, `The answers were not understood: ${err.message}.`);
        throw err;
      }
      if (!answered) {
        const job = await this.engine.get(id, owner);
        if (job === undefined) return notFound(id);
        return handleResult(
          job,
          this.polls.get(id) ?? 0,
          `This job is not waiting for input (it is ${job.status}); the answers were ignored.`,
        );
      }
      // Let the job take the answers before reporting.
      await this.engine.wait(id, owner, { until: 'change', timeoutMs: 2_000, signal: ctx.signal });
    }
    const waitMs = Math.min(args.waitMs ?? 0, this.maxWaitMs);
    let job: JobRecord | undefined;
    if (waitMs > 0) {
      // the job's progress goes out on the poll's own progress token while it waits
      const stop = await relayProgress(this.engine, ctx, id, owner);
      try {
        job = await this.engine.wait(id, owner, { until: 'settled', timeoutMs: waitMs, signal: ctx.signal });
      } finally {
        stop?.();
      }
    } else job = await this.engine.get(id, owner);
    if (job === undefined) {
      this.polls.delete(id);
      return notFound(id);
    }
    if (job.status !== 'working') {
      this.polls.delete(id);
      return handleResult(job, 0, note);
    }
    return handleResult(job, this.pollsOf(id) + 1, note);
  }

  /**
   * What to tell the model about answers whose content does not fit the form (they reach the job,
   * which drops them and asks again, as `@mcp-tether/mrtr` does inline), or `undefined`.
   * @throws ProtocolError `-32602` for malformed answers
   */
  private async invalidNote(id: string, owner: string, responses: unknown): Promise<string | undefined> {
    const job = await this.engine.get(id, owner);
    if (job?.status !== 'input_required' || job.inputRequests === undefined) return undefined;
    const { invalid } = checkInputResponses(job.inputRequests, responses);
    const keys = Object.keys(invalid);
    if (keys.length === 0) return undefined;
    const why = keys.map((k) => `"${k}": ${invalid[k]}`).join('; ');
    return `The answers did not fit the form (${why}), so the job asks again.`;
  }

  async cancel(ctx: CallContext, id: string): Promise<CallResult> {
    if (!JOB_ID.test(id)) return invalidId(id);
    const owner = this.engine.ownerOf(ctx);
    const before = await this.engine.get(id, owner);
    if (before === undefined) return notFound(id);
    if (isTerminal(before.status))
      return handleResult(before, 0, `Nothing to cancel: the job is already ${before.status}.`);
    const job = await this.engine.cancel(id, owner, `${CANCEL_TOOL} was called`);
    this.polls.delete(id);
    if (job === undefined) return notFound(id);
    return handleResult(job, 0);
  }
}

function invalidId(id: string): CallResult {
  const shown = JSON.stringify(id.slice(0, 40));
  return refusal(
    JobErrorCode.INVALID_JOB_ID,
    `${shown} is not a job id (a job id is 16 to 128 letters, digits, - and _). Use the jobId exactly as the tool result gave it.`,
  );
}

function notFound(id: string): CallResult {
  return refusal(
    JobErrorCode.JOB_NOT_FOUND,
    `There is no job ${id} for you: it never existed, it expired, or it was started by someone else. Start the tool again if you still need its result.`,
    {
      jobId: id,
    },
  );
}
