/**
 * Diagnostics channels: what only the middlewares see (progress coalesced or dropped, heartbeats,
 * cancellations, lock waits, MRTR rounds, logs shed, job states, HTTP sessions), published on
 * Node's `node:diagnostics_channel` so a subscriber (e.g. `@mcp-tether/otel`) can turn it into
 * telemetry. This module owns the channel names and message shapes; the packages publish, guarded
 * by `channel.hasSubscribers`, so with nobody subscribed a publish point costs one property read.
 *
 * Messages are plain objects made only when someone listens; subscribers must treat them (and the
 * `ctx` they carry) as read-only and must not throw (a subscriber's throw is reported by Node on
 * `process.nextTick` as an uncaught exception, so wrap your code).
 *
 * ```ts
 * import { diagnostics } from '@mcp-tether/core';
 * diagnostics.progress.subscribe((m) => console.log(m.kind, m.progress));
 * ```
 */
import { channel } from 'node:diagnostics_channel';
import type { AbortKind } from './abort.js';
import type { CallContext } from './types.js';

/** `tether:progress`: one progress report at the throttle (`@mcp-tether/progress`) or a stream buffer (`@mcp-tether/http`). */
export interface ProgressMessage {
  readonly ctx: CallContext | undefined;
  /**
   * `sent`: put on the wire; `coalesced`: held back by the throttle or merged into a later value
   * (a later one carries it); `dropped`: discarded (not increasing, not finite, above `total`, or
   * after the call ended).
   */
  readonly kind: 'sent' | 'coalesced' | 'dropped';
  readonly progress: number;
  readonly total?: number | undefined;
  /** Which layer decided (`progress`, `heartbeat`, `http`). */
  readonly source: string;
}

/** `tether:heartbeat`: the silence watchdog of `@mcp-tether/heartbeat` sent a keep-alive progress, or a session ping ran. */
export interface HeartbeatMessage {
  readonly ctx: CallContext | undefined;
  /** `beat`: a keep-alive progress went out for a silent call; `ping`/`ping-failed`: a session ping. */
  readonly kind: 'beat' | 'ping' | 'ping-failed';
  /** How long the call had been silent, ms (`beat`). */
  readonly silentMs?: number | undefined;
  /** Session id of a ping, when the session has one. */
  readonly sessionId?: string | undefined;
}

/** `tether:watchdog`: a client-side progress-silence watchdog (`@mcp-tether/client`) fired for a request. */
export interface WatchdogMessage {
  /** The request's method (`tools/call`, ...). */
  readonly method: string;
  /** The request's `params.name` (tool or prompt), when it has one. */
  readonly name: string | undefined;
  /** ms since the last progress (or since the send). */
  readonly silentMs: number;
}

/** `tether:cancel`: a call was aborted, and (later) the handler's work finished after the abort. */
export interface CancelMessage {
  readonly ctx: CallContext;
  /** `aborted`: the abort happened; `settled`: the handler's `finally` ran after it. */
  readonly phase: 'aborted' | 'settled';
  /** Who stopped it: the client, the connection, a deadline, the server's shutdown. */
  readonly who: AbortKind;
  /** The abort reason's message (the client's reason string, the deadline, ...). */
  readonly why: string;
  /** `settled` only: ms from the abort to the handler settling. */
  readonly latencyMs?: number | undefined;
}

/** `tether:mutex:wait`: one wait for a lock or a concurrency slot ended (`@mcp-tether/mutex`). */
export interface MutexWaitMessage {
  readonly ctx: CallContext;
  /** The lock key (the limiter's name for a concurrency slot). */
  readonly key: string;
  /** `acquired`, `refused` (queue full) or `aborted` (the waiter left). */
  readonly outcome: 'acquired' | 'refused' | 'aborted';
  /** Time spent waiting, ms. */
  readonly waitMs: number;
  /** Calls ahead of this one when it queued: holding or waiting for the key (in this process). */
  readonly queueDepth: number;
  /** The grant's fencing token, when the store issues one. */
  readonly fencingToken?: number | string | undefined;
}

/** `tether:mrtr:round`: a call asked the user for input (`@mcp-tether/mrtr`). */
export interface MrtrRoundMessage {
  readonly ctx: CallContext;
  /** 1-based round number. */
  readonly round: number;
  /** `input_required` (2026-07-28 result), `elicit` (2025 in-process elicitation), `refused` (no channel / too many rounds). */
  readonly mode: 'input_required' | 'elicit' | 'refused';
  /** The keys asked for. */
  readonly keys: readonly string[];
}

/** `tether:log:dropped`: log records shed by `@mcp-tether/log-channel`'s rate limit or a stream buffer. */
export interface LogDroppedMessage {
  readonly ctx: CallContext | undefined;
  /** Records dropped in this report (≥ 1). */
  readonly count: number;
  readonly sessionId: string | undefined;
  /** `rate-limit` or `buffer`. */
  readonly reason: 'rate-limit' | 'buffer';
}

