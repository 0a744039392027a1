/**
 * @mcp-tether/heartbeat — liveness for calls that go quiet: a progress-silence watchdog served by
 * one shared timer, and optional pings for stateful sessions.
 * @packageDocumentation
 */
import {
  type CallContext,
  diagnostics,
  type Middleware,
  type NotificationEvent,
  type ServerHost,
} from '@mcp-tether/core';

/** What a heartbeat message is made from. */
export interface HeartbeatInfo {
  /** ms since the call started. */
  readonly elapsedMs: number;
  /** ms since the last progress notification of the call (or since it started). */
  readonly silentMs: number;
  /** The last stage message the client saw for this call (from a progress notification that was not a heartbeat), if any. */
  readonly stage: string | undefined;
  /** Tool name, prompt name or resource URI. */
  readonly name: string;
}

/** Options of the session ping (stateful sessions only). */
export interface SessionPingOptions {
  /** Time between two pings, in ms (a ping still in flight skips the next turn: at most one in flight). */
  intervalMs: number;
  /** A ping not answered within this many ms fails, in ms. */
  timeoutMs: number;
  /** This many failed pings in a row mean the session is dead (≥ 1). */
  maxFailures: number;
  /** Called once when the session is found dead, before it is closed. Errors it throws are ignored. */
  onDead?: (info: DeadSessionInfo) => void;
  /** Close the session's server when it is found dead. Default true. */
  closeOnDead?: boolean;
}

/** Passed to {@link SessionPingOptions.onDead}. */
export interface DeadSessionInfo {
  /** The transport session id. */
  readonly sessionId: string | undefined;
  /** Consecutive failed pings (= `maxFailures`). */
  readonly failures: number;
  /** The last ping's error (timeout, connection closed, JSON-RPC error). */
  readonly error: unknown;
}

/** Options of {@link heartbeat}. */
export interface HeartbeatOptions {
  /**
   * Silence after which a call with a progress token gets a heartbeat notification, in ms.
   * Default 10 000. Pick it well below your clients' request timeout (the SDK's default is 60 000).
   */
  silenceMs?: number;
  /** Make the heartbeat's message. Default: `still working (12 s elapsed; last: rows loaded)`. */
  message?: (info: HeartbeatInfo) => string;
  /** Ping stateful sessions and close those that stop answering. Off by default. */
  sessionPing?: SessionPingOptions;
  /**
   * Longest stretch, in ms, one sweep over the watched calls runs before it gives the event loop a
   * turn (`setImmediate`) and goes on where it stopped. Default 5. With many silent calls due at
   * once (10 000 calls started together), this spreads their heartbeats over several turns instead
   * of blocking pings, cancels and other calls for one long burst.
   */
  sweepBudgetMs?: number;
}

/** The heartbeat middleware, with a little introspection. */
export interface HeartbeatMiddleware extends Middleware {
  /** Calls with a progress token currently watched by this instance. */
  readonly watching: number;
}

/** Room left to `total` that one heartbeat may take (a tiny step, so it never looks like real progress). */
const STEP_FRACTION = 1e-3;
/** Step without a `total`, in the unit of `progress`. */
const STEP_ABSOLUTE = 1e-3;

/**
 * The smallest honest heartbeat value: strictly above the last value sent, never above `total`.
 * `undefined` when there is no room left (the last value equals `total`).
 */
export function heartbeatValue(last: { progress: number; total?: number } | undefined): number | undefined {
  if (!last) return 0;
  const { progress: p, total } = last;
  if (total !== undefined) {
    if (!(p < total)) return undefined;
    const v = p + (total - p) * STEP_FRACTION;
    if (v > p && v <= total) return v;
    return nextUp(p) <= total ? nextUp(p) : undefined;
  }
  const v = p + STEP_ABSOLUTE;
  return v > p ? v : nextUp(p);
}

function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  const buf = new Float64Array([x]);
  const bits = new BigInt64Array(buf.buffer);
  bits[0] = bits[0]! + (x > 0 ? 1n : -1n);
  return buf[0]!;
}

const defaultMessage = (i: HeartbeatInfo) =>
  `still working (${Math.round(i.elapsedMs / 1000)} s elapsed${i.stage ? `; last: ${i.stage}` : ''})`;

interface Watch {
  readonly ctx: CallContext;
  /** The last stage message seen in a non-heartbeat notification. */
  stage: string | undefined;
  /** The value of our own last heartbeat (to tell it apart in `ctx.lastProgress`). */
  beat: number | undefined;
  /** A heartbeat of this call is on its way (not yet written): no other until it is. */
  sending: boolean;
}

