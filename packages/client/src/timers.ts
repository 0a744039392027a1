/**
 * One call's life on the client: its own progress token, the timers (silence watchdog, resetting
 * timeout, total cap) armed as one timer for the nearest deadline, and the abort that sends the
 * cancel (through the SDK's `signal` option) and settles the call with a {@link CallAbortedError}.
 */
import { diagnostics } from '@mcp-tether/core';
import { CallAbortedError, type CallAbortKind, type ProgressReport, reasonText } from './errors.js';
import type { CallToolOptions, CallTimers } from './types.js';

/** The latest `setTimeout` delay Node accepts (ms); handed to the SDK so that its own timer never fires first. */
const MAX_TIMER_MS = 2_147_483_647;

/** A call in flight, as the progress handler and the asking watch reach it. */
export interface ActiveCall {
  /** A `notifications/progress` for this call's token. */
  report(params: Record<string, unknown>): void;
  /** The client stopped (or started) asking a person: re-arm the timers. */
  rearm(): void;
}

/** Sends the request with the params and the SDK request options (`signal`, `timeout`) given. */
export type Send = (params: Record<string, unknown>, sdkOptions: Record<string, unknown>) => Promise<any>;

/** What {@link callRunner} needs from the wrapper. */
export interface RunnerParts {
  /** The wrapper's defaults for every call. */
  defaults: CallTimers;
  /** Calls in flight by token (shared with the progress handler). */
  calls: Map<string | number, ActiveCall>;
  /** A fresh token of this wrapper. */
  newToken(): string;
  /** True while the client's own elicitation handler runs (timeout and watchdog paused). */
  asking(): boolean;
  /** More `_meta` for each request (e.g. the 2026-07-28 log level), given the caller's. */
  extraMeta(meta: Record<string, unknown>): Record<string, unknown>;
}

const on = (ms: number) => ms > 0 && Number.isFinite(ms);

/** The function that runs one request with its token, timers and cancel. */
export function callRunner(parts: RunnerParts) {
  return (target: string, send: Send, baseParams: Record<string, unknown>, o: CallToolOptions): Promise<any> =>
    runCall(parts, target, send, baseParams, o);
}

/** One request (`target`: the tool or method name, for messages) with its token, timers and cancel. */
function runCall(
  parts: RunnerParts,
  target: string,
  send: Send,
  baseParams: Record<string, unknown>,
  o: CallToolOptions,
): Promise<any> {
  const silenceMs = o.silenceMs ?? parts.defaults.silenceMs ?? 30_000;
  const timeoutMs = o.timeoutMs ?? parts.defaults.timeoutMs ?? 60_000;
  const reset = o.resetTimeoutOnProgress ?? parts.defaults.resetTimeoutOnProgress ?? true;
  const maxTotalMs = o.maxTotalMs ?? parts.defaults.maxTotalMs ?? 3_600_000;
  const startedAt = Date.now();
  if (o.signal?.aborted) return Promise.reject(abortedBeforeSend(target, o.signal));
  const token = parts.newToken();
  const ac = new AbortController();
  let lastActivity = startedAt;
  let lastProgress: ProgressReport | undefined;
  let abortError: CallAbortedError | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let rejectNow: ((error: Error) => void) | undefined;

  const abort = (kind: CallAbortKind, message: string, cause?: unknown) => {
    if (abortError) return;
    const elapsed = Date.now() - startedAt;
    abortError = new CallAbortedError(`${target}: ${message}`, kind, target, elapsed, lastProgress, { cause });
    // The SDK sends notifications/cancelled with this reason (or closes the 2026 HTTP stream).
    ac.abort(abortError.message);
    rejectNow?.(abortError);
  };

  // One timer for the nearest deadline; progress only moves `lastActivity`, the timer re-arms when it fires.
  const arm = () => {
    const now = Date.now();
    const nearest = nearestDeadline(startedAt, lastActivity, maxTotalMs, timeoutMs, silenceMs, reset, parts.asking());
    if (nearest === undefined) return;
    const [at, kind] = nearest;
    if (at > now) {
      timer = setTimeout(arm, at - now);
      return;
    }
    const quiet = now - lastActivity;
    if (kind === 'silence' && diagnostics.watchdog.hasSubscribers) publishSilence(target, baseParams, quiet);
    abort(kind, expiryMessage(kind, quiet, maxTotalMs, timeoutMs, silenceMs, reset));
  };

  const onCallerAbort = () => abort('cancelled', `cancelled (${reasonText(o.signal!.reason)})`, o.signal!.reason);
  o.signal?.addEventListener('abort', onCallerAbort, { once: true });

  parts.calls.set(token, {
    rearm() {
      if (abortError) return;
      lastActivity = Date.now();
      if (timer) clearTimeout(timer);
      timer = undefined;
      arm();
    },
    report(p) {
      const report = progressReportOf(p);
      if (report === undefined) return;
      lastActivity = Date.now();
      lastProgress = report;
      o.onProgress?.(report);
    },
  });

  o.onToken?.(token);
  const params = requestParams(parts, baseParams, o, token);
  arm();
  const settle = () => {
    if (timer) clearTimeout(timer);
    o.signal?.removeEventListener('abort', onCallerAbort);
    parts.calls.delete(token);
  };
  let sent: Promise<any>;
  try {
    sent = send(params, { signal: ac.signal, timeout: MAX_TIMER_MS });
  } catch (error) {
    settle();
    return Promise.reject(error);
  }
  // Settle at the abort itself, not when the SDK lets go (SDK 2.x finishes fulfilling an
  // input_required round before it looks at the signal again).
  return new Promise((resolve, reject) => {
    rejectNow = (e) => {
      settle();
      reject(e);
    };
    sent.then(
      (result) => {
        settle();
        if (abortError) reject(abortError);
        else resolve(result);
      },
      (error) => {
        settle();
        reject(abortError ?? error);
      },
    );
  });
}

