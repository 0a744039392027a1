/**
 * Following job handles (`@mcp-tether/jobs` for clients without tasks): a tool answers at once with
 * a handle in `structuredContent`; the client asks `jobs.status { jobId }` after `pollAfterMs`
 * until the job is terminal, reads the partial output resource, and stops it with `jobs.cancel`.
 */
import {
  type InputRequest,
  JOB_CANCEL_TOOL,
  JOB_STATUS_TOOL,
  JOB_STATUSES,
  type JobHandle,
  type JobStatus,
  PARTIAL_META_KEY,
} from '@mcp-tether/core';
import { JobError } from './errors.js';
import { CANCEL_TIMERS, Following } from './follower.js';
import { pollDelay, wait } from './poll.js';
import { progressReportOf } from './timers.js';
import type { Caller, CallToolOptions, ToolResult } from './types.js';

/** The job handle and its status: one definition in `@mcp-tether/core`, which `@mcp-tether/jobs` writes. */
export type { InputRequest, JobHandle, JobStatus };

const STATUSES = new Set<string>(JOB_STATUSES);

/** The handle in a tool result, or `undefined` when the result is not a job handle (the tool finished inline). */
export function jobHandleOf(result: ToolResult | undefined): JobHandle | undefined {
  const s = result?.structuredContent as Partial<JobHandle> | undefined;
  if (!s || typeof s !== 'object' || typeof s.jobId !== 'string' || !STATUSES.has(s.status as string)) return undefined;
  return s as JobHandle;
}

/** Options of {@link followJob} and `TetherClient.callJob`. */
export interface JobOptions extends CallToolOptions {
  /** Each handle seen (the first one, then every `jobs.status` answer). */
  onStatus?: (handle: JobHandle) => void;
  /** New partial output (the text appended since the last read), read from `partialUri`. */
  onPartial?: (text: string, uri: string) => void;
  /**
   * How partial output is read: `'poll'` (default: read after each status answer) or
   * `'subscribe'` (read on each `notifications/resources/updated`, and once at the end:
   * `resources/subscribe` on 2025-era connections, a `subscriptions/listen` stream on 2026-07-28;
   * polling when the server cannot subscribe).
   */
  partial?: 'poll' | 'subscribe';
  /**
   * Answer a job's questions (`input_required`). Without it, the client's own `elicitation/create`
   * handler answers them (the one set with `setRequestHandler`, or `connect`'s `onElicit`); with
   * neither, such a job fails with a {@link JobError}.
   */
  onInputRequest?: (requests: Record<string, InputRequest>, handle: JobHandle) => Promise<Record<string, unknown>>;
  /** Longest wait between two polls, ms. Default 15 000. */
  maxPollMs?: number;
  /** Shortest wait between two polls, ms, whatever the server says. Default 250. */
  minPollMs?: number;
  /**
   * Long-poll: ask `jobs.status { jobId, waitMs }` (an `@mcp-tether/jobs` extension: the server
   * answers as soon as the job completes, fails or needs input, at the latest after `waitMs`).
   * Default: none (plain polls). Keep it below `silenceMs` unless the server sends heartbeats.
   */
  waitMs?: number;
  /**
   * Long-poll for the server's own schedule: each `jobs.status` carries `waitMs` = the handle's
   * `pollAfterMs` (capped at a quarter of `timeoutMs` and half of `silenceMs`), so the server holds the poll
   * and answers at once when the job ends or needs input, and the client does not wait in between.
   * When a server answers such a poll `working` well before `waitMs` (it does not long-poll), the
   * client goes back to waiting `pollAfterMs` itself. Ignored when `waitMs` is given. Default false
   * (`TetherClient.follow` turns it on).
   */
  longPoll?: boolean;
  /** Tool names. Defaults `jobs.status`, `jobs.cancel` (`JOB_STATUS_TOOL`, `JOB_CANCEL_TOOL` of `@mcp-tether/core`). */
  statusTool?: string;
  cancelTool?: string;
}