/** `tether:job`: a job or task changed status (`@mcp-tether/jobs`), on the replica or worker that changed it. */
export interface JobMessage {
  /** The call that started it (on the starting replica), else undefined (a worker, a later update). */
  readonly ctx: CallContext | undefined;
  readonly jobId: string;
  readonly tool: string;
  /**
   * `created` just before the job is stored (with the starting call's `ctx`), `started` when
   * execution begins (on whichever process runs it), then each status it takes.
   */
  readonly status: 'created' | 'started' | 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  /** `task` (2025-11-25 / 2026 tasks) or `handle` (jobs.status polling). */
  readonly mode: string;
  /** ms since the job was created (for terminal statuses: its duration). */
  readonly ageMs: number;
  /**
   * W3C trace context (`traceparent`, `tracestate`, `baggage`, as in `params._meta`) stored with the
   * job, so another process continues the trace. On `created` it is an empty object that a
   * subscriber may fill (the publisher stores what it holds after `publish` returns); afterwards it
   * is what was stored.
   */
  readonly trace?: Record<string, string> | undefined;
  /** Processing attempt (1-based) when an executor retries. */
  readonly attempt?: number | undefined;
}

/** `tether:http:session`: a Streamable HTTP session event (`@mcp-tether/http`). */
export interface HttpSessionMessage {
  /** `opened`, `closed` (DELETE, drain), `expired` (idle), `refused` (cap reached or bad request). */
  readonly kind: 'opened' | 'closed' | 'expired' | 'refused';
  readonly sessionId: string | undefined;
  /** ms the session lived (`closed`, `expired`). */
  readonly durationMs?: number | undefined;
  /** Why a session was refused (`session-cap`, ...). */
  readonly reason?: string | undefined;
}

/** `tether:ratelimit`: a call refused by a rate limit, or a check its store failed (`@mcp-tether/ratelimit`). */
export interface RateLimitMessage {
  readonly ctx: CallContext;
  /** `refused` (a bucket was empty: the call got `RATE_LIMITED`) or `store-error` (the check failed). */
  readonly outcome: 'refused' | 'store-error';
  /** The client key the buckets count. */
  readonly clientKey: string;
  /** `refused`: which bucket refused (`client`, `method` or `tool`). */
  readonly scope?: 'client' | 'method' | 'tool' | undefined;
  /** `refused`: the wait given to the client, ms. */
  readonly retryAfterMs?: number | undefined;
}

/** A typed channel (`node:diagnostics_channel`'s `Channel` with a message type). */
export interface TypedChannel<M> {
  readonly name: string | symbol;
  readonly hasSubscribers: boolean;
  publish(message: M): void;
  subscribe(listener: (message: M, name: string | symbol) => void): void;
  unsubscribe(listener: (message: M, name: string | symbol) => void): boolean;
}

function typed<M>(name: string): TypedChannel<M> {
  return channel(name) as unknown as TypedChannel<M>;
}

/** Channel names (stable; part of the public contract). */
export const CHANNEL_NAMES = {
  progress: 'tether:progress',
  heartbeat: 'tether:heartbeat',
  watchdog: 'tether:watchdog',
  cancel: 'tether:cancel',
  mutexWait: 'tether:mutex:wait',
  mrtrRound: 'tether:mrtr:round',
  logDropped: 'tether:log:dropped',
  job: 'tether:job',
  httpSession: 'tether:http:session',
  rateLimit: 'tether:ratelimit',
} as const;

/**
 * The channels. `node:diagnostics_channel` keeps one channel per name per process, so duplicate
 * copies of this package publish and subscribe on the same channels.
 */
export const diagnostics = {
  progress: typed<ProgressMessage>(CHANNEL_NAMES.progress),
  heartbeat: typed<HeartbeatMessage>(CHANNEL_NAMES.heartbeat),
  watchdog: typed<WatchdogMessage>(CHANNEL_NAMES.watchdog),
  cancel: typed<CancelMessage>(CHANNEL_NAMES.cancel),
  mutexWait: typed<MutexWaitMessage>(CHANNEL_NAMES.mutexWait),
  mrtrRound: typed<MrtrRoundMessage>(CHANNEL_NAMES.mrtrRound),
  logDropped: typed<LogDroppedMessage>(CHANNEL_NAMES.logDropped),
  job: typed<JobMessage>(CHANNEL_NAMES.job),
  httpSession: typed<HttpSessionMessage>(CHANNEL_NAMES.httpSession),
  rateLimit: typed<RateLimitMessage>(CHANNEL_NAMES.rateLimit),
} as const;
