/**
 * Per-instance access counting over a sliding window, bounded under any key cardinality: the
 * counting path and the slice ring, over the parts it composes.
 *
 * Design: an admission filter (admission.ts: a count-min sketch, TinyLFU admission, sampled
 * eviction) stands in front of a bounded set of exact candidates. A candidate owns a slot in
 * typed-array columns (counter-table.ts): one counter per slice (`slot * slices + slice`), a running
 * window total and a `pending` count since its last report. The columns grow by doubling up to
 * maxCandidates as keys are admitted and are compacted once a window finds them sparse, so memory
 * follows the keys being counted, not the bound. Slices advance from the caller's clock
 * (`advance(now)`), never per access: rotation zeroes the expiring slice of each occupied slot
 * and subtracts it from its total. The occupied slots are kept in a dense list (swap-remove on
 * release), so `advance` and `collect` cost O(slots in use), not O(maxCandidates): hundreds of
 * idle clients in one process stay cheap.
 *
 * Surges (urgency.ts): once thresholds are set (`setThresholds`), the increment path compares a
 * slot's total against the total at which it next becomes urgent (one integer compare); reaching
 * it calls `onUrgent`, so the owner can report it at once (`collectUrgent`).
 *
 * Sampling and kinds (sampler.ts, rule-policy.ts): at a client `sampleRate` < 1 only a share of
 * the accesses is counted (a geometric countdown, one decrement per sampled-out access), a rule
 * with a lower rate thins its keys' counted accesses further, and a rule's `kind` says whether
 * reads, writes or both count. Reported counts are scaled back to accesses. While nothing
 * samples, thins or filters, the hit path pays one boolean test for all of it.
 * References: Cormode & Muthukrishnan, "An improved data stream summary: the count-min sketch"
 * (2005); Einziger et al., "TinyLFU: A highly efficient cache admission policy" (2017).
 */
import { DEFAULT_CLIENT_OPTIONS } from '../options.ts';
import { Admission } from './admission.ts';
import { collectDue, type Collected } from './collect.ts';
import { CountMinSketch } from './count-min-sketch.ts';
import { READ, RulePolicy, WRITE } from './rule-policy.ts';
import { Sampler } from './sampler.ts';
import { CounterTable } from './counter-table.ts';
import { Urgency } from './urgency.ts';
import { RuleSet, WINDOW_SLICES } from '../rules.ts';

export type { Collected } from './collect.ts';

export interface AccessWindowOptions {
  /** exact counters kept at most @default 8192 (DEFAULT_CLIENT_OPTIONS.maxCandidates) */
  maxCandidates?: number;
  /** sketch counters per row, rounded up to a power of two @default 16384 */
  sketchWidth?: number;
  /** sketch rows @default 4 */
  sketchDepth?: number;
  /** sketch estimate at which a key gets an exact counter @default 2 */
  admission?: number;
  /** length of one slice @default 100 (DEFAULT_CLIENT_OPTIONS.windowSliceMs) */
  sliceMs?: number;
  /** slices per window @default 10 (WINDOW_SLICES) */
  slices?: number;
  /** slots sampled to pick an eviction victim @default 5 */
  evictionSamples?: number;
  /** rules that give each candidate its rule index @default new RuleSet([]) (the default rule) */
  rules?: RuleSet;
  /** clock reading at construction (ms) @default 0 */
  now?: number;
  /** slices a key stays urgent after first reaching its threshold @default 3 */
  urgentSlices?: number;
  /** called (synchronously, from `track`) when a slot becomes urgent @default none */
  onUrgent?: () => void;
  /** share of accesses counted, in (0, 1]; counts are reported scaled by 1 / sampleRate @default 1 (DEFAULT_CLIENT_OPTIONS.sampleRate) */
  sampleRate?: number;
}

export interface WindowStats {
  candidates: number;
  /** counter slots allocated now (≥ candidates, ≤ maxCandidates) */
  slots: number;
  admitted: number;
  /** candidates that lost their slot to a newcomer */
  evicted: number;
  /** newcomers refused because every sampled slot counted more */
  rejected: number;
}

export class AccessWindow {
  readonly maxCandidates: number;
  readonly sliceMs: number;
  readonly slices: number;

