/**
 * Fair turns per client key (issue 26, `fairShare`): in each turn of the event loop a client key
 * starts at most `share` requests; its further requests of that turn — body read, the cheap checks
 * passed, counted in flight — wait in its own FIFO queue and start on later turns, `share` per
 * client with queued work per turn. A turn is what lies between two runs of the drain
 * (`setImmediate`, the loop's check phase): the poll phase between two drains reads whatever the
 * other clients sent meanwhile, so a client that floods the front with fast requests (each one
 * read, served and answered within the I/O callback that read it) no longer makes everyone else
 * wait for its whole share of a turn. Refusals take turns too: the 429 of a client at
 * `maxClientRequestsInFlight` waits in the same FIFO as its requests ({@link FairTurns.waitRefusal}),
 * at most that many of one key at once. See DESIGN.md, "Fair turns per client" and "Refusals take
 * fair turns too".
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
  /** A refusal (a 429 waiting to be written), not a request. */
  readonly refusal: boolean;
  readonly key: string;
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
  /** Refusals (429 `client-requests`) waiting now, all client keys. */
  waitingRefusals = 0;
  /** Refusals that waited for a turn, since the front began. */
  deferredRefusals = 0;
  /** Refusals waiting now, per client key that has any. */
  readonly #refusals = new Map<string, number>();

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
    return this.#enqueue(key, signal, false);
  }

  /**
   * Wait for the turn of a refusal of `key` (its 429 `client-requests`) that {@link pass} held
   * back: it queues behind the key's waiting requests and refusals and uses one of its turn's
   * share when written. Resolves as {@link wait}. Undefined when `max` refusals of `key` already
   * wait (answer it at once: pipelined requests are emitted without backpressure, so the queue
   * must not grow with them).
   * @param max most refusals of one key waiting at once (`maxClientRequestsInFlight`)
   */
  waitRefusal(key: string, signal: AbortSignal, max: number): Promise<boolean> | undefined {
    const mine = this.#refusals.get(key) ?? 0;
    if (mine >= max) return undefined;
    return this.#enqueue(key, signal, true);
  }

  #enqueue(key: string, signal: AbortSignal, refusal: boolean): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        if (waiter.gone) return;
        waiter.gone = true;
        this.#left(waiter);
        resolve(false);
      };
      const waiter: Waiter = {
        gone: false,
        refusal,
        key,
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
      if (refusal) {
        this.#refusals.set(key, (this.#refusals.get(key) ?? 0) + 1);
        this.waitingRefusals++;
        this.deferredRefusals++;
      } else {
        this.waiting++;
        this.deferred++;
      }
      if (!this.#scheduled) this.#schedule();
    });
  }

  /** A waiter left the queue (its turn came, or its client left): the gauges drop. */
  #left(waiter: Waiter): void {
    if (!waiter.refusal) {
      this.waiting--;
      return;
    }
    this.waitingRefusals--;
    const left = (this.#refusals.get(waiter.key) ?? 1) - 1;
    if (left > 0) this.#refusals.set(waiter.key, left);
    else this.#refusals.delete(waiter.key);
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
        this.#left(waiter);
        waiter.settle(true); // its continuation runs once this callback returns, in queue order
      }
      if (n > 0) this.#started.set(key, n);
      if (queue.length === 0) this.#queues.delete(key);
    }
    // Another drain while requests wait, or to end the turn the drain's starts count in.
    if (this.#started.size > 0 || this.#queues.size > 0) this.#schedule();
  };
}
