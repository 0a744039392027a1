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
  const { defaults, calls } = parts;
  return function run(
    target: string,
    send: Send,
    baseParams: Record<string, unknown>,
    o: CallToolOptions,
  ): Promise<any> {
    const silenceMs = o.silenceMs ?? defaults.silenceMs ?? 30_000;
    const timeoutMs = o.timeoutMs ?? defaults.timeoutMs ?? 60_000;
    const reset = o.resetTimeoutOnProgress ?? defaults.resetTimeoutOnProgress ?? true;
    const maxTotalMs = o.maxTotalMs ?? defaults.maxTotalMs ?? 3_600_000;
    const startedAt = Date.now();
    if (o.signal?.aborted) {
      return Promise.reject(
        new CallAbortedError(
          `${target}: cancelled before it was sent (${reasonText(o.signal.reason)})`,
          'cancelled',
          target,
          0,
        ),
      );
    }

    const token = parts.newToken();
    const ac = new AbortController();
    let lastActivity = startedAt;
    let lastProgress: ProgressReport | undefined;
    let abortError: CallAbortedError | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let rejectNow: ((error: Error) => void) | undefined;

    const abort = (kind: CallAbortKind, message: string, cause?: unknown) => {
      if (abortError) return;
      abortError = new CallAbortedError(`${target}: ${message}`, kind, target, Date.now() - startedAt, lastProgress, {
        cause,
      });
      // The SDK sends notifications/cancelled with this reason (or closes the 2026 HTTP stream).
      ac.abort(abortError.message);
      rejectNow?.(abortError);
    };

    // One timer for the nearest deadline; progress only moves `lastActivity`, the timer re-arms when it fires.
    const arm = () => {
      const now = Date.now();
      const asking = parts.asking();
      const due: Array<[number, CallAbortKind]> = [];
      if (on(maxTotalMs)) due.push([startedAt + maxTotalMs, 'total']);
      if (on(timeoutMs) && !asking) due.push([(reset ? lastActivity : startedAt) + timeoutMs, 'timeout']);
      if (on(silenceMs) && !asking) due.push([lastActivity + silenceMs, 'silence']);
      if (!due.length) return;
      due.sort((a, b) => a[0] - b[0]);
      const [at, kind] = due[0]!;
      if (at > now) {
        timer = setTimeout(arm, at - now);
        return;
      }
      const quiet = now - lastActivity;
      if (kind === 'total') abort('total', `exceeded the total cap of ${maxTotalMs} ms; cancelled`);
      else if (kind === 'timeout')
        abort(
          'timeout',
          reset
            ? `timed out: no progress and no result for ${quiet} ms (timeoutMs ${timeoutMs}); cancelled`
            : `timed out after ${timeoutMs} ms; cancelled`,
        );
      else {
        if (diagnostics.watchdog.hasSubscribers)
          diagnostics.watchdog.publish({
            // callTool runs under the tool's name, request() under the method's
            method: target === baseParams.name ? 'tools/call' : target,
            name: typeof baseParams.name === 'string' ? baseParams.name : undefined,
            silentMs: quiet,
          });
        abort(
          'silence',
          `no progress and no result for ${quiet} ms (silence watchdog, silenceMs ${silenceMs}); the server may be stuck or gone; cancelled`,
        );
      }
    };

    const onCallerAbort = () => abort('cancelled', `cancelled (${reasonText(o.signal!.reason)})`, o.signal!.reason);
    o.signal?.addEventListener('abort', onCallerAbort, { once: true });

    calls.set(token, {
      rearm() {
        if (abortError) return;
        lastActivity = Date.now();
        if (timer) clearTimeout(timer);
        timer = undefined;
        arm();
      },
      report(p) {
        const progress = p.progress;
        if (typeof progress !== 'number' || !Number.isFinite(progress)) return;
        lastActivity = Date.now();
        lastProgress = {
          progress,
          ...(typeof p.total === 'number' && { total: p.total }),
          ...(typeof p.message === 'string' && { message: p.message }),
        };
        o.onProgress?.(lastProgress);
      },
    });

    o.onToken?.(token);
    const meta: Record<string, unknown> = { ...o.meta, progressToken: token };
    Object.assign(meta, parts.extraMeta(meta));
    const params = { ...baseParams, ...o.params, _meta: { ...(baseParams._meta as object | undefined), ...meta } };
    arm();
    const settle = () => {
      if (timer) clearTimeout(timer);
      o.signal?.removeEventListener('abort', onCallerAbort);
      calls.delete(token);
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
  };
}
