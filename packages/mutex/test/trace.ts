/**
 * Helpers of the mutex tests only (the shared ones, pause/until/firstText/tetheredServer, come from
 * the core test kit): an abortable sleep for handlers, and a trace of handler runs per lock key.
 */

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