/**
 * The heartbeat middleware.
 *
 * **Progress-silence watchdog.** For each call whose request carried `_meta.progressToken`: when no
 * progress notification went out for `silenceMs` (core's `ctx.lastProgress.at`, or the call's start),
 * it sends `notifications/progress` with a value just above the last one sent (`0` when none was;
 * a tiny step toward `total` otherwise, never above it; nothing when the last value already equals
 * `total`) and a message saying the call is still alive. It stops before the response and at abort.
 * Calls without a token are not watched (and cost nothing).
 *
 * **One timer.** All watched calls of this instance share one unref'd interval (a quarter of
 * `silenceMs`), started when the first call registers and cleared when the last one leaves: an idle
 * server keeps no timer, and the process can exit.
 *
 * **Session ping** (`sessionPing`): for stateful sessions (a transport session id), a `ping` every
 * `intervalMs` with at most one in flight; `maxFailures` failures in a row call `onDead` and close
 * the session. On stateful HTTP a ping goes only while the session's standalone GET SSE stream is
 * open (`host.reachable()`); a turn without one, or a ping whose stream closed before it was
 * answered, is not a failure.
 *
 * Order: put it before (outside) `progressMiddleware()`; it works in either order because it reads
 * what core's sink actually sent.
 * @throws RangeError for an option that is not a positive finite number of ms (or count)
 */
