/**
 * `tetherClient(client)`: wraps an SDK `Client` (`@modelcontextprotocol/sdk` 1.x or
 * `@modelcontextprotocol/client` 2.x) without forking it. Calls made through the wrapper get a
 * progress token of their own, timers of their own and a cancel on every abort; logs go to a sink.
 * The parts: handler-map takeover (`handlers.ts`), one call's timers (`timers.ts`), resource
 * subscriptions (`subscriptions.ts`), logs (`logs.ts`), job handles (`jobs.ts`), tasks (`tasks.ts`).
 */
import { assertSeams, type LogLevel } from '@mcp-tether/core';
import { answerWithHandlers } from './answer.js';
import type { ProgressReport } from './errors.js';
import { type FollowOptions, follow } from './follow.js';
import {
  type NotificationHandler,
  notificationMapOf,
  type Passer,
  takeOverNotifications,
  watchAsking,
} from './handlers.js';
import { Following } from './follower.js';
import { followJob, jobHandleOf, type JobHandle, type JobOptions } from './jobs.js';
import { checkLevel, logSink } from './logs.js';
import { resourceSubscriptions } from './subscriptions.js';
import { callTask, type TaskOptions } from './tasks.js';
import { type ActiveCall, callRunner, progressReportOf } from './timers.js';
import type { Caller, CallToolOptions, SdkClient, TetherClientOptions, ToolResult } from './types.js';

/** The wrapper. */
export interface TetherClient extends Caller {
  /** The SDK client it wraps (still usable directly; calls made on it do not get our timers). */
  readonly client: SdkClient;
  /** `'v1'` for `@modelcontextprotocol/sdk` 1.x, `'v2'` for `@modelcontextprotocol/client` 2.x. */
  readonly sdk: 'v1' | 'v2';
  /**
   * `tools/call` with a progress token of its own, the timers of `CallTimers`, and
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
  /**
   * Call a tool and follow whatever the server answers to the final result: an inline result, a
   * job handle (`jobs.status` long-polls on the server's schedule, partial output read inside), a
   * 2025-11-25 task (asked for with `params.task` when the server lists the tool with
   * `execution.taskSupport`; `tasks/get`, `notifications/tasks/status`, `tasks/result`) or a
   * 2026-07-28 task (tasks extension; `tasks/get`, `tasks/update`). `timeout` is per request; the
   * work may run longer. Aborting `signal`, or a limit ending the follow, cancels the work on the
   * server (`notifications/cancelled`, `jobs.cancel` or `tasks/cancel`).
   * @returns the tool's result (an `isError` result is returned, not thrown)
   * @throws {JobError} the work failed, was cancelled by someone else, or needs input nobody can give
   * @throws {CallAbortedError} `signal` aborted (`cancelled`), `maxTotalMs` passed (`total`), or a
   *   request gave up (`timeout`, `silence`); the work was cancelled
   * @throws the SDK's error for a JSON-RPC error response or a closed connection
   */
  follow(name: string, args?: Record<string, unknown>, options?: FollowOptions): Promise<ToolResult>;
  /** Close the SDK client (and its session). */
  close(): Promise<void>;
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
 * @throws {SdkSeamError} (`@mcp-tether/core`) if the installed SDK lacks a private field the wrapper
 *   reads (`_notificationHandlers`, `_requestHandlers`), naming the SDK package and its version
 */
export function tetherClient(client: SdkClient, options: TetherClientOptions = {}): TetherClient {
  checkClient(client);
  // The line by public members; then every private field we read, through core's one seam table:
  // an SDK release that renamed one fails here, naming its version, instead of losing features.
  const sdk: 'v1' | 'v2' = typeof (client as { getProtocolEra?: unknown }).getProtocolEra === 'function' ? 'v2' : 'v1';
  assertSeams(sdk === 'v2' ? 'clientV2' : 'clientV1', client);
  const map = notificationMapOf(client);
  const modern = () =>
    sdk === 'v2' && (client as unknown as { getProtocolEra(): string }).getProtocolEra() === 'modern';
  const prefix = `tether-${++instances}-${Math.random().toString(36).slice(2, 8)}-`;
  const calls = new Map<string | number, ActiveCall>();
  /** Tokens whose call answered but whose progress goes on (2025-11-25 tasks). */
  const followed = new Map<string, (report: ProgressReport) => void>();
  const taskListeners = new Map<string, Set<(task: Record<string, unknown>) => void>>();
  let seq = 0;
  let logLevel: LogLevel = options.logLevel ?? 'info';
  let asking = 0;

  const install = takeOverNotifications(map);
  install('notifications/progress', progressRoute(calls, followed, prefix));
  install('notifications/tasks/status', taskStatusRoute(taskListeners));
  if (options.onLog) logSink(install, options.onLog, () => logLevel);
  // Pause the watchdog and timeout of calls in flight while our own elicitation handler runs.
  if (options.pauseWhileAsking !== false) {
    watchAsking(client, (delta) => {
      asking += delta;
      for (const c of calls.values()) c.rearm();
    });
  }

  const run = callRunner({
    defaults: options,
    calls,
    newToken: () => `${prefix}${++seq}`,
    asking: () => asking > 0,
    extraMeta: (meta) =>
      modern() && options.onLog && !('io.modelcontextprotocol/logLevel' in meta)
        ? { 'io.modelcontextprotocol/logLevel': logLevel }
        : {},
  });
  const request: TetherClient['request'] = (method, params = {}, o = {}) =>
    run(method, (p, sdkOptions) => client.request({ method, params: p }, ANY_RESULT, sdkOptions), params, o);
  const subscribe = resourceSubscriptions(client, install, request, modern);

  const self: TetherClient = {
    client,
    sdk,
    defaults: { ...options },
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
    request,
    callJob(name, args = {}, o = {}) {
      return callJob(self, name, args, o);
    },
    callTask(name, args = {}, o = {}) {
      return callTask(self, name, args, o);
    },
    followJob(handle, o = {}) {
      return followJob(self, handle, o);
    },
    subscribeResource: subscribe,
    follow(name, args = {}, o = {}) {
      return follow(self, modern(), name, args, o);
    },
    followProgress(token, listener) {
      followed.set(token, listener);
      return () => {
        if (followed.get(token) === listener) followed.delete(token);
      };
    },
    onTaskStatus(taskId, listener) {
      return addTaskListener(taskListeners, taskId, listener);
    },
    answerInputRequests(requests, signal) {
      return answerWithHandlers(client, sdk, requests, signal);
    },
    async close() {
      await client.close?.();
    },
    async setLogLevel(level) {
      checkLevel(level);
      logLevel = level;
      if (!modern() && client.getServerCapabilities?.()?.logging && client.setLoggingLevel)
        await client.setLoggingLevel(level);
    },
  };
  wrapped.set(client, self);
  return self;
}

/** @throws {TypeError} if `client` is not an SDK `Client`, or is wrapped already */
function checkClient(client: SdkClient): void {
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.callTool !== 'function' ||
    typeof client.request !== 'function' ||
    typeof (client as { setNotificationHandler?: unknown }).setNotificationHandler !== 'function'
  ) {
    throw new TypeError(
      'tetherClient: expected a Client of @modelcontextprotocol/sdk (1.x) or @modelcontextprotocol/client (2.x)',
    );
  }
  if (wrapped.has(client))
    throw new TypeError('tetherClient: this client is wrapped already; use the wrapper you have');
}