/**
 * Follow a job handle to its end: waits `pollAfterMs` (the server's hint; the client's own
 * `backoffMs` schedule when a handle has none), asks `jobs.status`, surfaces each handle, its
 * progress (strictly increasing, with what the status calls stream) and the partial output, and
 * answers questions through `onInputRequest` (else the client's own elicitation handler).
 * `maxTotalMs` caps the whole follow; a follow that ends for any reason but the job's own end
 * (the cap, `signal`, a status call that timed out, an answer that is no handle) sends
 * `jobs.cancel` first.
 *
 * @returns the job's result (`completed`; an `isError` tool result is returned, not thrown)
 * @throws {JobError} the job `failed`, was `cancelled` by someone else, or needs input nobody gave
 * @throws {CallAbortedError} `signal` aborted (`cancelled`), the cap passed (`total`), or a status
 *   call gave up (`timeout`, `silence`); `jobs.cancel` was sent
 */
export async function followJob(
  tc: Caller,
  first: JobHandle,
  options: JobOptions = {},
  following = new Following(options, tc.defaults),
): Promise<ToolResult> {
  const { onStatus, onPartial } = options;
  const cancelTool = options.cancelTool ?? JOB_CANCEL_TOOL;
  const jobId = first.jobId;
  const signal = following.signal;
  const partial = onPartial ? partialReader(tc, onPartial, options.partial ?? 'poll', signal) : undefined;
  const polls = new StatusPolls(tc, jobId, options, following);
  let handle = first;
  try {
    for (;;) {
      onStatus?.(handle);
      following.progress(progressReportOf(handle as unknown as Record<string, unknown>));
      // Partial output is a side channel: a failed read (say the resource expired) does not stop following the job.
      if (handle.partialUri && partial)
        await partial
          .seen(handle.partialUri, handle.status !== 'working' && handle.status !== 'input_required')
          .catch(() => signal.throwIfAborted());
      const result = endOf(handle, jobId);
      if (result) return result;
      handle = handle.status === 'input_required' ? await polls.answer(handle) : await polls.next(handle);
    }
  } catch (error) {
    return await following.giveUp(error, `job ${jobId}`, cancelTool, () =>
      tc.callTool(cancelTool, { jobId }, CANCEL_TIMERS),
    );
  } finally {
    following.close();
    await partial?.close();
  }
}

/** The job's result when it `completed`, `undefined` while it goes on. @throws {JobError} it `failed` or was `cancelled` */
function endOf(handle: JobHandle, jobId: string): ToolResult | undefined {
  switch (handle.status) {
    case 'completed':
      return (handle.result ?? { content: [] }) as ToolResult;
    case 'failed':
      throw new JobError(
        `job ${jobId} failed: ${handle.error?.message ?? handle.message ?? 'no reason given'}`,
        jobId,
        'failed',
        handle.error,
      );
    case 'cancelled':
      throw new JobError(
        `job ${jobId} was cancelled${handle.message ? `: ${handle.message}` : ''}`,
        jobId,
        'cancelled',
      );
  }
  return undefined;
}

/** The `jobs.status` calls of one follow: the polls (waits, long-polls, backoff) and the answers to questions. */
class StatusPolls {
  private readonly statusTool: string;
  private readonly minPollMs: number;
  private readonly maxPollMs: number;
  /** Longest `waitMs` of a long-poll: a quarter of `timeoutMs`, half of `silenceMs` (15 000 without them). */
  private readonly longPollCap: number;
  private longPoll: boolean;
  /** Polls since the last answer (the backoff's step). */
  private attempt = 0;

  constructor(
    private readonly tc: Caller,
    private readonly jobId: string,
    private readonly options: JobOptions,
    private readonly following: Following,
  ) {
    this.statusTool = options.statusTool ?? JOB_STATUS_TOOL;
    this.maxPollMs = options.maxPollMs ?? 15_000;
    this.minPollMs = options.minPollMs ?? 250;
    this.longPoll = options.longPoll === true;
    const part = (n: number) => (ms: number | undefined, dflt: number) =>
      ms !== undefined && ms > 0 && Number.isFinite(ms) ? ms / n : dflt;
    const [half, quarter] = [part(2), part(4)];
    this.longPollCap = Math.floor(
      Math.min(
        quarter(options.timeoutMs ?? tc.defaults.timeoutMs, 15_000),
        half(options.silenceMs ?? tc.defaults.silenceMs, 15_000),
      ),
    );
  }