export function heartbeat(options: HeartbeatOptions = {}): HeartbeatMiddleware {
  const { silenceMs, makeMessage, ping, sweepBudgetMs, tickMs } = settingsOf(options);
  const watches = new Set<Watch>();
  let timer: ReturnType<typeof setInterval> | undefined;

  const leave = (w: Watch) => {
    if (!watches.delete(w)) return;
    if (watches.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  /** One watched call's turn in a sweep: leave if done, else send a heartbeat if it went quiet. */
  const check = (w: Watch, now: number) => {
    const ctx = w.ctx;
    if (ctx.completed || ctx.abortReason !== undefined) {
      leave(w);
      return;
    }
    // Backpressure: while the transport has not taken this call's last heartbeat, another would
    // only queue behind it (and a slow client would make every tick add one).
    if (w.sending) return;
    const event = beatOf(w, now, silenceMs, makeMessage);
    if (event === undefined) return;
    const sent = () => {
      w.sending = false;
    };
    ctx.emit(event, self).then(sent, sent);
  };
  const tick = sweeper(watches, check, sweepBudgetMs);

  const self: HeartbeatMiddleware = {
    name: 'heartbeat',
    get watching() {
      return watches.size;
    },
    // No progress token, nothing to keep alive: the call skips this layer (no extra promise).
    when: (ctx) => ctx.progressToken !== undefined,
    handle(ctx, next) {
      if (ctx.progressToken === undefined) return next(); // reached without `when` (by hand)
      const w: Watch = { ctx, stage: undefined, beat: undefined, sending: false };
      watches.add(w);
      if (timer === undefined) {
        timer = setInterval(tick, tickMs);
        timer.unref?.();
      }
      ctx.onAbort(() => leave(w));
      const done = () => leave(w);
      const inner = next();
      inner.then(done, done);
      return inner;
    },
  };
  if (ping) self.setup = (host) => startSessionPing(host, ping);
  return self;
}

/** The options of {@link heartbeat}, checked, with their defaults. */
interface Settings {
  readonly silenceMs: number;
  readonly makeMessage: (info: HeartbeatInfo) => string;
  readonly ping: SessionPingOptions | undefined;
  readonly sweepBudgetMs: number;
  /** Period of the shared timer: a quarter of `silenceMs`, within 1..5 000 ms. */
  readonly tickMs: number;
}

/** @throws RangeError for an option that is not a positive finite number of ms (or count) */
function settingsOf(options: HeartbeatOptions): Settings {
  const silenceMs = options.silenceMs ?? 10_000;
  positive('silenceMs', silenceMs);
  const makeMessage = options.message ?? defaultMessage;
  const ping = options.sessionPing;
  if (ping !== undefined) {
    if (typeof ping !== 'object' || ping === null)
      throw new RangeError(
        'mcp-tether/heartbeat: sessionPing must be an object { intervalMs, timeoutMs, maxFailures }',
      );
    positive('sessionPing.intervalMs', ping.intervalMs);
    positive('sessionPing.timeoutMs', ping.timeoutMs);
    if (!Number.isInteger(ping.maxFailures) || ping.maxFailures < 1) {
      throw new RangeError(
        `mcp-tether/heartbeat: sessionPing.maxFailures must be an integer >= 1, got ${String(ping.maxFailures)}`,
      );
    }
  }
  const sweepBudgetMs = options.sweepBudgetMs ?? 5;
  positive('sweepBudgetMs', sweepBudgetMs);
  const tickMs = Math.max(1, Math.min(Math.floor(silenceMs / 4), 5_000));
  return { silenceMs, makeMessage, ping, sweepBudgetMs, tickMs };
}

/**
 * The heartbeat a watched call gets now, or `undefined` when it has not been quiet for
 * `silenceMs` or is at its `total` (nothing honest to send). Notes the call's stage on the way;
 * with a heartbeat, marks it sent-but-not-written (`sending`) and publishes `tether:heartbeat`.
 */
function beatOf(
  w: Watch,
  now: number,
  silenceMs: number,
  makeMessage: (info: HeartbeatInfo) => string,
): NotificationEvent | undefined {
  const ctx = w.ctx;
  const last = ctx.lastProgress;
  if (last && last.progress !== w.beat && last.message !== undefined) w.stage = last.message;
  const silentMs = now - (last ? last.at : ctx.startedAt);
  if (silentMs < silenceMs) return undefined;
  const value = heartbeatValue(last);
  if (value === undefined) return undefined; // at total: nothing honest to send
  const info: HeartbeatInfo = { elapsedMs: now - ctx.startedAt, silentMs, stage: w.stage, name: ctx.name };
  let message: string;
  try {
    message = String(makeMessage(info));
  } catch {
    message = defaultMessage(info); // a failing custom message must not silence the heartbeat
  }
  const params: { progress: number; total?: number; message: string } = { progress: value, message };
  if (last?.total !== undefined) params.total = last.total;
  const event: NotificationEvent = {
    type: 'notification',
    notification: { method: 'notifications/progress', params },
  };
  w.beat = value;
  w.sending = true;
  if (diagnostics.heartbeat.hasSubscribers) diagnostics.heartbeat.publish({ ctx, kind: 'beat', silentMs });
  return event;
}

/**
 * The shared timer's tick: a sweep that runs `check` over every watched call, in slices of at
 * most `budgetMs` each (a `setImmediate` turn between two slices). A tick that comes while a
 * sweep runs makes it sweep once more when it ends.
 */
function sweeper(watches: Set<Watch>, check: (w: Watch, now: number) => void, budgetMs: number): () => void {
  /** The sweep in progress, and whether a tick came while it ran (it then sweeps once more). */
  let sweep: Iterator<Watch> | undefined;
  let tickedMeanwhile = false;
  const runSweep = () => {
    const it = sweep;
    if (it === undefined) return;
    const started = performance.now();
    for (let n = 1; ; n++) {
      const r = it.next();
      if (r.done) {
        sweep = undefined;
        if (tickedMeanwhile) {
          // Calls this sweep passed before a tick came may be due now: look at every call again,
          // in a turn of its own (each slice stays within the budget).
          tickedMeanwhile = false;
          sweep = watches.values();
          setImmediate(runSweep).unref?.();
        }
        return;
      }
      // Date.now() per call: a sweep split over several turns still measures silence exactly.
      check(r.value, Date.now());
      if (n % 32 === 0 && performance.now() - started >= budgetMs) {
        setImmediate(runSweep).unref?.();
        return;
      }
    }
  };
  return () => {
    if (sweep !== undefined) {
      tickedMeanwhile = true;
      return;
    }
    // A Set iterator visits entries added during the sweep and skips those deleted: calls that
    // start or end between two turns of one sweep are handled correctly.
    sweep = watches.values();
    runSweep();
  };
}

/** Ping one stateful session; at most one ping in flight; dead after `maxFailures` failures in a row. */
function startSessionPing(host: ServerHost, o: SessionPingOptions): void {
  let failures = 0;
  let inFlight = false;
  let stopped = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
  };
  const timer = setInterval(() => {
    if (stopped || inFlight) return;
    const sessionId = host.sessionId();
    if (sessionId === undefined) {
      // Initialized without a session id (stdio, in-memory, stateless HTTP): nothing to ping.
      if (host.clientCapabilities() !== undefined) stop();
      return;
    }
    // No way to the client now (a stateful HTTP session whose client has no standalone GET SSE
    // stream open, or not yet): the SDK would drop the ping, so it is not sent and nothing fails.
    if (host.reachable?.() === false) return;
    inFlight = true;
    host.request('ping', undefined, { timeout: o.timeoutMs }).then(
      () => {
        inFlight = false;
        failures = 0;
        if (diagnostics.heartbeat.hasSubscribers)
          diagnostics.heartbeat.publish({ ctx: undefined, kind: 'ping', sessionId });
      },
      (error: unknown) => {
        inFlight = false;
        if (stopped) return;
        // The stream closed while the ping was out: it may never have been delivered. Not a failure.
        if (host.reachable?.() === false) return;
        if (diagnostics.heartbeat.hasSubscribers)
          diagnostics.heartbeat.publish({ ctx: undefined, kind: 'ping-failed', sessionId });
        failures++;
        if (failures < o.maxFailures) return;
        stop();
        try {
          o.onDead?.({ sessionId, failures, error });
        } catch {
          // a failing callback must not keep a dead session open
        }
        if (o.closeOnDead !== false) host.close?.().catch(() => {});
      },
    );
  }, o.intervalMs);
  timer.unref?.();
  host.onClose(stop);
}

function positive(name: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new RangeError(`mcp-tether/heartbeat: ${name} must be a positive finite number, got ${String(v)}`);
  }
}
