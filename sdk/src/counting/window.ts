/**
 * Per-instance access counting over a sliding window, bounded under any key cardinality.
 *
 * Design: a count-min sketch (count-min-sketch.ts, halved once per window) is the admission filter in front of a
 * bounded set of exact candidates. A candidate owns a slot in typed-array columns (slot-table.ts):
 * one counter per slice (`slot * slices + slice`), a running window total and a `pending` count
 * since its last report. The columns grow by doubling up to maxCandidates as keys are admitted
 * and are compacted once a window finds them sparse, so memory follows the keys being counted,
 * not the bound. Slices advance from the caller's clock (`advance(now)`), never per access:
 * rotation zeroes the expiring slice of each occupied slot and subtracts it from its total. The
 * occupied slots are kept in a dense list (swap-remove on release), so `advance` and `collect`
 * cost O(slots in use), not O(maxCandidates): hundreds of idle clients in one process stay cheap.
 * The admission level rises with the sketch's noise floor (its mean counter), so a flood of
 * one-off keys mostly stays in the sketch. When the slots are full, a newcomer whose sketch
 * estimate beats the smallest total among a few sampled slots replaces it (TinyLFU admission with Redis-style sampled LFU eviction), so a hot
 * key survives a flood of one-off keys while memory stays fixed.
 *
 * Surges: once thresholds are set (`setThresholds`), each slot carries the total at which it next
 * becomes urgent (`crossAt`). The increment path compares against it (one integer compare);
 * reaching it puts the slot on an urgent list and calls `onUrgent`, so the owner can report it
 * at once (`collectUrgent`) instead of up to a flush interval later. After its first crossing a
 * key stays urgent for `urgentSlices` slices, re-arming every further threshold's worth of
 * accesses (the hub's cluster sum then trails the surge closely); after that it is quiet until
 * it has spent a window below its threshold, so steady and oscillating keys are not urgent.
 *
 * Sampling (`sampleRate` < 1, per client, or a rule's `sampleRate`): only a share p of the
 * accesses is counted and every reported count is scaled by 1/p (thresholds by p), so the hub
 * sees unbiased estimates. The client rate is a countdown to the next
 * counted access, drawn from the geometric distribution (the skip trick of Vitter's reservoir
 * "Algorithm Z", TOMS 1985): a sampled-out access costs one decrement, no random draw. A rule
 * with a lower rate thins its keys' counted accesses further (effective rate min(client, rule)).
 * At rate 1 the hit path pays one boolean test.
 *
 * Kinds (a rule's `kind`): `track` counts a read, `trackWrite` a write; a key counts only the
 * accesses its rule selects (a slot remembers its rule's mask). While every rule is 'read' (the
 * default) writes return at once and reads take the unfiltered path; otherwise reads go through
 * the same non-plain path as sampling, so the hit path still pays one boolean test.
 * One algorithm, hence one file past the usual length.
 * References: Cormode & Muthukrishnan, "An improved data stream summary: the count-min sketch"
 * (2005); Einziger et al., "TinyLFU: A highly efficient cache admission policy" (2017).
 */
import { DEFAULT_CLIENT_OPTIONS } from '../options.ts';
import { CountMinSketch } from './count-min-sketch.ts';
import { SlotTable } from './slot-table.ts';
import { RuleSet, WINDOW_SLICES, type RuleKind } from '../rules.ts';

/** access kinds as bits: a rule's mask says which it counts */
const READ = 1;
const WRITE = 2;
const KIND_MASK: Record<RuleKind, number> = { read: READ, write: WRITE, any: READ | WRITE };

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

export interface Collected {
  keys: string[];
  counts: number[];
  /** rule index of each key, aligned with `keys` */
  rules: number[];
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

const MAX_U32 = 0xffffffff;
/** what `collect` returns when nothing is due (shared, hence frozen) */
const EMPTY: Collected = Object.freeze({
  keys: Object.freeze([]) as unknown as string[],
  counts: Object.freeze([]) as unknown as number[],
  rules: Object.freeze([]) as unknown as number[],
});

export class AccessWindow {
  readonly maxCandidates: number;
  readonly sliceMs: number;
  readonly slices: number;
  readonly #admission: number;
  readonly #samples: number;
  readonly #sketch: CountMinSketch;

