/**
 * A token bucket: holds at most `burst` tokens, refills `perSecond` tokens per second (fractional
 * refill, computed lazily from the clock), and each message spends one token.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly burst: number,
    readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  private refill(): void {
    const t = this.now();
    if (t > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.perSecond) / 1000);
    }
    this.last = t;
  }

  /** Spend one token if there is one. */
  take(): boolean {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  /** Milliseconds until a token is available (0 when one is available now). */
  msUntilToken(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.perSecond);
  }
}
