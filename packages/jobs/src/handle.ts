/**
 * Handle mode: a selected call runs inline up to `inlineMs`; if it is not done by then it is
 * answered with a job handle ({@link JobHandle}: `structuredContent`, and a text the model can act
 * on) and the work goes on as a job, polled with `jobs.status`.
 */
import {
  ErrorCode,
  JOB_CANCEL_TOOL,
  JOB_STATUS_TOOL,
  JsonRpcErrorCode,
  ProtocolError,
  refuse,
  type CallContext,
  type CallResult,
  type InputRequest,
  type JsonObject,
  type Next,
} from '@mcp-tether/core';
import type { JobEngine } from './engine.js';
import { partialUriOf } from './ids.js';
import { isJobLimit, isTerminal, type JobHandle, type JobRecord } from './store.js';
import type { ModernUpdates } from './partial.js';
import { relayProgress } from './relay.js';

/** The job tools' names (core's wire constants, shared with `@mcp-tether/client`). */
export const STATUS_TOOL = JOB_STATUS_TOOL;
export const CANCEL_TOOL = JOB_CANCEL_TOOL;
const MAX_BACKOFF_MS = 15_000;
/** Working answers in a row after which the text tells the model to do other work. */
const PATIENCE = 3;

/** `pollAfterMs` after `n` working answers: 1 000 → 2 000 → 4 000 …, at most 15 000. */
export function backoffMs(n: number, base = 1000): number {
  return Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(n, 10));
}

/** What {@link handleMode} needs of the jobs middleware. */
export interface HandleModeOptions {
  readonly engine: JobEngine;
  /** How long a call runs inline before it is answered with a handle, ms. */
  readonly inlineMs: number;
  /** The idempotency key of a call. */
  readonly keyOf: (ctx: CallContext) => string | undefined;
  /** 2026-07-28 partial-output announcements, when configured. */
  readonly modernUpdates: ModernUpdates | undefined;
}

/**
 * Run a selected call in handle mode: start it as a job that may still finish inline, wait up to
 * `inlineMs`, then answer with its outcome (finished: exactly what the call would have returned)
 * or with a handle. A full owner gets a `BUSY` refusal.
 */
export async function handleMode(options: HandleModeOptions, ctx: CallContext, next: Next): Promise<CallResult> {
  const { engine, inlineMs, keyOf, modernUpdates } = options;
  const key = keyOf(ctx);
  let job: JobRecord;
  try {
    job = await engine.start(ctx, next, {
      mode: 'handle',
      inline: true,
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    });
  } catch (err) {
    if (isJobLimit(err)) {
      const global = (err as { scope?: unknown }).scope === 'global';
      return refuse(
        ctx,
        ErrorCode.BUSY,
        global
          ? `The server is running as many jobs as it takes (${err.live}). Try again later.`
          : `Too many of your jobs are running (${err.live}). Wait for one to finish (${STATUS_TOOL}) or stop one (${CANCEL_TOOL}), then try again.`,
        { live: err.live, scope: global ? 'global' : 'client' },
      );
    }
    throw err;
  }
  const owner = engine.ownerOf(ctx);
  const mine = engine.jobOf(ctx)?.id === job.id;
  // This call's job runs on a remote executor's worker: its progress reaches this request only
  // through the record, and a cancel of the request (before the handle) must cancel the job itself.
  const queued = !mine && engine.queuedBy(ctx) === job.id;
  if ((mine || queued) && ctx.era === 'modern' && modernUpdates !== undefined)
    await modernUpdates.follow(job.id, owner);
  const stopRelay = queued ? await relayProgress(engine, ctx, job.id, owner) : undefined;
  let rec: JobRecord | undefined;
  try {
    rec = await engine.wait(job.id, owner, { until: 'settled', timeoutMs: inlineMs, signal: ctx.signal });
  } finally {
    stopRelay?.();
  }
  if (ctx.abortReason !== undefined) {
    // As in process, where the abort ends the run: nobody holds the id of this job yet.
    if (queued) await engine.cancel(job.id, owner, ctx.abortReason.message).catch(() => undefined);
    throw ctx.abortReason;
  }
  if (queued && rec !== undefined && isTerminal(rec.status)) return inlineOutcome(ctx, rec);
  if (mine && rec !== undefined && !isTerminal(rec.status) && !engine.handOut(job.id)) {
    // It finished just now: answer with its outcome, as a plain call would.
    rec = await engine.wait(job.id, owner, { until: 'terminal', timeoutMs: 5_000 });
  }
  if (rec === undefined)
    throw (
      ctx.abortReason ??
      new ProtocolError(JsonRpcErrorCode.InternalError, `job ${job.id} expired before it could be answered`)
    );
  if (mine && isTerminal(rec.status)) return inlineOutcome(ctx, rec);
  return handleResult(rec, 0);
}