/** A `notifications/progress`'s params as a report; `undefined` when `progress` is not a finite number. */
export function progressReportOf(p: Record<string, unknown>): ProgressReport | undefined {
  const progress = p.progress;
  if (typeof progress !== 'number' || !Number.isFinite(progress)) return undefined;
  return {
    progress,
    ...(typeof p.total === 'number' && { total: p.total }),
    ...(typeof p.message === 'string' && { message: p.message }),
  };
}

/** The error of a call whose signal was aborted before it was sent. */
function abortedBeforeSend(target: string, signal: AbortSignal): CallAbortedError {
  return new CallAbortedError(
    `${target}: cancelled before it was sent (${reasonText(signal.reason)})`,
    'cancelled',
    target,
    0,
  );
}

/** The request's params: the caller's, with our progress token and the extra `_meta` in `_meta`. */
function requestParams(
  parts: RunnerParts,
  baseParams: Record<string, unknown>,
  o: CallToolOptions,
  token: string,
): Record<string, unknown> {
  const meta: Record<string, unknown> = { ...o.meta, progressToken: token };
  Object.assign(meta, parts.extraMeta(meta));
  return { ...baseParams, ...o.params, _meta: { ...(baseParams._meta as object | undefined), ...meta } };
}

/**
 * The nearest deadline of a call and what it is, `undefined` without any. While the client asks a
 * person (`asking`), only the total cap counts.
 */
function nearestDeadline(
  startedAt: number,
  lastActivity: number,
  maxTotalMs: number,
  timeoutMs: number,
  silenceMs: number,
  reset: boolean,
  asking: boolean,
): [number, CallAbortKind] | undefined {
  const due: Array<[number, CallAbortKind]> = [];
  if (on(maxTotalMs)) due.push([startedAt + maxTotalMs, 'total']);
  if (on(timeoutMs) && !asking) due.push([(reset ? lastActivity : startedAt) + timeoutMs, 'timeout']);
  if (on(silenceMs) && !asking) due.push([lastActivity + silenceMs, 'silence']);
  if (!due.length) return undefined;
  due.sort((a, b) => a[0] - b[0]);
  return due[0];
}

/** `tether:watchdog`: the silence watchdog gave up on a call that was quiet for `quiet` ms. */
function publishSilence(target: string, baseParams: Record<string, unknown>, quiet: number): void {
  diagnostics.watchdog.publish({
    // callTool runs under the tool's name, request() under the method's
    method: target === baseParams.name ? 'tools/call' : target,
    name: typeof baseParams.name === 'string' ? baseParams.name : undefined,
    silentMs: quiet,
  });
}

/** Why a call's timer gave up (`quiet`: ms since its last progress or its start). */
function expiryMessage(
  kind: CallAbortKind,
  quiet: number,
  maxTotalMs: number,
  timeoutMs: number,
  silenceMs: number,
  reset: boolean,
): string {
  if (kind === 'total') return `exceeded the total cap of ${maxTotalMs} ms; cancelled`;
  if (kind === 'timeout')
    return reset
      ? `timed out: no progress and no result for ${quiet} ms (timeoutMs ${timeoutMs}); cancelled`
      : `timed out after ${timeoutMs} ms; cancelled`;
  return `no progress and no result for ${quiet} ms (silence watchdog, silenceMs ${silenceMs}); the server may be stuck or gone; cancelled`;
}
