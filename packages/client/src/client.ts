/**
 * `tetherClient(client)`: wraps an SDK `Client` (`@modelcontextprotocol/sdk` 1.x or
 * `@modelcontextprotocol/client` 2.x) without forking it. Calls made through the wrapper get a
 * progress token of their own, timers of their own and a cancel on every abort; logs go to a sink.
 */
import { LOG_LEVELS, type LogLevel } from '@mcp-tether/core';
import { CallAbortedError, type CallAbortKind, type ProgressReport } from './errors.js';
import { followJob, jobHandleOf, type JobHandle, type JobOptions } from './jobs.js';
import { callTask, type TaskOptions } from './tasks.js';

/** The latest `setTimeout` delay Node accepts (ms); handed to the SDK so that its own timer never fires first. */
const MAX_TIMER_MS = 2_147_483_647;

/** The part of an SDK `Client` (either line) the wrapper uses. */
export interface SdkClient {
  callTool(...args: any[]): Promise<any>;
  request(...args: any[]): Promise<any>;
  setLoggingLevel?(level: LogLevel, options?: unknown): Promise<unknown>;
  getServerCapabilities?(): Record<string, any> | undefined;
}

/** A `notifications/message` as the `onLog` sink gets it (MCP logging, RFC 5424 levels). */
export interface LogEntry {
  level: LogLevel;
  /** The logger name the server gave, if any. */
  logger?: string;
  /** Any JSON the server sent. */
  data: unknown;
}

/** Timers of one call (all in ms). A value of `0` or `Infinity` turns that timer off. */
export interface CallTimers {
  /**
   * Progress-silence watchdog: when neither a progress notification nor the result arrived for
   * this long, the call is aborted with `kind: 'silence'`. Default 30 000.
   */
  silenceMs?: number;
  /** Request timeout. Default 60 000 (the SDKs' default), reset by each progress notification unless `resetTimeoutOnProgress` is false. */
  timeoutMs?: number;
  /** Whether progress resets `timeoutMs`. Default true. */
  resetTimeoutOnProgress?: boolean;
  /** Total cap from sending the request, whatever progress arrives (MCP: "a maximum overall timeout SHOULD still be enforced"). Default 3 600 000 (1 h). */
  maxTotalMs?: number;
}

/** Options of {@link tetherClient}: defaults for every call, and the log sink. */
export interface TetherClientOptions extends CallTimers {
  /**
   * Where `notifications/message` go, one call per message at or above `logLevel`. Logs never
   * reach tool results. Without `onLog`, the wrapper leaves log notifications to the client.
   */
  onLog?: (entry: LogEntry) => void;
  /**
   * Lowest level passed to `onLog` (client-side filter; RFC 5424 order `debug` … `emergency`),
   * and on 2026-07-28 connections the level requested per call in
   * `_meta["io.modelcontextprotocol/logLevel"]` (no level there = no logs). Default `info`.
   * Use {@link TetherClient.setLogLevel} to also tell a 2025-era server (`logging/setLevel`).
   */
  logLevel?: LogLevel;
  /**
   * While the client's own `elicitation/create` handler is answering (a person at a prompt), the
   * silence watchdog and the timeout of every call in flight are paused (the total cap is not), and
   * they restart from the answer: the client, not the server, is the one keeping the call waiting.
   * Covers 2025-era `elicitation/create` requests and, on SDK 2.x, the `input_required` rounds the
   * client fulfils. Default true. (A 2025-era elicitation is not tied to one call on the wire, so
   * all calls in flight pause.)
   */
  pauseWhileAsking?: boolean;
}

/** Options of one {@link TetherClient.callTool}. */
export interface CallToolOptions extends CallTimers {
  /** Each `notifications/progress` of this call, in wire order; the last one before the result is never lost. */
  onProgress?: (report: ProgressReport) => void;
  /** Abort the call: `notifications/cancelled` is sent and the call rejects with a `CallAbortedError` (`kind: 'cancelled'`). */
  signal?: AbortSignal;
  /** More `params._meta` (the progress token is always ours). */
  meta?: Record<string, unknown>;
  /** More top-level `params` (e.g. `task` for 2025-11-25 tasks). */
  params?: Record<string, unknown>;
  /** Called with the progress token chosen for this request, before it is sent. */
  onToken?: (token: string) => void;
}

