/**
 * Fair turns per client key (issue 26, `fairShare`): in each turn of the event loop a client key
 * starts at most `share` requests; its further requests of that turn — body read, the cheap checks
 * passed, counted in flight — wait in its own FIFO queue and start on later turns, `share` per
 * client with queued work per turn. A turn is what lies between two runs of the drain
 * (`setImmediate`, the loop's check phase): the poll phase between two drains reads whatever the
 * other clients sent meanwhile, so a client that floods the front with fast requests (each one
 * read, served and answered within the I/O callback that read it) no longer makes everyone else
 * wait for its whole share of a turn. See DESIGN.md, "Fair turns per client".
 */

/** The loop's check phase; a host with no `setImmediate` (a Workers-style runtime) gets a 0 ms timer instead. */
const nextTurn: (fn: () => void) => unknown =
  typeof setImmediate === 'function' ? setImmediate : (fn) => setTimeout(fn, 0);

/** A request waiting for its client's turn. */
interface Waiter {
  /** Settle the wait: true to start, false when its client left. */
  readonly settle: (start: boolean) => void;
  /** Its client left while it waited: skipped by the drain. */
  gone: boolean;
}

/** Requests started per turn and requests waiting, per client key. */
export class FairTurns {
  /** Requests each client key started in this turn (cleared by every drain). */
  readonly #started = new Map<string, number>();
  /** The waiting requests of each client key that has any, oldest first. */
  readonly #queues = new Map<string, Waiter[]>();
  #scheduled = false;
  /** Requests waiting now, all client keys. */
  waiting = 0;
  /** Requests that waited for a turn, since the front began. */
  deferred = 0;

  /** @param share requests one client key starts per turn (a whole number ≥ 1) */
  constructor(readonly share: number) {}

  /**
   * Whether a request of `key` may start now (then it counts against this turn's share). False:
   * call {@link wait}. A request with no key always starts.
   */
  pass(key: string | undefined): boolean {
    if (key === undefined) return true;
    if (this.#queues.has(key)) return false; // FIFO: behind its own waiting requests
    const started = this.#started.get(key) ?? 0;
    if (started >= this.share) return false;
    this.#started.set(key, started + 1);
    if (!this.#scheduled) this.#schedule(); // the end of this turn
    return true;
  }

  /**
   * Wait for the turn of a request of `key` that {@link pass} held back. Resolves true when it may
   * start, false when `signal` aborted first (its client left: nobody to answer; it leaves the
   * queue without starting).
   */
  wait(key: string, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        if (waiter.gone) return;
        waiter.gone = true;
        this.waiting--;
        resolve(false);
      };
      const waiter: Waiter = {
        gone: false,
        settle: (start) => {
          signal.removeEventListener('abort', onAbort);
          resolve(start);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      let queue = this.#queues.get(key);
      if (queue === undefined) {
        queue = [];
        this.#queues.set(key, queue);
      }
      queue.push(waiter);
      this.waiting++;
      this.deferred++;
      if (!this.#scheduled) this.#schedule();
    });
  }

  #schedule(): void {
    this.#scheduled = true;
    nextTurn(this.#turn);
  }

  /** A new turn: every share back, then each client key with waiting requests starts up to its share. */
  readonly #turn = (): void => {
    this.#scheduled = false;
    this.#started.clear();
    for (const [key, queue] of this.#queues) {
      let n = 0;
      while (n < this.share && queue.length > 0) {
        const waiter = queue.shift()!;
        if (waiter.gone) continue;
        n++;
        this.waiting--;
        waiter.settle(true); // its continuation runs once this callback returns, in queue order
      }
      if (n > 0) this.#started.set(key, n);
      if (queue.length === 0) this.#queues.delete(key);
    }
    // Another drain while requests wait, or to end the turn the drain's starts count in.
    if (this.#started.size > 0 || this.#queues.size > 0) this.#schedule();
  };
}