/** A finished job answered inline: exactly what the call would have returned. */
function inlineOutcome(ctx: CallContext, job: JobRecord): CallResult {
  if (job.status === 'completed') return job.result ?? { content: [] };
  if (job.status === 'failed') {
    const e = job.error ?? { code: JsonRpcErrorCode.InternalError, message: job.statusMessage ?? 'the job failed' };
    throw new ProtocolError(e.code, e.message, e.data);
  }
  throw (
    ctx.abortReason ?? new ProtocolError(JsonRpcErrorCode.InternalError, job.statusMessage ?? 'the job was cancelled')
  );
}

function describeFields(request: InputRequest): string {
  const params = (request.params ?? {}) as JsonObject;
  const schema = (params.requestedSchema ?? {}) as {
    properties?: Record<string, { type?: string; enum?: unknown[] }>;
    required?: string[];
  };
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .map(
      ([name, p]) =>
        `${name} (${Array.isArray(p.enum) ? `one of ${p.enum.map((x) => JSON.stringify(x)).join(', ')}` : (p.type ?? 'value')}${required.has(name) ? ', required' : ''})`,
    )
    .join('; ');
}

function elapsed(job: JobRecord): string {
  const s = Math.max(0, Math.round((Date.now() - job.createdAt) / 1000));
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
}

/**
 * The answer about a job: a text the model can act on, and the {@link JobHandle} as
 * `structuredContent`. `n` = working answers in a row so far (drives `pollAfterMs`).
 */
export function handleResult(job: JobRecord, n: number, note?: string): CallResult {
  const handle: JobHandle = {
    jobId: job.id,
    status: job.status,
    pollAfterMs: job.status === 'working' ? backoffMs(n, job.pollIntervalMs ?? 1000) : 0,
  };
  if (job.progress !== undefined) handle.progress = job.progress;
  if (job.total !== undefined) handle.total = job.total;
  if (job.statusMessage !== undefined) handle.message = job.statusMessage;
  handle.partialUri = partialUriOf(job.id);
  const lead = note === undefined ? '' : `${note} `;
  const ask = `${STATUS_TOOL} {"jobId":"${job.id}"}`;
  switch (job.status) {
    case 'working': {
      const secs = Math.round(handle.pollAfterMs / 1000);
      const pct =
        job.progress !== undefined && job.total !== undefined && job.total > 0
          ? ` ${Math.floor((job.progress / job.total) * 100)}% done (${job.progress}/${job.total})`
          : '';
      const msg = job.statusMessage !== undefined ? `, now at: ${job.statusMessage}` : '';
      const patience =
        n > PATIENCE
          ? ` It has been running for ${elapsed(job)} and you have checked ${n} times in a row. Do other work now and check back later (in ${secs} s or more): checking more often will not make it finish sooner.`
          : '';
      const text = `${lead}Job ${job.id} (${job.tool}) is still running${pct}${msg}. Call ${ask} in about ${secs} s to get the result (add "waitMs": 20000 to wait for it), or jobs.cancel to stop it. Partial output so far: ${handle.partialUri}.${patience}`;
      return { content: [{ type: 'text', text }], structuredContent: handle as unknown as JsonObject };
    }
    case 'input_required': {
      const requests = job.inputRequests ?? {};
      handle.inputRequests = requests;
      const parts = Object.entries(requests).map(([key, r]) => {
        const message = typeof r.params?.message === 'string' ? r.params.message : 'input needed';
        const fields = describeFields(r);
        return `"${key}": ${JSON.stringify(message)}${fields ? ` — fields: ${fields}` : ''}`;
      });
      const firstKey = Object.keys(requests)[0] ?? 'key';
      const text = `${lead}Job ${job.id} (${job.tool}) is waiting for input before it can go on. Questions: ${parts.join('; ')}. Ask the user, then answer with ${STATUS_TOOL} {"jobId":"${job.id}","inputResponses":{"${firstKey}":{"action":"accept","content":{...}}}} (or "action":"decline" / "cancel").`;
      return { content: [{ type: 'text', text }], structuredContent: handle as unknown as JsonObject };
    }
    case 'completed': {
      const result = job.result ?? { content: [] };
      handle.result = result;
      const produced =
        Array.isArray(result.content) && result.content.length > 0
          ? (result.content as unknown[])
          : [{ type: 'text', text: `Job ${job.id} completed.` }];
      const out: JsonObject = {
        content: lead ? [{ type: 'text', text: lead.trim() }, ...produced] : produced,
        structuredContent: handle as unknown as JsonObject,
      };
      if (result.isError === true) out.isError = true;
      return out;
    }
    case 'failed': {
      if (job.error !== undefined) handle.error = job.error;
      const why = job.error?.message ?? job.statusMessage ?? 'unknown error';
      return {
        content: [{ type: 'text', text: `${lead}Job ${job.id} (${job.tool}) failed: ${why}` }],
        isError: true,
        structuredContent: handle as unknown as JsonObject,
      };
    }
    case 'cancelled':
      return {
        content: [
          {
            type: 'text',
            text: `${lead}Job ${job.id} (${job.tool}) was cancelled (${job.statusMessage ?? 'no reason given'}). It will not produce a result.`,
          },
        ],
        structuredContent: handle as unknown as JsonObject,
      };
  }
}