  /** the exact counters: growable columns, one slot per candidate (counter-table.ts) */
  readonly #t: CounterTable;
  /** the table's key → slot map (one object for the table's life), held here to spare the lookup path a load */
  readonly #slotOf: Map<string, number>;
  /** the table's keys by slot (one array, resized in place) */
  readonly #keys: (string | undefined)[];
  /** the table's columns the counting path touches, held here for the same reason (#bindColumns after a resize) */
  #sliceCounts: Uint32Array;
  #pending: Uint32Array;
  #totals: Uint32Array;
  #crossAt: Uint32Array;
  readonly #admission: Admission;
  readonly #urgency: Urgency;
  readonly #sampler: Sampler;
  #thresholds: ArrayLike<number> = [];

  #rules: RuleSet;
  #policy: RulePolicy;
  /** the client rate is below 1: count only when the countdown reaches zero */
  readonly #sampling: boolean;
  /** some rule samples below the client rate (RulePolicy.thinning), copied for the counting path */
  #thinning = false;
  /** some rule counts writes (RulePolicy.writesCounted), copied for trackWrite */
  #writesCounted = false;
  /** neither sampling nor thinning nor filtering kinds: the counting path is the unsampled one */
  #plain = true;
  /** ring index of the slice being counted into */
  #currentSlice = 0;
  /** absolute number (clock / sliceMs) of the current slice */
  #lastSlice: number;

  constructor(options: AccessWindowOptions = {}) {
    this.maxCandidates = positiveInt(options.maxCandidates ?? DEFAULT_CLIENT_OPTIONS.maxCandidates, 'maxCandidates');
    this.sliceMs = positiveInt(options.sliceMs ?? DEFAULT_CLIENT_OPTIONS.windowSliceMs, 'sliceMs');
    this.slices = positiveInt(options.slices ?? WINDOW_SLICES, 'slices');
    // Sampled windows keep the same admission (two counted accesses): admitting on one would make
    // every single sample of a rare key a report of 1 / sampleRate accesses, which baseline mode
    // reads as a surge of a key that was never hot
    const level = positiveInt(options.admission ?? 2, 'admission');
    const samples = positiveInt(options.evictionSamples ?? 5, 'evictionSamples');
    const sketch = new CountMinSketch({
      depth: positiveInt(options.sketchDepth ?? 4, 'sketchDepth'),
      width: positiveInt(options.sketchWidth ?? 16384, 'sketchWidth'),
    });
    this.#t = new CounterTable(this.maxCandidates, this.slices);
    this.#slotOf = this.#t.slotOf;
    this.#keys = this.#t.keys;
    this.#sliceCounts = this.#t.sliceCounts;
    this.#pending = this.#t.pending;
    this.#totals = this.#t.totals;
    this.#crossAt = this.#t.crossAt;
    this.#urgency = new Urgency(this.#t, positiveInt(options.urgentSlices ?? 3, 'urgentSlices'), options.onUrgent);
    const rate = options.sampleRate ?? DEFAULT_CLIENT_OPTIONS.sampleRate;
    if (!(rate > 0 && rate <= 1)) throw new TypeError(`sampleRate must be in (0, 1], got ${String(rate)}`);
    this.#sampling = rate < 1;
    this.#rules = options.rules ?? new RuleSet([]);
    this.#policy = this.#usePolicy(this.#rules, rate);
    this.#sampler = new Sampler(rate);
    this.#admission = new Admission(sketch, this.#t, level, samples, this.#sampler);
    this.#lastSlice = Math.floor((options.now ?? 0) / this.sliceMs);
  }