  /** the exact counters: growable columns, one slot per candidate (slot-table.ts) */
  readonly #t: SlotTable;
  /** the table's key → slot map (one object for the table's life), held here to spare the lookup path a load */
  readonly #slotOf: Map<string, number>;
  /** the table's keys by slot (one array, resized in place) */
  readonly #keys: (string | undefined)[];
  /** the table's columns the counting path touches, held here for the same reason (#bindColumns after a resize) */
  #sliceCounts: Uint32Array;
  #pending: Uint32Array;
  #totals: Uint32Array;
  #crossAt: Uint32Array;
  readonly #urgentSlices: number;
  readonly #onUrgent: (() => void) | undefined;
  #thresholds: ArrayLike<number> = [];
  /** some rule's per-instance threshold is 1: its keys are admitted on their first access (#admitOnFirst) */
  #anyThresholdOne = false;

  #rules: RuleSet;
  readonly #sampleRate: number;
  /** the client rate is below 1: count only when the countdown reaches zero */
  readonly #sampling: boolean;
  #skip = 1;
  /** some rule samples below the client rate: thin those slots' counted accesses */
  #thinning = false;
  /** neither sampling nor thinning: the counting path is the unsampled one */
  #plain = true;
  /** per rule: effective sample rate; [rules.length] is for keys matching no rule */
  #ruleRate = new Float64Array(1).fill(1);
  /** per rule: the access kinds it counts (READ | WRITE); [rules.length] is for keys matching no rule */
  #ruleKinds = new Uint8Array(1).fill(READ);
  /** some rule does not count reads: reads check the slot's kinds */
  #filtering = false;
  /** some rule counts writes: trackWrite counts at all */
  #writesCounted = false;
  /** ring index of the slice being counted into */
  #currentSlice = 0;
  /** absolute number (clock / sliceMs) of the current slice */
  #lastSlice: number;
  #slicesSinceDecay = 0;
  #rand = 0x9e3779b9;
  #admitted = 0;
  #evicted = 0;
  #rejected = 0;