/** A tool result, as the SDK returned it. */
export interface ToolResult {
  content?: Array<{ type: string; text?: string; [key: string]: unknown }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The wrapper. */
export interface TetherClient {
  /** The SDK client it wraps (still usable directly; calls made on it do not get our timers). */
  readonly client: SdkClient;
  /** `'v1'` for `@modelcontextprotocol/sdk` 1.x, `'v2'` for `@modelcontextprotocol/client` 2.x. */
  readonly sdk: 'v1' | 'v2';
  /**
   * `tools/call` with a progress token of its own, the timers of {@link CallTimers}, and
   * `notifications/cancelled` on every abort (timer, watchdog, cap or `signal`).
   * @returns the tool result (an `isError` result is returned, not thrown)
   * @throws {CallAbortedError} when the client gave up (the cancel was sent)
   * @throws the SDK's error for a JSON-RPC error response or a closed connection
   */
  callTool(name: string, args?: Record<string, unknown>, options?: CallToolOptions): Promise<ToolResult>;
  /**
   * Any request with the same timers and cancel (`resources/read`, `tasks/get`, ...). The result
   * is returned unvalidated.
   */
  request(method: string, params?: Record<string, unknown>, options?: CallToolOptions): Promise<Record<string, any>>;
  /** Set the log level: `logging/setLevel` on a 2025-era connection (when the server declares `logging`), the per-request `_meta` level on 2026-07-28, and the `onLog` filter. */
  setLogLevel(level: LogLevel): Promise<void>;
  /**
   * `callTool`, then, when the result is a job handle (`@mcp-tether/jobs`), follow it to the end
   * (see {@link followJob}); a result that is not a handle (the tool finished inline) is returned as is.
   */
  callJob(name: string, args?: Record<string, unknown>, options?: JobOptions): Promise<ToolResult>;
  /**
   * Call a tool as an MCP task and follow it: 2025-11-25 (`params.task`; polls `tasks/get` at the
   * task's `pollInterval`, or the 1 s → 15 s backoff without one; `tasks/result` once it is terminal
   * or `input_required`, whose elicitations reach the client's own handler) or the 2026 tasks
   * extension (declare `extensions["io.modelcontextprotocol/tasks"]` in the client's capabilities;
   * `tasks/get` until terminal, `tasks/update` with `onInputRequest`'s answers). `signal` sends
   * `tasks/cancel`. A server that answers with a plain result (no task) gets it returned as is.
   * @throws {JobError} the task failed or was cancelled by someone else
   * @throws {CallAbortedError} `signal` aborted (after `tasks/cancel`) or a request timed out
   */
  callTask(name: string, args?: Record<string, unknown>, options?: TaskOptions): Promise<ToolResult>;
  /** Follow a job handle you already have (e.g. one the model received) to its end. */
  followJob(handle: JobHandle, options?: JobOptions): Promise<ToolResult>;
  /**
   * Subscribe to one resource: `resources/subscribe` on 2025-era connections whose server declares
   * `resources.subscribe`; a `subscriptions/listen` stream with `resourceSubscriptions: [uri]` on
   * 2026-07-28 (SDK 2.x). `listener(uri)` runs on each `notifications/resources/updated` for `uri`.
   * Resolves with the unsubscribe function (`resources/unsubscribe`, or closing the listen stream),
   * or `undefined` when the connection cannot subscribe (no capability, or the server did not
   * honour the filter): poll instead.
   */
  subscribeResource(uri: string, listener: (uri: string) => void): Promise<(() => Promise<void>) | undefined>;
  /** Calls in flight through this wrapper. */
  readonly inFlight: number;
}

const wrapped = new WeakMap<object, TetherClient>();
let instances = 0;

/** Accepts any JSON Schema-ish result: the SDK's validation is skipped for raw requests (both lines accept this shape). */
const ANY_RESULT = {
  safeParse: (data: unknown) => ({ success: true as const, data }),
  '~standard': { version: 1, vendor: 'mcp-tether', validate: (value: unknown) => ({ value }) },
};

const LEVEL_RANK = new Map<string, number>(LOG_LEVELS.map((l, i) => [l, i]));

interface ActiveCall {
  report(params: Record<string, unknown>): void;
  /** The client stopped (or started) asking a person: re-arm the timers. */
  rearm(): void;
}

type NotificationHandler = (notification: any, ...rest: unknown[]) => unknown;

/**
 * Wrap an SDK `Client` of either line (before or after `connect`).
 *
 * How the final progress notification is kept: both SDK lines dispatch a notification one
 * microtask late (`Promise.resolve().then(handler)`) but handle a response at once, deleting the
 * request's progress handler; a progress notification read in the same chunk as the response is
 * then reported as "unknown token" and lost (typescript-sdk #2580). The wrapper replaces the
 * client's `notifications/progress` handler with one that dispatches by *our* token (never the
 * SDK's message id), and forgets a token only after the call's result reached our own code, which
 * runs after that late microtask. Progress for tokens that are not ours goes to the SDK's handler.
 *
 * @throws {TypeError} if `client` is not an SDK `Client`, or is wrapped already
 */
export function tetherClient(client: SdkClient, options: TetherClientOptions = {}): TetherClient {
  const handlers = (client as unknown as { _notificationHandlers?: unknown })._notificationHandlers;
  if (!(handlers instanceof Map) || typeof client.callTool !== 'function' || typeof client.request !== 'function') {
    throw new TypeError(
      'tetherClient: expected a Client of @modelcontextprotocol/sdk (1.x) or @modelcontextprotocol/client (2.x)',
    );
  }
  if (wrapped.has(client))
    throw new TypeError('tetherClient: this client is wrapped already; use the wrapper you have');
  const map = handlers as Map<string, NotificationHandler>;
  const sdk: 'v1' | 'v2' = typeof (client as { getProtocolEra?: unknown }).getProtocolEra === 'function' ? 'v2' : 'v1';
  const prefix = `tether-${++instances}-${Math.random().toString(36).slice(2, 8)}-`;
  const calls = new Map<string | number, ActiveCall>();
  let seq = 0;
  let logLevel: LogLevel = options.logLevel ?? 'info';

  // Our notification handlers stay in front: a handler set later for the same method (the user's
  // setNotificationHandler) becomes the one ours hands over to, instead of replacing ours.
  const inner = new Map<string, NotificationHandler | undefined>();
  const ours = new Map<string, NotificationHandler>();
  const install = (method: string, handler: (next: (n: any, ...rest: unknown[]) => unknown) => NotificationHandler) => {
    inner.set(method, map.get(method));
    const h = handler((n, ...rest) => inner.get(method)?.(n, ...rest));
    ours.set(method, h);
    mapSet(method, h);
  };
  const mapSet = map.set.bind(map);
  map.set = (key: string, value: NotificationHandler) => {
    if (ours.has(key) && value !== ours.get(key)) {
      inner.set(key, value);
      return map;
    }
    return mapSet(key, value);
  };
  const mapDelete = map.delete.bind(map);
  map.delete = (key: string) => (ours.has(key) ? inner.delete(key) : mapDelete(key));

  install('notifications/progress', (previousProgress) => (notification, ...rest) => {
    const params = notification?.params as Record<string, unknown> | undefined;
    const token = params?.progressToken as string | number | undefined;
    const call = token === undefined ? undefined : calls.get(token);
    if (call) return call.report(params!);
    if (typeof token === 'string' && token.startsWith(prefix)) return; // ours, after the call ended: dropped
    return previousProgress(notification, ...rest);
  });

  if (options.onLog) {
    const onLog = options.onLog;
    install('notifications/message', (previousLog) => (notification, ...rest) => {
      const p = notification?.params as { level?: unknown; logger?: unknown; data?: unknown } | undefined;
      const rank = typeof p?.level === 'string' ? LEVEL_RANK.get(p.level) : undefined;
      if (rank !== undefined && rank >= LEVEL_RANK.get(logLevel)!) {
        onLog({
          level: p!.level as LogLevel,
          ...(typeof p!.logger === 'string' && { logger: p!.logger }),
          data: p!.data,
        });
      }
      return previousLog(notification, ...rest);
    });
  }

  // Pause the watchdog and timeout of calls in flight while our own elicitation handler runs.
  let asking = 0;
  const requestHandlers = (client as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (options.pauseWhileAsking !== false && requestHandlers instanceof Map) {
    const WRAPPED = Symbol.for('mcp-tether.client.asking');
    const wrap = (h: any) =>
      typeof h !== 'function' || h[WRAPPED]
        ? h
        : Object.assign(
            async (...a: unknown[]) => {
              asking++;
              for (const c of calls.values()) c.rearm();
              try {
                return await h(...a);
              } finally {
                asking--;
                for (const c of calls.values()) c.rearm();
              }
            },
            { [WRAPPED]: true },
          );
    const rh = requestHandlers as Map<string, unknown>;
    if (rh.has('elicitation/create')) rh.set('elicitation/create', wrap(rh.get('elicitation/create')));
    const set = rh.set.bind(rh);
    // Handlers set after wrapping (setRequestHandler) are wrapped too.
    rh.set = (key: string, value: unknown) => set(key, key === 'elicitation/create' ? wrap(value) : value);
  }

  const resourceListeners = new Map<string, Set<(uri: string) => void>>();
  install('notifications/resources/updated', (previousUpdated) => (notification, ...rest) => {
    const uri = (notification?.params as { uri?: unknown } | undefined)?.uri;
    if (typeof uri === 'string') for (const listener of resourceListeners.get(uri) ?? []) listener(uri);
    return previousUpdated(notification, ...rest);
  });

  /**
   * 2026-07-28 has no resources/subscribe: a `subscriptions/listen` stream (SDK 2.x `client.listen`)
   * whose `resourceSubscriptions` names the URI; its notifications reach our handler. `undefined`
   * when the server does not honour the filter.
   */
  const listenTo = async (uri: string, listener: (uri: string) => void) => {
    const listen = (
      client as unknown as {
        listen?: (
          filter: object,
        ) => Promise<{ honoredFilter?: { resourceSubscriptions?: string[] }; close(): Promise<void> }>;
      }
    ).listen;
    if (typeof listen !== 'function') return undefined;
    const sub = await listen.call(client, { resourceSubscriptions: [uri] });
    if (!sub.honoredFilter?.resourceSubscriptions?.includes(uri)) {
      await sub.close().catch(() => undefined);
      return undefined;
    }
    let set = resourceListeners.get(uri);
    if (!set) resourceListeners.set(uri, (set = new Set()));
    set.add(listener);
    return async () => {
      set!.delete(listener);
      if (!set!.size) resourceListeners.delete(uri);
      await sub.close();
    };
  };

  const modern = () =>
    sdk === 'v2' && (client as unknown as { getProtocolEra(): string }).getProtocolEra() === 'modern';

  function run(
    target: string,
    send: (params: Record<string, unknown>, sdkOptions: Record<string, unknown>) => Promise<any>,
    baseParams: Record<string, unknown>,
    o: CallToolOptions,
  ): Promise<any> {
    const silenceMs = o.silenceMs ?? options.silenceMs ?? 30_000;
    const timeoutMs = o.timeoutMs ?? options.timeoutMs ?? 60_000;
    const reset = o.resetTimeoutOnProgress ?? options.resetTimeoutOnProgress ?? true;
    const maxTotalMs = o.maxTotalMs ?? options.maxTotalMs ?? 3_600_000;
    const on = (ms: number) => ms > 0 && Number.isFinite(ms);
    const startedAt = Date.now();
    if (o.signal?.aborted) {
      return Promise.reject(
        new CallAbortedError(
          `${target}: cancelled before it was sent (${describe(o.signal.reason)})`,
          'cancelled',
          target,
          0,
        ),
      );
    }

    const token = `${prefix}${++seq}`;
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
      const due: Array<[number, CallAbortKind]> = [];
      if (on(maxTotalMs)) due.push([startedAt + maxTotalMs, 'total']);
      if (on(timeoutMs) && !asking) due.push([(reset ? lastActivity : startedAt) + timeoutMs, 'timeout']);
      if (on(silenceMs) && !asking) due.push([lastActivity + silenceMs, 'silence']);
      if (!due.length) return;
      due.sort((a, b) => a[0] - b[0]);
      const [at, kind] = due[0]!;
      if (at <= now) {
        const quiet = now - lastActivity;
        if (kind === 'total') abort('total', `exceeded the total cap of ${maxTotalMs} ms; cancelled`);
        else if (kind === 'timeout')
          abort(
            'timeout',
            reset
              ? `timed out: no progress and no result for ${quiet} ms (timeoutMs ${timeoutMs}); cancelled`
              : `timed out after ${timeoutMs} ms; cancelled`,
          );
        else
          abort(
            'silence',
            `no progress and no result for ${quiet} ms (silence watchdog, silenceMs ${silenceMs}); the server may be stuck or gone; cancelled`,
          );
        return;
      }
      timer = setTimeout(arm, at - now);
    };

    const onCallerAbort = () => abort('cancelled', `cancelled (${describe(o.signal!.reason)})`, o.signal!.reason);
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
    if (modern() && !('io.modelcontextprotocol/logLevel' in meta) && options.onLog)
      meta['io.modelcontextprotocol/logLevel'] = logLevel;
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
  }

  const self: TetherClient = {
    client,
    sdk,
    get inFlight() {
      return calls.size;
    },
    callTool(name, args = {}, o = {}) {
      return run(
        name,
        (params, sdkOptions) =>
          sdk === 'v1' ? client.callTool(params, undefined, sdkOptions) : client.callTool(params, sdkOptions),
        { name, arguments: args },
        o,
      );
    },
    request(method, params = {}, o = {}) {
      return run(method, (p, sdkOptions) => client.request({ method, params: p }, ANY_RESULT, sdkOptions), params, o);
    },
    async callJob(name, args = {}, o = {}) {
      const first = await self.callTool(name, args, o);
      const handle = jobHandleOf(first);
      return handle ? followJob(self, handle, o) : first;
    },
    callTask(name, args = {}, o = {}) {
      return callTask(self, name, args, o);
    },
    followJob(handle, o = {}) {
      return followJob(self, handle, o);
    },
    async subscribeResource(uri, listener) {
      if (modern()) return listenTo(uri, listener);
      if (!client.getServerCapabilities?.()?.resources?.subscribe) return undefined;
      let set = resourceListeners.get(uri);
      if (!set) resourceListeners.set(uri, (set = new Set()));
      set.add(listener);
      try {
        await self.request('resources/subscribe', { uri }, { timeoutMs: 30_000 });
      } catch (error) {
        set.delete(listener);
        throw error;
      }
      return async () => {
        set!.delete(listener);
        if (set!.size) return;
        resourceListeners.delete(uri);
        await self.request('resources/unsubscribe', { uri }, { timeoutMs: 30_000 });
      };
    },
    async setLogLevel(level) {
      if (!LEVEL_RANK.has(level))
        throw new RangeError(`setLogLevel: unknown level ${JSON.stringify(level)} (one of ${LOG_LEVELS.join(', ')})`);
      logLevel = level;
      if (!modern() && client.getServerCapabilities?.()?.logging && client.setLoggingLevel)
        await client.setLoggingLevel(level);
    },
  };
  wrapped.set(client, self);
  return self;
}

function describe(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'aborted' : String(reason);
}
