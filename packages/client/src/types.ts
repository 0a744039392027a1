/**
 * The shapes every part of the client shares: the SDK client it wraps, a call's timers and options,
 * a tool result, and {@link Caller} (what the job and task followers need of the wrapper). This
 * file imports nothing of the package, so that no part depends back on the wrapper.
 */
import type { InputRequest, LogLevel } from '@mcp-tether/core';
import type { ProgressReport } from './errors.js';

/** The part of an SDK `Client` (either line) the wrapper uses. */
export interface SdkClient {
  callTool(...args: any[]): Promise<any>;
  request(...args: any[]): Promise<any>;
  setLoggingLevel?(level: LogLevel, options?: unknown): Promise<unknown>;
  getServerCapabilities?(): Record<string, any> | undefined;
  close?(): Promise<void>;
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

/** Options of `tetherClient`: defaults for every call, and the log sink. */
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
   * Use `TetherClient.setLogLevel` to also tell a 2025-era server (`logging/setLevel`).
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

/** Options of one `TetherClient.callTool`. */
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

/** What the job and task followers use of the wrapper (`TetherClient` is one). */
export interface Caller {
  /** The SDK client wrapped. */
  readonly client: SdkClient;
  /** `'v1'` for `@modelcontextprotocol/sdk` 1.x, `'v2'` for `@modelcontextprotocol/client` 2.x. */
  readonly sdk: 'v1' | 'v2';
  /** The timers every call gets unless it says otherwise (the wrapper's options). */
  readonly defaults: Readonly<CallTimers>;
  callTool(name: string, args?: Record<string, unknown>, options?: CallToolOptions): Promise<ToolResult>;
  request(method: string, params?: Record<string, unknown>, options?: CallToolOptions): Promise<Record<string, any>>;
  subscribeResource(uri: string, listener: (uri: string) => void): Promise<(() => Promise<void>) | undefined>;
  /**
   * Keep receiving the progress of a token after its call answered (a 2025-11-25 task reports its
   * progress with the token of the `tools/call` that created it). Returns the function that stops it.
   */
  followProgress(token: string, listener: (report: ProgressReport) => void): () => void;
  /** Listen to `notifications/tasks/status` for one task (2025-11-25). Returns the function that stops it. */
  onTaskStatus(taskId: string, listener: (task: Record<string, unknown>) => void): () => void;
  /**
   * Answer embedded requests (`inputRequests` of a job or task: `elicitation/create`, ...) with the
   * handlers registered on the SDK client, by key; `undefined` when one of the methods has none.
   */
  answerInputRequests(
    requests: Record<string, InputRequest>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined>;
}
