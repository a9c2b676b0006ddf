/**
 * A figure measured several times, with its standard error, and the rule that turns a fitted
 * unit cost into one a model may use. A cost got as the difference of two noisy totals can come
 * out negative when the term is small against the noise: such a fit says only that the term is
 * below what the measurement resolves. It is then reported as "not separable from noise" and
 * bounded from above (value + z·se, never below 0), which is what a capacity plan may assume:
 * over-stating a cost costs a hub too many, under-stating it an overloaded one.
 */

export interface Estimate {
  value: number;
  /** standard error of `value` (0 when measured once) */
  se: number;
  /** samples behind it */
  n: number;
}

/** A unit cost as the model uses it. */
export interface Cost {
  /** the fit when it is separable from noise; otherwise its upper bound */
  value: number;
  separable: boolean;
  fit: Estimate;
}

/** standard errors a fit must clear to count as measured (two: ~95 % one-sided) */
export const SEPARABLE_Z = 2;

/** Mean and standard error of `xs` (se 0 for fewer than two). */
export function meanOf(xs: readonly number[]): Estimate {
  const n = xs.length;
  if (n === 0) return { value: Number.NaN, se: Number.NaN, n: 0 };
  const mean = xs.reduce((a, x) => a + x, 0) / n;
  if (n < 2) return { value: mean, se: 0, n };
  const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1);
  return { value: mean, se: Math.sqrt(variance / n), n };
}

/** The median of `xs` (NaN when empty). */
function median(xs: readonly number[]): number {
  const n = xs.length;
  if (n === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(n / 2);
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Median and its standard error, both robust to a few spikes (a major GC, a neighbour's burst on
 * shared cores) in a series of rate slices: the spread is the median absolute deviation scaled to
 * a normal sample's sd (× 1.4826), and the median's standard error ≈ 1.2533 · sd / √n.
 */
export function medianOf(xs: readonly number[]): Estimate {
  const n = xs.length;
  if (n === 0) return { value: Number.NaN, se: Number.NaN, n: 0 };
  const m = median(xs);
  const sd = 1.4826 * median(xs.map((x) => Math.abs(x - m)));
  return { value: m, se: n < 2 ? 0 : (1.2533 * sd) / Math.sqrt(n), n };
}

/** `a − b` of independent estimates. */
export function minus(a: Estimate, b: Estimate): Estimate {
  return { value: a.value - b.value, se: Math.hypot(a.se, b.se), n: Math.min(a.n, b.n) };
}

/** `a · k` for an exact `k`. */
export function scaled(a: Estimate, k: number): Estimate {
  return { value: a.value * k, se: a.se * Math.abs(k), n: a.n };
}

/**
 * The cost a fit stands for: itself when it clears `z` standard errors above 0, else its upper
 * bound max(0, value + z·se). A fit measured once (se 0) is taken as it is when positive, and as 0
 * when not (nothing bounds it better).
 */
export function guarded(fit: Estimate, z = SEPARABLE_Z): Cost {
  if (Number.isFinite(fit.value) && fit.value > z * fit.se && fit.value > 0) {
    return { value: fit.value, separable: true, fit };
  }
  const bound = Number.isFinite(fit.value) ? Math.max(0, fit.value + z * (Number.isFinite(fit.se) ? fit.se : 0)) : 0;
  return { value: bound, separable: false, fit };
}

/** "12.3 ± 1.1 (n = 5)" or "not separable from noise (fit −3.1 ± 4.0, n = 5), bounded by 4.9". */
export function describeCost(c: Cost, digits = 1): string {
  const fit = `${c.fit.value.toFixed(digits)} ± ${c.fit.se.toFixed(digits)}, n = ${c.fit.n}`;
  return c.separable ? `fit ${fit}` : `not separable from noise (fit ${fit}), bounded by ${c.value.toFixed(digits)}`;
}