/**
 * The `notifications/progress` handler: by *our* token to the call in flight, else to a follower of
 * a call that answered (2025-11-25 tasks); our tokens after their call ended are dropped; any other
 * token goes to the SDK's handler (`pass`).
 */
function progressRoute(
  calls: Map<string | number, ActiveCall>,
  followed: Map<string, (report: ProgressReport) => void>,
  prefix: string,
): (pass: Passer) => NotificationHandler {
  return (pass) =>
    (notification, ...rest) => {
      const params = notification?.params as Record<string, unknown> | undefined;
      const token = params?.progressToken as string | number | undefined;
      const call = token === undefined ? undefined : calls.get(token);
      if (call) return call.report(params!);
      const listener = typeof token === 'string' ? followed.get(token) : undefined;
      if (listener) {
        const report = progressReportOf(params!);
        if (report) listener(report);
        return;
      }
      if (typeof token === 'string' && token.startsWith(prefix)) return; // ours, after the call ended: dropped
      return pass(notification, ...rest);
    };
}

/** The `notifications/tasks/status` handler: to the listeners of the task, then to the SDK's handler. */
function taskStatusRoute(
  taskListeners: Map<string, Set<(task: Record<string, unknown>) => void>>,
): (pass: Passer) => NotificationHandler {
  return (pass) =>
    (notification, ...rest) => {
      const task = notification?.params as Record<string, unknown> | undefined;
      if (typeof task?.taskId === 'string') for (const l of taskListeners.get(task.taskId) ?? []) l(task);
      return pass(notification, ...rest);
    };
}

/** Add a listener of one task's status notifications; returns its removal. */
function addTaskListener(
  taskListeners: Map<string, Set<(task: Record<string, unknown>) => void>>,
  taskId: string,
  listener: (task: Record<string, unknown>) => void,
): () => void {
  const set = taskListeners.get(taskId) ?? new Set();
  taskListeners.set(taskId, set);
  set.add(listener);
  return () => {
    set.delete(listener);
    if (!set.size && taskListeners.get(taskId) === set) taskListeners.delete(taskId);
  };
}

/** `TetherClient.callJob`: one total cap and one progress stream for the call and the job it may become. */
async function callJob(
  self: TetherClient,
  name: string,
  args: Record<string, unknown>,
  o: JobOptions,
): Promise<ToolResult> {
  const following = new Following(o, self.defaults);
  let first: ToolResult;
  try {
    first = await self.callTool(name, args, {
      ...o,
      ...following.timers(o),
      onProgress: (p) => following.progress(p),
    });
  } catch (error) {
    following.close();
    throw error;
  }
  const handle = jobHandleOf(first);
  if (handle) return followJob(self, handle, o, following);
  following.close();
  return first;
}
