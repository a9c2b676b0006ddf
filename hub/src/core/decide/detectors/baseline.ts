/**
 * Baseline detection for one rule (`mode: 'baseline'`): a key is anomalous when its window total
 * leaves its own recent normal, not when it crosses an absolute number.
 *
 * Design: per key, an exponentially weighted mean and variance of its tumbling-window totals
 * (α = 2 / (baselineWindows + 1); the incremental form of Finch, "Incremental calculation of
 * weighted mean and variance", 2009 — the EWMA control chart of Roberts, Technometrics 1959). A
 * baseline seeded from the key's own windows weighs its k-th window by max(α, 1/k): the plain
 * mean of its first windows (Welford, Technometrics 1962), the EWMA once k reaches 1/α. Its first
 * windows are the least sure (an SDK that joined late or reported late, a count the per-instance
 * threshold hid until it crossed): as the EWMA's seed, a low one would pass for the key's normal
 * for some 1/α windows, and the key's steady rate would then look like a jump. The
 * promotion level, in accesses per window, is
 *
 *     max(floor, min(mean × factor, mean + sigma × σ))        (the sigma branch only when sigma > 0)
 *
 * with σ = sqrt(max(variance, mean)): counts are at least as noisy as a Poisson process, so a key
 * whose windows happened to be identical does not get a zero-width band. While a key is hot its
 * baseline is frozen — an anomaly must not teach the detector that it is normal — and the level it
 * was promoted at stays its renewal level (demotion: level × demoteRatio, as in fixed mode).
 *
 * Which keys have a baseline, and how a quiet key gets one: only keys the SDKs report (their
 * window reached the per-instance threshold, sized from `floor`), at most `maxKeys`, the stalest
 * evicted first (Map order is the order of last window roll). A key reported for the first time
 * was, by the report guarantee, below `reportFraction × floor` cluster-wide in every earlier
 * window; its baseline starts there (mean = variance = that bound). That bound is only sound when
 * this hub has been watching: for `baselineWindows` windows after the detector starts (hub start,
 * rule change, ownership change; a restart never shortens a warm-up under way) a new key is not
 * judged until three whole windows of it were seen, averaged as above. Windows without reports
 * count as zero.
 *
 * Pure: no timers; time comes in as `now` (ms).
 */
import type { Rule } from '@hotkey/sdk/rules';
import { MODE_DEFAULTS } from '@hotkey/sdk/rules';

interface Baseline {
  mean: number;
  variance: number;
  /** tumbling window number the accumulator counts into */
  gen: number;
  acc: number;
  /** has a baseline */
  seeded: boolean;
  /** windows folded into the baseline (judged from SEED_WINDOWS on) */
  seen: number;
  /** windows the mean is made of, for the weight of the next one (max(α, 1/k)); Infinity for a prior */
  samples: number;
  /** the accumulator covers only part of window `gen` (first seen mid-window during warm-up) */
  partial: boolean;
  level: number;
}

/** Both come from the aggregator's options (the aggregator owns their defaults). */
export interface BaselineOptions {
  /** keys with a baseline at most; the stalest is evicted */
  maxKeys: number;
  /** share of the floor the SDKs together may leave unreported (the hub's localThresholdFraction) */
  reportFraction: number;
}

/** a baseline seeded in the warm-up judges only after this many whole windows (one is too noisy) */
const SEED_WINDOWS = 3;
/** at most this many empty windows are folded one by one; beyond, the baseline has decayed anyway */
const MAX_FOLD = 200;

export class BaselineDetector {
  readonly #windowMs: number;
  readonly #alpha: number;
  readonly #factor: number;
  readonly #sigma: number;
  readonly #floor: number;
  readonly #prior: number;
  readonly #warmupWindows: number;
  readonly #maxKeys: number;
  readonly #keys = new Map<string, Baseline>();
  #warmUntilGen: number;

