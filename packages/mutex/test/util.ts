import { type MiddlewareLike, tether } from '@mcp-tether/core';
import type { MatrixServer, SdkTarget } from '@mcp-tether/core/testing/matrix';

export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const text = (r: any): string | undefined => r?.content?.[0]?.text;

/** A tethered McpServer of the target's SDK line whose SDK-level errors are collected (they must stay empty). */
export function makeServer(sdk: SdkTarget, middlewares: MiddlewareLike[], errors: unknown[] = []): { server: MatrixServer; errors: unknown[] } {
  const mcp = sdk.createServer({ name: 'mutex-test', version: '1.0.0' });
  const server = tether(mcp, middlewares, { onError: (e) => errors.push(e) });
  mcp.server.onerror = (e: unknown) => errors.push(e);
  return { server, errors };
}

/** Resolve when `pred()` becomes true (polled), or reject after `timeoutMs`. */
export async function until(pred: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await pause(2);
  }
}

/** p-th percentile (0..100) of a list of numbers. */
export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** An abortable sleep (rejects with signal.reason), for handlers in these tests. */
export function napping(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Enter/exit trace of handler runs, with overlap detection per lock key. */
export class Trace {
  readonly events: Array<{ t: number; what: 'enter' | 'exit'; who: string; key: string }> = [];
  private inside = new Map<string, Set<string>>();
  maxInside = new Map<string, number>();
  enter(who: string, key = 'k') {
    const s = this.inside.get(key) ?? new Set();
    this.inside.set(key, s);
    s.add(who);
    this.maxInside.set(key, Math.max(this.maxInside.get(key) ?? 0, s.size));
    this.events.push({ t: performance.now(), what: 'enter', who, key });
  }
  exit(who: string, key = 'k') {
    this.inside.get(key)?.delete(who);
    this.events.push({ t: performance.now(), what: 'exit', who, key });
  }
  /** True when, for `key`, every enter is followed by the exit of the same run before the next enter. */
  serialized(key = 'k'): boolean {
    let current: string | undefined;
    for (const e of this.events.filter((x) => x.key === key)) {
      if (e.what === 'enter') {
        if (current !== undefined) return false;
        current = e.who;
      } else {
        if (current !== e.who) return false;
        current = undefined;
      }
    }
    return true;
  }
  entered(): string[] {
    return this.events.filter((e) => e.what === 'enter').map((e) => e.who);
  }
  at(what: 'enter' | 'exit', who: string): number | undefined {
    return this.events.find((e) => e.what === what && e.who === who)?.t;
  }
}