  /**
   * Counts one access. Allocation-free for a key that already has a counter. Returns the key's
   * counter slot, or -1 when it has none (it was only counted in the sketch): a caller that
   * keeps the slot can count the key's next access with `trackAt`, without a lookup.
   */
  track(key: string): number {
    if (!this.#plain) return this.#trackSampled(key);
    const slot = this.#slotOf.get(key);
    if (slot !== undefined) {
      this.#count(slot);
      return slot;
    }
    return this.#trackCold(key);
  }

  /** track() when sampling, thinning or filtering kinds: kept apart so that the plain path stays as small as it was. */
  #trackSampled(key: string, kind = READ): number {
    if (this.#sampling && this.#sampler.sampledOut()) return -1;
    const slot = this.#slotOf.get(key);
    if (slot !== undefined) {
      if ((this.#t.kinds[slot]! & kind) !== 0) this.#countThinned(slot);
      return slot;
    }
    return this.#trackCold(key, kind);
  }

  /**
   * Counts one write (through the ioredis wrapper, or `track(key, 'write')`) for keys whose rule
   * counts writes (kind 'write' or 'any'); returns at once while no rule does. Returns like `track`.
   */
  trackWrite(key: string): number {
    if (!this.#writesCounted) return -1;
    return this.#trackSampled(key, WRITE);
  }

  /**
   * Counts one access of `key` through the slot a previous `track(key)` returned, if the slot
   * still belongs to `key` (slots are recycled when a key's window empties or it is evicted).
   * Returns false, counting nothing, when it does not: the caller then calls `track(key)`.
   */
  trackAt(slot: number, key: string): boolean {
    // a slot number past the table (it shrank since) reads undefined: not the key's
    if (slot < 0 || this.#keys[slot] !== key) return false;
    if (this.#plain) this.#count(slot);
    else if ((this.#t.kinds[slot]! & READ) !== 0 && (!this.#sampling || !this.#sampler.sampledOut()))
      this.#countThinned(slot);
    return true;
  }

  /** A counted access of a sampled or thinned window: a rule with a lower rate drops some. */
  #countThinned(slot: number): void {
    if (this.#thinning && this.#t.keep[slot]! < 1 && this.#sampler.random() >= this.#t.keep[slot]!) return;
    this.#count(slot);
  }

  #count(slot: number): void {
    this.#sliceCounts[slot * this.slices + this.#currentSlice]!++;
    this.#pending[slot]!++;
    if (++this.#totals[slot]! === this.#crossAt[slot]) this.#urgency.cross(slot, this.#lastSlice);
  }

  /** Re-reads the columns the counting path uses: the table replaces them when it resizes. */
  #bindColumns(): void {
    const t = this.#t;
    this.#sliceCounts = t.sliceCounts;
    this.#pending = t.pending;
    this.#totals = t.totals;
    this.#crossAt = t.crossAt;
  }

  /** Derives what the rules count and copies the flags the counting path reads. */
  #usePolicy(rules: RuleSet, rate: number): RulePolicy {
    const policy = new RulePolicy(rules, rate);
    this.#thinning = policy.thinning;
    this.#writesCounted = policy.writesCounted;
    this.#plain = !this.#sampling && !policy.thinning && !policy.filtering;
    return policy;
  }

  /** A key without a counter: the sketch counts it, and it gets a slot if admission lets it in. */
  #trackCold(key: string, kind = READ): number {
    if (!this.#admission.admit(key)) return -1;
    const t = this.#t;
    const capacity = t.capacity;
    const slot = t.acquire(key);
    if (t.capacity !== capacity) this.#bindColumns();
    const policy = this.#policy;
    const rule = this.#rules.match(key);
    t.ruleOf[slot] = rule;
    t.keep[slot] = policy.keepOf(rule);
    const kinds = policy.kindsOf(rule);
    t.kinds[slot] = kinds;
    // an access of a kind the rule does not count still gets the slot (the next one is filtered
    // cheaply), at zero: the slot goes at the next slice if nothing it counts arrives
    const counted = (kinds & kind) !== 0 ? 1 : 0;
    t.sliceCounts[slot * this.slices + this.#currentSlice] = counted;
    t.totals[slot] = counted;
    t.pending[slot] = counted;
    this.#urgency.arm(slot, policy.thresholdOf(rule, this.#thresholds), counted, this.#lastSlice);
    return slot;
  }

  /**
   * Moves the window to `now`: every slice that ended is zeroed and leaves the totals, and
   * candidates whose window emptied give their slot back. The admission sketch ages once per
   * window, and a table a flood left sparse then gives its memory back.
   */
  advance(now: number): void {
    const target = Math.floor(now / this.sliceMs);
    const steps = target - this.#lastSlice;
    if (steps <= 0) return;
    this.#lastSlice = target;
    const rotations = Math.min(steps, this.slices);
    const slices = this.slices;
    const t = this.#t;
    const urgency = this.#urgency;
    const first = this.#currentSlice;
    this.#currentSlice = (first + rotations) % slices;
    // backwards, so that a swap-remove only moves an already visited slot into place
    for (let u = t.usedCount - 1; u >= 0; u--) {
      const slot = t.used[u]!;
      const base = slot * slices;
      let expired = 0;
      for (let r = 1; r <= rotations; r++) {
        const i = base + ((first + r) % slices);
        expired += t.sliceCounts[i]!;
        t.sliceCounts[i] = 0;
      }
      urgency.expire(slot, target, slices, expired);
      if (expired === 0) {
        if (t.totals[slot] === 0) t.release(slot); // admitted by an access its rule does not count
        continue;
      }
      const total = t.totals[slot]! - expired;
      t.totals[slot] = total;
      if (total === 0) t.release(slot);
    }
    if (this.#admission.age(steps) && t.shrinkIfSparse()) this.#bindColumns();
  }

  /**
   * Keys whose window total reached the local threshold of their rule and that were accessed
   * since the previous collect, with count = accesses since then (capped by the window total).
   * Resets every candidate's pending count, reported or not. With nothing due it returns a
   * shared, frozen empty result.
   * @param thresholds per-rule local thresholds, indexed like the RuleSet's rules @default the
   *   ones given to `setThresholds`
   */
  collect(thresholds: ArrayLike<number> = this.#thresholds): Collected {
    this.#urgency.clear();
    return collectDue(this.#t, this.#policy, thresholds);
  }

  /**
   * Only the urgent keys (see urgency.ts) that are at their threshold and were accessed since
   * they were last collected; their pending counts are reset, other keys' left for the next
   * `collect`. Costs O(urgent keys).
   */
  collectUrgent(): Collected {
    return this.#urgency.collect(this.#policy);
  }

  /** Whether some slot became urgent since the last collect. */
  get urgent(): boolean {
    return this.#urgency.pending;
  }

  /** Ends the key's urgent episode (it is hot already: its reports need not hurry). */
  calm(key: string): void {
    const slot = this.#slotOf.get(key);
    if (slot !== undefined) this.#urgency.calm(slot, this.#lastSlice);
  }

  /**
   * Sets the per-rule local thresholds (indexed like the RuleSet's rules) that urgency is judged
   * by and that `collect()` uses by default. A key already at its new threshold counts as having
   * just crossed it.
   *
   * A per-instance threshold of 1 means the hub wants every access of the rule's keys (thousands
   * of instances share its threshold): the admission filter must not hide them. A key spread at
   * 1.2 × threshold over 5,000 instances is 0.24 accesses/s on each, and never reaches an estimate
   * of 2 in a sketch halved every window. So while some rule is at 1, its keys are admitted on
   * their first access above the sketch's noise floor.
   */
  setThresholds(thresholds: ArrayLike<number>): void {
    const all = Array.from(thresholds);
    this.#thresholds = all;
    this.#admission.firstAccess = all.some((t) => t === 1)
      ? (key) => {
          const rule = this.#rules.match(key);
          return rule >= 0 && this.#thresholds[rule] === 1;
        }
      : undefined;
    this.#rearmAll();
  }

  /** Replaces the rules and recomputes every candidate's rule index. */
  setRules(rules: RuleSet): void {
    this.#rules = rules;
    const policy = this.#usePolicy(rules, this.#policy.sampleRate);
    this.#policy = policy;
    const t = this.#t;
    for (let u = 0; u < t.usedCount; u++) {
      const slot = t.used[u]!;
      const rule = rules.match(t.keys[slot]!);
      t.ruleOf[slot] = rule;
      t.keep[slot] = policy.keepOf(rule);
      t.kinds[slot] = policy.kindsOf(rule);
    }
    this.#rearmAll();
  }

  #rearmAll(): void {
    const t = this.#t;
    for (let u = 0; u < t.usedCount; u++) {
      const slot = t.used[u]!;
      this.#urgency.rearm(slot, this.#policy.thresholdOf(t.ruleOf[slot]!, this.#thresholds), this.#lastSlice);
    }
  }

  get rules(): RuleSet {
    return this.#rules;
  }

  /** Window total of a candidate, scaled by 1 / sampleRate (0 for a key without a counter). */
  count(key: string): number {
    const slot = this.#slotOf.get(key);
    return slot === undefined ? 0 : this.#policy.scaled(this.#t.totals[slot]!, this.#t.ruleOf[slot]!);
  }

  /**
   * Accesses counted at `slot` (one `track` returned) in the current slice, as counted (sampled:
   * see `rateOfRule`): what a local surge is judged by (client/read/surge-local.ts).
   */
  sliceCountAt(slot: number): number {
    return this.#sliceCounts[slot * this.slices + this.#currentSlice]!;
  }

  /** The share of accesses counted for a rule index's keys (-1: keys matching no rule). */
  rateOfRule(rule: number): number {
    return this.#policy.rateOf(rule);
  }

  /** The rule index of the key counted at `slot` (-1: no rule matches it). */
  ruleAt(slot: number): number {
    return this.#t.ruleOf[slot]!;
  }

  /** Sketch estimate of a key's recent accesses (an upper bound, for keys without a counter). */
  estimate(key: string): number {
    return this.#admission.estimate(key);
  }

  stats(): WindowStats {
    const a = this.#admission;
    return {
      candidates: this.#slotOf.size,
      slots: this.#t.capacity,
      admitted: a.admitted,
      evicted: a.evicted,
      rejected: a.rejected,
    };
  }
}

function positiveInt(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
  return value;
}
