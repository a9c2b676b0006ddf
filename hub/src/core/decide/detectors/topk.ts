/**
 * Top-K detection for one rule (`mode: 'topk'`): the k keys with the highest recent cluster-wide
 * rate are hot, with a floor and hysteresis.
 *
 * Design: a Space-Saving summary (Metwally, Agrawal & El Abbadi, "Efficient computation of
 * frequent and top-k elements in data streams", ICDT 2005) of `capacity` = 4k counters (at least
 * 64) over the reported counts. Counts are weighted, so the summary is a min-heap keyed by count
 * with a Map from key to heap position (the weighted variant; Berinde et al., "Space-optimal heavy
 * hitters with strong error bounds", TODS 2010): a monitored key's count rises and sifts down; an
 * unmonitored key replaces the minimum and inherits its count as its error. Every true count lies
 * in [count − error, count], and any key with rate above 1/capacity of the total is monitored.
 *
 * Recency comes from forward decay (Cormode, Shkapenyuk, Srivastava & Xu, "Forward decay: a
 * practical time decay model for streaming systems", ICDE 2009): an access at t weighs
 * exp((t − L) / τ) against a landmark L, τ = the rule's windowMs, so a count read at `now` is
 * the exponentially decayed total (≈ rate × τ for a steady key). Scaling every weight by one
 * factor keeps the heap order, so when weights grow large the landmark moves and every counter is
 * rescaled in one O(capacity) pass — Space-Saving's guarantees hold under forward decay (ibid.).
 *
 * Decisions: `refresh(now)` (every hub tick) sorts the counts and caches the k-th and ⌈1.5k⌉-th
 * largest; a reported key whose count reaches the k-th (and whose window reaches the floor) is
 * promoted at once, a hot key leaves once it falls below the ⌈1.5k⌉-th or out of the summary (the
 * caller adds the floor and the demoteWindows delay). Memory: capacity keys, whatever the
 * cardinality.
 */
import type { Rule } from '@hotkey/sdk/rules';

/** rescale once weights pass e^30 (well inside float64, far from overflow) */
const RESCALE_EXPONENT = 30;

export class SpaceSaving {
  readonly capacity: number;
  readonly #tauMs: number;
  #landmark: number;
  readonly #keys: string[] = [];
  readonly #counts: Float64Array;
  readonly #errors: Float64Array;
  readonly #pos = new Map<string, number>();

  constructor(capacity: number, tauMs: number, now: number) {
    this.capacity = Math.max(1, capacity);
    this.#tauMs = tauMs;
    this.#landmark = now;
    this.#counts = new Float64Array(this.capacity);
    this.#errors = new Float64Array(this.capacity);
  }

  get size(): number {
    return this.#keys.length;
  }

