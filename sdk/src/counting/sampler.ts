/**
 * The access window's randomness (window.ts): which accesses a sampled window counts, which a
 * rule with a lower rate drops, and which slots eviction samples, all from one xorshift32
 * state (Marsaglia, "Xorshift RNGs", 2003): cheap, deterministic, good enough to spread them.
 *
 * At a client rate p < 1, the accesses between two counted ones are a countdown drawn from the
 * geometric distribution (the skip trick of Vitter's reservoir "Algorithm Z", ACM TOMS 1985): a
 * sampled-out access costs one decrement, no random draw.
 */
export class Sampler {
  /** share of accesses counted, in (0, 1] */
  readonly rate: number;
  #state = 0x9e3779b9;
  #skip = 1;

  constructor(rate: number) {
    this.rate = rate;
    if (rate < 1) this.#skip = this.#nextSkip();
  }

  /** Counts down to the next counted access; false (and a fresh countdown) when this one counts. */
  sampledOut(): boolean {
    if (--this.#skip > 0) return true;
    this.#skip = this.#nextSkip();
    return false;
  }

  /** the next state, a uint32 */
  u32(): number {
    let x = this.#state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#state = x >>> 0;
    return this.#state;
  }

  /** uniform in (0, 1] */
  random(): number {
    return (this.u32() + 1) / 4294967296;
  }

  /** Accesses until the next counted one: geometric with parameter p (1 + ⌊ln U / ln(1 − p)⌋). */
  #nextSkip(): number {
    return 1 + Math.floor(Math.log(this.random()) / Math.log1p(-this.rate));
  }
}