  constructor(options: AccessWindowOptions = {}) {
    this.maxCandidates = positiveInt(options.maxCandidates ?? DEFAULT_CLIENT_OPTIONS.maxCandidates, 'maxCandidates');
    this.sliceMs = positiveInt(options.sliceMs ?? DEFAULT_CLIENT_OPTIONS.windowSliceMs, 'sliceMs');
    this.slices = positiveInt(options.slices ?? WINDOW_SLICES, 'slices');
    // Sampled windows keep the same admission (two counted accesses): admitting on one would make
    // every single sample of a rare key a report of 1 / sampleRate accesses, which baseline mode
    // reads as a surge of a key that was never hot
    this.#admission = positiveInt(options.admission ?? 2, 'admission');
    this.#samples = positiveInt(options.evictionSamples ?? 5, 'evictionSamples');
    this.#sketch = new CountMinSketch({
      depth: positiveInt(options.sketchDepth ?? 4, 'sketchDepth'),
      width: positiveInt(options.sketchWidth ?? 16384, 'sketchWidth'),
    });
    this.#t = new SlotTable(this.maxCandidates, this.slices);
    this.#slotOf = this.#t.slotOf;
    this.#keys = this.#t.keys;
    this.#sliceCounts = this.#t.sliceCounts;
    this.#pending = this.#t.pending;
    this.#totals = this.#t.totals;
    this.#crossAt = this.#t.crossAt;
    this.#urgentSlices = positiveInt(options.urgentSlices ?? 3, 'urgentSlices');
    this.#onUrgent = options.onUrgent;
    const rate = options.sampleRate ?? DEFAULT_CLIENT_OPTIONS.sampleRate;
    if (!(rate > 0 && rate <= 1)) throw new TypeError(`sampleRate must be in (0, 1], got ${String(rate)}`);
    this.#sampleRate = rate;
    this.#sampling = rate < 1;
    this.#rules = options.rules ?? new RuleSet([]);
    this.#computeRates();
    if (this.#sampling) this.#skip = this.#nextSkip();
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
    if (this.#sampling && this.#sampledOut()) return -1;
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
    else if ((this.#t.kinds[slot]! & READ) !== 0 && (!this.#sampling || !this.#sampledOut())) this.#countThinned(slot);
    return true;
  }

  /** A counted access of a sampled or thinned window: a rule with a lower rate drops some. */
  #countThinned(slot: number): void {
    if (this.#thinning && this.#t.keep[slot]! < 1 && this.#random() >= this.#t.keep[slot]!) return;
    this.#count(slot);
  }

  #count(slot: number): void {
    this.#sliceCounts[slot * this.slices + this.#currentSlice]!++;
    this.#pending[slot]!++;
    if (++this.#totals[slot]! === this.#crossAt[slot]) this.#cross(slot);
  }

  /** Re-reads the columns the counting path uses: the table replaces them when it resizes. */
  #bindColumns(): void {
    const t = this.#t;
    this.#sliceCounts = t.sliceCounts;
    this.#pending = t.pending;
    this.#totals = t.totals;
    this.#crossAt = t.crossAt;
  }

  /** Counts down to the next counted access; false (and a fresh countdown) when this one counts. */
  #sampledOut(): boolean {
    if (--this.#skip > 0) return true;
    this.#skip = this.#nextSkip();
    return false;
  }

  /** Accesses until the next counted one: geometric with parameter p (1 + ⌊ln U / ln(1 − p)⌋). */
  #nextSkip(): number {
    return 1 + Math.floor(Math.log(this.#random()) / Math.log1p(-this.#sampleRate));
  }

  /** xorshift32 in (0, 1] */
  #random(): number {
    let x = this.#rand;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#rand = x >>> 0;
    return (this.#rand + 1) / 4294967296;
  }

  #computeRates(): void {
    const rules = this.#rules.rules;
    this.#ruleRate = new Float64Array(rules.length + 1);
    this.#thinning = false;
    rules.forEach((rule, i) => {
      const rate = Math.min(this.#sampleRate, rule.sampleRate ?? 1);
      this.#ruleRate[i] = rate;
      if (rate < this.#sampleRate) this.#thinning = true;
    });
    this.#ruleRate[rules.length] = this.#sampleRate;
    this.#ruleKinds = new Uint8Array(rules.length + 1).fill(READ);
    this.#filtering = false;
    this.#writesCounted = false;
    rules.forEach((rule, i) => {
      const kinds = KIND_MASK[rule.kind ?? 'read'];
      this.#ruleKinds[i] = kinds;
      if ((kinds & READ) === 0) this.#filtering = true;
      if ((kinds & WRITE) !== 0) this.#writesCounted = true;
    });
    this.#plain = !this.#sampling && !this.#thinning && !this.#filtering;
  }

  /** access kinds a rule index counts (-1: no rule) */
  #kindsOf(rule: number): number {
    return rule < 0 ? READ : this.#ruleKinds[rule]!;
  }

  /** effective sample rate of a rule index (-1: no rule) */
  #rateOf(rule: number): number {
    return rule < 0 ? this.#sampleRate : this.#ruleRate[rule]!;
  }

  /** a sampled count scaled back to accesses */
  #scaled(count: number, rule: number): number {
    const rate = this.#rateOf(rule);
    return rate === 1 ? count : Math.min(MAX_U32, Math.round(count / rate));
  }

  #trackCold(key: string, kind = READ): number {
    const estimate = this.#sketch.increment(key);
    // Under a flood of distinct keys every counter fills with noise; only an estimate that
    // stands out from that noise earns an exact counter.
    if (estimate < this.#admission + this.#sketch.noiseFloor && !this.#admitOnFirst(key, estimate)) return -1;
    const t = this.#t;
    if (!t.hasRoom) {
      // full at maxCandidates: the newcomer must beat a sampled slot
      const victim = this.#victim();
      const victimRule = t.ruleOf[victim]!;
      if (victimRule >= 0 && t.totals[victim]! >= estimate) {
        this.#rejected++;
        return -1;
      }
      t.release(victim);
      this.#evicted++;
    }
    const capacity = t.capacity;
    const slot = t.acquire(key);
    if (t.capacity !== capacity) this.#bindColumns();
    this.#admitted++;
    const rule = this.#rules.match(key);
    this.#t.ruleOf[slot] = rule;
    this.#t.keep[slot] = this.#rateOf(rule) / this.#sampleRate;
    const kinds = this.#kindsOf(rule);
    this.#t.kinds[slot] = kinds;
    // an access of a kind the rule does not count still gets the slot (the next one is filtered
    // cheaply), at zero: the slot goes at the next slice if nothing it counts arrives
    const counted = (kinds & kind) !== 0 ? 1 : 0;
    this.#t.sliceCounts[slot * this.slices + this.#currentSlice] = counted;
    this.#t.totals[slot] = counted;
    this.#t.pending[slot] = counted;
    const thr = this.#thresholdOf(rule);
    this.#t.threshold[slot] = thr;
    this.#t.crossAt[slot] = thr;
    this.#t.urgentEnd[slot] = -Infinity;
    if (thr === 1 && counted === 1) this.#cross(slot);
    return slot;
  }

  /**
   * A per-instance threshold of 1 means the hub wants every access of the rule's keys (thousands
   * of instances share its threshold): the admission filter must not hide them. A key spread at
   * 1.2 × threshold over 5,000 instances is 0.24 accesses/s on each, and never reaches an estimate
   * of 2 in a sketch halved every window. Only while some rule is at 1, only above the noise floor.
   */
  #admitOnFirst(key: string, estimate: number): boolean {
    if (!this.#anyThresholdOne || estimate < 1 + this.#sketch.noiseFloor) return false;
    const rule = this.#rules.match(key);
    return rule >= 0 && this.#thresholds[rule] === 1;
  }

  #thresholdOf(rule: number): number {
    if (rule < 0) return 0;
    const t = this.#thresholds[rule];
    if (t === undefined || !(t >= 1)) return 0;
    // in counted (sampled) accesses
    return Math.max(1, Math.min(Math.ceil(t * this.#rateOf(rule)), MAX_U32));
  }

  /** The slot reached its `crossAt`: urgent now, and re-armed while its episode lasts. */
  #cross(slot: number): void {
    if (this.#t.urgentEnd[slot] === -Infinity) this.#t.urgentEnd[slot] = this.#lastSlice + this.#urgentSlices;
    if (this.#lastSlice >= this.#t.urgentEnd[slot]!) {
      this.#t.crossAt[slot] = 0;
      return;
    }
    this.#t.crossAt[slot] = Math.min(this.#t.totals[slot]! + this.#t.threshold[slot]!, MAX_U32);
    if (this.#t.urgentMark[slot] === 0) {
      this.#t.urgentMark[slot] = 1;
      this.#t.urgent[this.#t.urgentCount++] = slot;
    }
    this.#onUrgent?.();
  }

  /** The sampled slot with the smallest total; slots of keys matching no rule go first. */
  #victim(): number {
    let best = 0;
    let bestScore = Infinity;
    for (let i = 0; i < this.#samples; i++) {
      // xorshift32: cheap, deterministic, good enough to spread samples
      let x = this.#rand;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.#rand = x >>> 0;
      const slot = this.#rand % this.#t.capacity;
      const score = this.#t.ruleOf[slot]! < 0 ? -1 : this.#t.totals[slot]!;
      if (score < bestScore) {
        bestScore = score;
        best = slot;
      }
    }
    return best;
  }

  /**
   * Moves the window to `now`: every slice that ended is zeroed and leaves the totals, and
   * candidates whose window emptied give their slot back. The sketch halves once per window so
   * old counts fade and 16-bit counters never stick at their ceiling.
   */
  advance(now: number): void {
    const target = Math.floor(now / this.sliceMs);
    const steps = target - this.#lastSlice;
    if (steps <= 0) return;
    this.#lastSlice = target;
    const rotations = Math.min(steps, this.slices);
    const slices = this.slices;
    const t = this.#t;
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
      const end = t.urgentEnd[slot]!;
      if (end !== -Infinity && target >= end) {
        // the episode is over: quiet until the key spent a whole window below its threshold
        if (target >= end + slices && t.totals[slot]! - expired < t.threshold[slot]!) {
          t.urgentEnd[slot] = -Infinity;
          t.crossAt[slot] = t.threshold[slot]!;
        } else t.crossAt[slot] = 0;
      }
      if (expired === 0) {
        if (t.totals[slot] === 0) t.release(slot); // admitted by an access its rule does not count
        continue;
      }
      const total = t.totals[slot]! - expired;
      t.totals[slot] = total;
      if (total === 0) t.release(slot);
    }
    this.#slicesSinceDecay += steps;
    if (this.#slicesSinceDecay >= this.slices) {
      if (this.#slicesSinceDecay >= 2 * this.slices) {
        this.#sketch.clear();
        this.#slicesSinceDecay = 0;
      } else {
        this.#sketch.halve();
        this.#slicesSinceDecay -= this.slices;
      }
      // once a window: a table a flood left sparse gives its memory back
      if (t.shrinkIfSparse()) this.#bindColumns();
    }
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
    this.#clearUrgent();
    // allocated only when there is something to report: an idle flush allocates nothing
    let out: Collected | undefined;
    for (let u = 0; u < this.#t.usedCount; u++) {
      const slot = this.#t.used[u]!;
      const pending = this.#t.pending[slot]!;
      if (pending === 0) continue;
      this.#t.pending[slot] = 0;
      const rule = this.#t.ruleOf[slot]!;
      const total = this.#t.totals[slot]!;
      const given = rule < 0 ? undefined : thresholds[rule];
      const threshold = given === undefined ? undefined : Math.max(1, given * this.#rateOf(rule));
      // Below the local threshold this flush's counts are dropped, not carried: a backlog sent
      // when the key finally crosses would land in the hub's *current* slice and stay there a
      // whole window past the accesses' real time, inflating the cluster sum (a key at 0.9 x
      // threshold got promoted). Dropping loses < local threshold per instance per window,
      // which is what the hub's local threshold is sized for.
      if (threshold === undefined || total < threshold) continue;
      out ??= { keys: [], counts: [], rules: [] };
      out.keys.push(this.#t.keys[slot]!);
      out.counts.push(this.#scaled(Math.min(pending, total), rule));
      out.rules.push(rule);
    }
    return out ?? EMPTY;
  }

  /**
   * Only the urgent keys (see the design note) that are at their threshold and were accessed
   * since they were last collected; their pending counts are reset, other keys' left for the
   * next `collect`. Costs O(urgent keys).
   */
  collectUrgent(): Collected {
    let out: Collected | undefined;
    for (let u = 0; u < this.#t.urgentCount; u++) {
      const slot = this.#t.urgent[u]!;
      this.#t.urgentMark[slot] = 0;
      const pending = this.#t.pending[slot]!;
      const total = this.#t.totals[slot]!;
      const thr = this.#t.threshold[slot]!;
      // the slot may have been released (and reused) since it was listed: check it afresh
      if (pending === 0 || thr === 0 || total < thr || this.#t.keys[slot] === undefined) continue;
      this.#t.pending[slot] = 0;
      out ??= { keys: [], counts: [], rules: [] };
      out.keys.push(this.#t.keys[slot]!);
      out.counts.push(this.#scaled(Math.min(pending, total), this.#t.ruleOf[slot]!));
      out.rules.push(this.#t.ruleOf[slot]!);
    }
    this.#t.urgentCount = 0;
    return out ?? EMPTY;
  }

  /** Whether some slot became urgent since the last collect. */
  get urgent(): boolean {
    return this.#t.urgentCount > 0;
  }

  /** Ends the key's urgent episode (it is hot already: its reports need not hurry). */
  calm(key: string): void {
    const slot = this.#slotOf.get(key);
    if (slot === undefined || this.#t.threshold[slot] === 0) return;
    if (this.#t.urgentEnd[slot] === -Infinity || this.#t.urgentEnd[slot]! > this.#lastSlice)
      this.#t.urgentEnd[slot] = this.#lastSlice;
    this.#t.crossAt[slot] = 0;
  }

  #clearUrgent(): void {
    for (let u = 0; u < this.#t.urgentCount; u++) this.#t.urgentMark[this.#t.urgent[u]!] = 0;
    this.#t.urgentCount = 0;
  }

  /**
   * Sets the per-rule local thresholds (indexed like the RuleSet's rules) that urgency is judged
   * by and that `collect()` uses by default. A key already at its new threshold counts as having
   * just crossed it.
   */
  setThresholds(thresholds: ArrayLike<number>): void {
    const all = Array.from(thresholds);
    this.#thresholds = all;
    this.#anyThresholdOne = all.some((t) => t === 1);
    this.#rearmAll();
  }

  /** Replaces the rules and recomputes every candidate's rule index. */
  setRules(rules: RuleSet): void {
    this.#rules = rules;
    this.#computeRates();
    for (let u = 0; u < this.#t.usedCount; u++) {
      const slot = this.#t.used[u]!;
      const rule = rules.match(this.#t.keys[slot]!);
      this.#t.ruleOf[slot] = rule;
      this.#t.keep[slot] = this.#rateOf(rule) / this.#sampleRate;
      this.#t.kinds[slot] = this.#kindsOf(rule);
    }
    this.#rearmAll();
  }

  #rearmAll(): void {
    for (let u = 0; u < this.#t.usedCount; u++) {
      const slot = this.#t.used[u]!;
      const thr = this.#thresholdOf(this.#t.ruleOf[slot]!);
      if (thr === this.#t.threshold[slot]) continue;
      this.#t.threshold[slot] = thr;
      this.#t.urgentEnd[slot] = -Infinity;
      this.#t.crossAt[slot] = thr;
      if (thr !== 0 && this.#t.totals[slot]! >= thr) this.#cross(slot);
    }
  }

  get rules(): RuleSet {
    return this.#rules;
  }

  /** Window total of a candidate, scaled by 1 / sampleRate (0 for a key without a counter). */
  count(key: string): number {
    const slot = this.#slotOf.get(key);
    return slot === undefined ? 0 : this.#scaled(this.#t.totals[slot]!, this.#t.ruleOf[slot]!);
  }

  /**
   * Accesses counted at `slot` (one `track` returned) in the current slice, as counted (sampled:
   * see `rateOfRule`): what a local surge is judged by (client/surge-local.ts).
   */
  sliceCountAt(slot: number): number {
    return this.#sliceCounts[slot * this.slices + this.#currentSlice]!;
  }

  /** The share of accesses counted for a rule index's keys (-1: keys matching no rule). */
  rateOfRule(rule: number): number {
    return this.#rateOf(rule);
  }

  /** The rule index of the key counted at `slot` (-1: no rule matches it). */
  ruleAt(slot: number): number {
    return this.#t.ruleOf[slot]!;
  }

  /** Sketch estimate of a key's recent accesses (an upper bound, for keys without a counter). */
  estimate(key: string): number {
    return this.#sketch.estimate(key);
  }

  stats(): WindowStats {
    return {
      candidates: this.#slotOf.size,
      slots: this.#t.capacity,
      admitted: this.#admitted,
      evicted: this.#evicted,
      rejected: this.#rejected,
    };
  }
}

function positiveInt(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
  return value;
}
