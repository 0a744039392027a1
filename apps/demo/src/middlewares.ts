/**
 * The demo's middleware stack, outermost first. One instance per process, shared by every session
 * (that is how the mutex and shutdown draining span sessions). The order and its reasons are in
 * README.md ("Middleware order").
 */
import type { Middleware } from '@mcp-tether/core';
import { heartbeat } from '@mcp-tether/heartbeat';
import { logChannel, type LogChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';
import { progressMiddleware } from '@mcp-tether/progress';

/** The stack and the process-level controls that come with it. */
export interface DemoStack {
  /** Middlewares in attach order (outermost first). */
  readonly middlewares: readonly Middleware[];
  /** The log channel (its `logger` reaches every session). */
  readonly logs: LogChannel;
  /** Names, in order, for the startup banner. */
  readonly names: readonly string[];
  /** Stop taking calls and wait for the running ones (bounded by `timeoutMs`). */
  drain(timeoutMs: number): Promise<void>;
}

/** Options of {@link createStack}. */
export interface StackOptions {
  /**
   * Silence after which a quiet call with a progress token gets a heartbeat, in ms. Default 1000:
   * short, so the walkthrough shows heartbeats within seconds (a production server would use ~10 s).
   */
  heartbeatSilenceMs?: number;
}

/** Build the middleware stack. */
export function createStack(options: StackOptions = {}): DemoStack {
  // Pending packages (wired in as they land on main): cancel, mutex.
  // Levels per session (default info until logging/setLevel), 100 burst / 20 per second per session.
  const logs = logChannel();
  const middlewares: Middleware[] = [
    // Outside everything that may log, so every layer's ctx.log goes through it.
    logs,
    // Speaks for a call gone quiet (waiting on I/O, the mutex or the user); outside progress, as its README recommends.
    heartbeat({ silenceMs: options.heartbeatSilenceMs ?? 1_000 }),
    // yield progress(...) -> throttled, strictly increasing notifications/progress (200 ms and 1% both).
    progressMiddleware(),
    // Ask the user mid-call; outside the mutex so no lock is held while the user answers.
    mrtr(),
  ];
  return {
    middlewares,
    logs,
    names: middlewares.map((m) => m.name),
    drain: async () => {},
  };
}