  /** Adds `weight` accesses of `key` at `now`; returns its decayed count in landmark units. */
  add(key: string, weight: number, now: number): number {
    if ((now - this.#landmark) / this.#tauMs > RESCALE_EXPONENT) this.#rescale(now);
    const w = weight * Math.exp((now - this.#landmark) / this.#tauMs);
    let i = this.#pos.get(key);
    if (i === undefined) {
      if (this.#keys.length < this.capacity) {
        i = this.#keys.length;
        this.#keys.push(key);
        this.#counts[i] = w;
        this.#errors[i] = 0;
        this.#pos.set(key, i);
        this.#siftUp(i);
        return this.#counts[this.#pos.get(key)!]!;
      }
      // replace the minimum: the newcomer inherits its count as error
      const min = this.#counts[0]!;
      this.#pos.delete(this.#keys[0]!);
      this.#keys[0] = key;
      this.#pos.set(key, 0);
      this.#errors[0] = min;
      this.#counts[0] = min + w;
      i = 0;
    } else {
      this.#counts[i] = this.#counts[i]! + w;
    }
    this.#siftDown(i);
    return this.#counts[this.#pos.get(key)!]!;
  }

  /** A key's decayed count in landmark units (undefined: not monitored). */
  raw(key: string): number | undefined {
    const i = this.#pos.get(key);
    return i === undefined ? undefined : this.#counts[i];
  }

  /** A key's decayed count at `now` (≈ accesses in the last τ for a steady rate), and its error bound. */
  estimate(key: string, now: number): { count: number; error: number } | undefined {
    const i = this.#pos.get(key);
    if (i === undefined) return undefined;
    const scale = Math.exp(-(now - this.#landmark) / this.#tauMs);
    return { count: this.#counts[i]! * scale, error: this.#errors[i]! * scale };
  }

  /** Counts in landmark units, largest first (a copy). */
  sortedCounts(): Float64Array {
    return this.#counts.slice(0, this.#keys.length).sort().reverse();
  }

  /** Monitored keys, largest count first. */
  top(n: number, now: number): { key: string; count: number }[] {
    const scale = Math.exp(-(now - this.#landmark) / this.#tauMs);
    return this.#keys
      .map((key, i) => ({ key, count: this.#counts[i]! * scale }))
      .sort((a, b) => b.count - a.count)
      .slice(0, n);
  }

  /** Multiplies every count by the decay since the landmark and moves the landmark to `now`. */
  #rescale(now: number): number {
    const scale = Math.exp(-(now - this.#landmark) / this.#tauMs);
    for (let i = 0; i < this.#keys.length; i++) {
      this.#counts[i] = this.#counts[i]! * scale;
      this.#errors[i] = this.#errors[i]! * scale;
    }
    this.#landmark = now;
    return scale;
  }

  /** Moves the landmark to `now` if it is far behind; returns the factor raw counts were scaled by. */
  maybeRescale(now: number): number {
    return (now - this.#landmark) / this.#tauMs > RESCALE_EXPONENT ? this.#rescale(now) : 1;
  }

  #swap(a: number, b: number): void {
    const ka = this.#keys[a]!;
    const kb = this.#keys[b]!;
    this.#keys[a] = kb;
    this.#keys[b] = ka;
    this.#pos.set(kb, a);
    this.#pos.set(ka, b);
    const c = this.#counts[a]!;
    this.#counts[a] = this.#counts[b]!;
    this.#counts[b] = c;
    const e = this.#errors[a]!;
    this.#errors[a] = this.#errors[b]!;
    this.#errors[b] = e;
  }

  #siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#counts[parent]! <= this.#counts[i]!) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #siftDown(i: number): void {
    const n = this.#keys.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return;
      const r = l + 1;
      const child = r < n && this.#counts[r]! < this.#counts[l]! ? r : l;
      if (this.#counts[i]! <= this.#counts[child]!) return;
      this.#swap(i, child);
      i = child;
    }
  }
}

/** The Space-Saving summary of one topk rule and its entry / exit cuts. */
export class TopKDetector {
  readonly k: number;
  /** hot keys leave once below this rank */
  readonly exitRank: number;
  readonly summary: SpaceSaving;
  /** k-th largest count at the last refresh, in landmark units (0: fewer than k keys) */
  #enter = 0;
  /** ⌈1.5k⌉-th largest count at the last refresh (0: fewer keys) */
  #exit = 0;
  /** counts changed since the cuts were computed */
  #dirty = false;
  /** hot keys of this rule, kept by the aggregator */
  hot = 0;

  constructor(rule: Rule, now: number) {
    this.k = rule.k ?? 1;
    this.exitRank = Math.ceil(1.5 * this.k);
    this.summary = new SpaceSaving(Math.max(64, 4 * this.k), rule.windowMs, now);
  }

  /** Adds reported counts of a key. */
  observe(key: string, count: number, now: number): void {
    const scale = this.summary.maybeRescale(now);
    if (scale !== 1) {
      this.#enter *= scale;
      this.#exit *= scale;
    }
    this.summary.add(key, count, now);
    this.#dirty = true;
  }

  /**
   * Whether a key that is not hot ranks within the top k now. Counts grow between ticks, so a
   * key over the last cut triggers a fresh cut (one sort, only when counts changed since); below it, one
   * compare.
   */
  entersTop(key: string, now: number): boolean {
    if (this.hot >= this.exitRank) return false;
    const c = this.summary.raw(key);
    if (c === undefined || c < this.#enter) return false;
    if (!this.#dirty) return true;
    this.refresh(now); // may move the landmark: read the count again
    return this.summary.raw(key)! >= this.#enter;
  }

  /** Recomputes the cuts; call every tick. */
  refresh(now: number): void {
    this.#dirty = false;
    this.summary.maybeRescale(now);
    const sorted = this.summary.sortedCounts();
    this.#enter = sorted[this.k - 1] ?? 0;
    this.#exit = sorted[this.exitRank - 1] ?? 0;
  }

  /** A hot key that should leave: out of the summary, or below the ⌈1.5k⌉-th count. */
  outranked(key: string): boolean {
    const c = this.summary.raw(key);
    return c === undefined || c < this.#exit;
  }
}
