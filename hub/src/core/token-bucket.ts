/**
 * A token bucket: `rate` tokens per second refill up to `burst`; each unit of work takes one.
 * Refill is computed lazily from the injected clock on each call (no timer), so an idle bucket
 * costs nothing. Used for the per-connection invalidation budget and the per-connection budget of
 * promotions a connection alone carries.
 */
export class TokenBucket {
  readonly rate: number;
  readonly burst: number;
  #tokens: number;
  #at: number;

  /**
   * @param rate tokens added per second
   * @param burst most tokens held (the bucket starts full)
   * @param now ms, the clock of the first refill
   */
  constructor(rate: number, burst: number, now: number) {
    this.rate = rate;
    this.burst = Math.max(1, burst);
    this.#tokens = this.burst;
    this.#at = now;
  }

  /** tokens available at `now` */
  available(now: number): number {
    this.#refill(now);
    return this.#tokens;
  }

  /** Takes one token if there is one. */
  take(now: number): boolean {
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** ms from `now` until one token is available (0 when one is). */
  waitMs(now: number): number {
    this.#refill(now);
    if (this.#tokens >= 1 || this.rate <= 0) return this.#tokens >= 1 ? 0 : Infinity;
    return Math.ceil(((1 - this.#tokens) * 1000) / this.rate);
  }

  #refill(now: number): void {
    const elapsed = now - this.#at;
    if (elapsed <= 0) return; // same ms, or the clock stepped back: no refill
    this.#at = now;
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.rate) / 1000);
  }
}