  /** Answer the questions of an `input_required` handle (`onInputRequest`, else the client's own handler). */
  async answer(handle: JobHandle): Promise<JobHandle> {
    const { tc, jobId, options } = this;
    const requests = handle.inputRequests ?? {};
    const inputResponses = options.onInputRequest
      ? await options.onInputRequest(requests, handle)
      : await tc.answerInputRequests(requests, this.following.signal);
    if (!inputResponses)
      throw new JobError(
        `job ${jobId} needs input (${Object.keys(requests).join(', ')}) and no onInputRequest was given (nor an elicitation handler on the client)`,
        jobId,
        'input_required',
      );
    const next = await tc.callTool(this.statusTool, { jobId, inputResponses }, this.following.requestOptions(options));
    this.attempt = 0;
    return statusOf(next, jobId);
  }

  /** Wait what the handle (or the backoff) says, less what the server holds the poll, then ask `jobs.status`. */
  async next(handle: JobHandle): Promise<JobHandle> {
    const { tc, jobId, options, following } = this;
    const signal = following.signal;
    const delay = Math.min(
      pollDelay(handle.pollAfterMs, this.attempt++, this.minPollMs, this.maxPollMs),
      following.remaining(),
    );
    const held = options.waitMs ?? (this.longPoll ? Math.min(delay, this.longPollCap) : 0);
    if (held < delay || options.waitMs !== undefined)
      await wait(options.waitMs !== undefined ? delay : delay - held, signal);
    signal.throwIfAborted();
    const askedAt = Date.now();
    const next = statusOf(
      await tc.callTool(
        this.statusTool,
        { jobId, ...(held > 0 && { waitMs: held }) },
        following.requestOptions(options),
      ),
      jobId,
    );
    // A server that does not hold the poll answers `working` at once: wait on the client from now on.
    if (this.longPoll && options.waitMs === undefined && next.status === 'working' && Date.now() - askedAt < held / 2)
      this.longPoll = false;
    return next;
  }
}

function statusOf(result: ToolResult, jobId: string): JobHandle {
  const handle = jobHandleOf(result);
  if (handle) return handle;
  const text = result.content?.find((c) => c.type === 'text')?.text;
  throw new JobError(
    `job ${jobId}: the status answer is not a job handle${text ? `: ${text}` : ''}`,
    jobId,
    result.isError ? 'failed' : 'unknown',
  );
}

/** Reads a partial-output resource and hands over what was appended since the last read. */
function partialReader(
  tc: Caller,
  onPartial: (text: string, uri: string) => void,
  mode: 'poll' | 'subscribe',
  signal?: AbortSignal,
) {
  let uri: string | undefined;
  let delivered = '';
  let reading: Promise<void> | undefined;
  let again = false;
  let unsubscribe: (() => Promise<void>) | undefined;

  let nextUri: string | undefined;
  const readOnce = async () => {
    const r = await tc.request('resources/read', { uri: nextUri ?? uri }, { signal, timeoutMs: 30_000 });
    const contents = (r.contents ?? []) as Array<{ text?: unknown; _meta?: Record<string, any> }>;
    const text = contents.map((c) => (typeof c.text === 'string' ? c.text : '')).join('');
    // @mcp-tether/jobs pages its partial output: `?offset=N` returns the chunks from N on, and
    // `_meta["io.github.mcp-tether/partial"].nextUri` says where to read next. Other servers: the whole text, diffed.
    const paging = contents[0]?._meta?.[PARTIAL_META_KEY] as { nextUri?: unknown } | undefined;
    let added: string;
    if (typeof paging?.nextUri === 'string') {
      added = text;
      nextUri = paging.nextUri;
    } else {
      added = text.startsWith(delivered) ? text.slice(delivered.length) : text;
      delivered = text;
    }
    if (added) onPartial(added, uri!);
  };
  // One read at a time; an update during a read asks for one more read after it.
  const read = (): Promise<void> => {
    if (reading) {
      again = true;
      return reading;
    }
    reading = (async () => {
      do {
        again = false;
        await readOnce();
      } while (again);
    })().finally(() => (reading = undefined));
    return reading;
  };

  return {
    async seen(u: string, final: boolean) {
      if (uri === undefined) {
        uri = u;
        if (mode === 'subscribe') unsubscribe = await tc.subscribeResource(u, () => void read().catch(() => undefined));
      }
      if (mode === 'poll' || final || !unsubscribe) await read();
      if (final) await reading;
    },
    async close() {
      await unsubscribe?.().catch(() => undefined);
    },
  };
}