  constructor(rule: Rule, now: number, options: BaselineOptions) {
    this.#windowMs = rule.windowMs;
    const n = rule.baselineWindows ?? MODE_DEFAULTS.baselineWindows;
    this.#alpha = 2 / (n + 1);
    this.#warmupWindows = n;
    this.#factor = rule.factor ?? MODE_DEFAULTS.factor;
    this.#sigma = rule.sigma ?? MODE_DEFAULTS.sigma;
    this.#floor = rule.threshold;
    this.#prior = this.#floor * options.reportFraction;
    this.#maxKeys = Math.max(1, options.maxKeys);
    this.#warmUntilGen = Math.floor(now / this.#windowMs) + this.#warmupWindows;
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Starts a new warm-up (this hub now owns keys it has not watched); one under way ends no sooner. */
  restartWarmup(now: number): void {
    this.#warmUntilGen = Math.max(this.#warmUntilGen, Math.floor(now / this.#windowMs) + this.#warmupWindows);
  }

  /**
   * Adds `count` reported accesses of `key` at `now` and returns its promotion level in accesses
   * per window (Infinity while it has no baseline yet). `hot`: the key is hot, its baseline frozen.
   */
  observe(key: string, count: number, now: number, hot: boolean): number {
    const gen = Math.floor(now / this.#windowMs);
    let b = this.#keys.get(key);
    if (b === undefined) {
      b = this.#create(key, gen, now);
    } else if (gen > b.gen) {
      this.#roll(b, gen, hot);
      // re-inserted once per window: Map order is staleness order, the first entry the stalest
      this.#keys.delete(key);
      this.#keys.set(key, b);
    }
    b.acc += count;
    return b.level;
  }

  /** The key's promotion level now (Infinity: no baseline yet; undefined: not tracked). */
  level(key: string): number | undefined {
    return this.#keys.get(key)?.level;
  }

  /** mean and σ of a key's baseline, for tests and the benchmark */
  baseline(key: string): { mean: number; sigma: number; seeded: boolean } | undefined {
    const b = this.#keys.get(key);
    return b === undefined
      ? undefined
      : { mean: b.mean, sigma: Math.sqrt(Math.max(b.variance, b.mean)), seeded: b.seeded };
  }

  #create(key: string, gen: number, now: number): Baseline {
    if (this.#keys.size >= this.#maxKeys) {
      const stalest = this.#keys.keys().next().value;
      if (stalest !== undefined) this.#keys.delete(stalest);
    }
    const warming = gen < this.#warmUntilGen;
    const b: Baseline = {
      mean: warming ? 0 : this.#prior,
      variance: warming ? 0 : this.#prior,
      gen,
      acc: 0,
      seeded: !warming,
      seen: warming ? 0 : SEED_WINDOWS,
      // the prior is a bound the report guarantee gives, not one window's count: folds weigh α from the start
      samples: warming ? 0 : Infinity,
      partial: warming && now - gen * this.#windowMs > 0,
      level: Infinity,
    };
    if (b.seeded) b.level = this.#levelOf(b);
    this.#keys.set(key, b);
    return b;
  }

  #roll(b: Baseline, gen: number, hot: boolean): void {
    const missed = gen - b.gen - 1;
    if (!hot) {
      if (!b.seeded) {
        if (!b.partial) {
          b.mean = b.acc;
          b.variance = b.acc;
          b.seeded = true;
          b.seen = 1;
          b.samples = 1;
        }
        b.partial = false;
      } else {
        this.#fold(b, b.acc);
        b.seen++;
      }
      if (b.seeded) for (let i = 0; i < Math.min(missed, MAX_FOLD); i++) this.#fold(b, 0);
      if (b.seeded && b.seen >= SEED_WINDOWS) b.level = this.#levelOf(b);
    }
    b.acc = 0;
    b.gen = gen;
  }

  #fold(b: Baseline, x: number): void {
    b.samples++;
    const alpha = Math.max(this.#alpha, 1 / b.samples);
    const diff = x - b.mean;
    const incr = alpha * diff;
    b.mean += incr;
    b.variance = (1 - alpha) * (b.variance + diff * incr);
  }

  #levelOf(b: Baseline): number {
    let level = b.mean * this.#factor;
    if (this.#sigma > 0) level = Math.min(level, b.mean + this.#sigma * Math.sqrt(Math.max(b.variance, b.mean)));
    return Math.max(this.#floor, level);
  }
}
