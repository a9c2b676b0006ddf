/**
 * Seeded Zipf sampler for the demo traffic (and the benchmarks' traces): P(rank r) ∝ 1 / (r+1)^s
 * for r = 0..n-1, sampled by inverting a precomputed CDF with a binary search — exact for any s,
 * O(n) memory. Real cache traces fit s ≈ 0.6–1.3 (Breslau et al., "Web caching and Zipf-like
 * distributions", 1999).
 */

/** mulberry32: a small, fast, well-mixed 32-bit PRNG; the same seed gives the same trace everywhere. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ZipfOptions {
  /** number of distinct keys (ranks 0..n-1) */
  n: number;
  /** skew exponent; 0 is uniform, larger is more skewed */
  s: number;
  /** PRNG seed @default 1 */
  seed?: number;
}

export class ZipfSampler {
  readonly n: number;
  readonly s: number;
  readonly #cdf: Float64Array;
  readonly #random: () => number;

  constructor(opts: ZipfOptions) {
    if (!Number.isInteger(opts.n) || opts.n < 1) throw new TypeError(`n must be a positive integer, got ${opts.n}`);
    if (!(opts.s >= 0)) throw new TypeError(`s must be >= 0, got ${opts.s}`);
    this.n = opts.n;
    this.s = opts.s;
    this.#random = mulberry32(opts.seed ?? 1);
    const cdf = new Float64Array(opts.n);
    let sum = 0;
    for (let k = 0; k < opts.n; k++) {
      sum += 1 / Math.pow(k + 1, opts.s);
      cdf[k] = sum;
    }
    for (let k = 0; k < opts.n; k++) cdf[k]! /= sum;
    cdf[opts.n - 1] = 1; // rounding must not leave the last bucket unreachable
    this.#cdf = cdf;
  }

  /** Probability of rank r (for checking the generator against its law). */
  probability(rank: number): number {
    const cdf = this.#cdf;
    return rank === 0 ? cdf[0]! : cdf[rank]! - cdf[rank - 1]!;
  }

  next(): number {
    const u = this.#random();
    const cdf = this.#cdf;
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
