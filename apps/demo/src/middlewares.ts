/**
 * The demo's middleware stack, outermost first. One instance per process, shared by every session
 * (that is how the mutex and shutdown draining span sessions). The order and its reasons are in
 * README.md ("Middleware order").
 */
import type { Middleware } from '@mcp-tether/core';
import { logChannel, type LogChannel } from '@mcp-tether/log-channel';
import { mrtr } from '@mcp-tether/mrtr';

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
  /** Silence (ms) after which a quiet call with a progress token gets a heartbeat. */
  heartbeatSilenceMs?: number;
}

/** Build the middleware stack. */
export function createStack(_options: StackOptions = {}): DemoStack {
  // Pending packages (wired in as they land on main): cancel, heartbeat, progress, mutex.
  // Levels per session (default info until logging/setLevel), 100 burst / 20 per second per session.
  const logs = logChannel();
  const middlewares: Middleware[] = [
    // Outside everything that may log, so every layer's ctx.log goes through it.
    logs,
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
