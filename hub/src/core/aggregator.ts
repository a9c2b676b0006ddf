/**
 * Cluster-wide sliding windows for one app's keys: the hub's hot path.
 *
 * Design: every tracked key owns a slot in a typed-array slab. A slot holds WINDOW_SLICES counters
 * covering its rule's `windowMs`, a running total, and the absolute slice number it was last
 * rotated to, side by side with what else a record updates (SLOT_STRIDE). Rotation is lazy: touching a slot zeroes the slices that expired
 * since its last touch (O(1) amortised), so no timer walks cold keys. The rule of a key is matched
 * once on admission and cached in the slot (RuleSet.match per record would dominate ingest).
 *
 * A key is promoted inside `ingest` the moment its total reaches the rule's threshold (lowest
 * latency); each later crossing renews its `hotMs` lifetime. `tick` walks only the hot keys and
 * demotes those below `threshold * demoteRatio` for `demoteWindows` whole windows ('cooled') or not
 * renewed within `hotMs` ('expired').
 *
 * Hot-set admission (issue 11.1: one reporter must not fill every SDK's hot set): a key whose
 * window only one instance reported (one reporter bit) is promoted only if the reporting
 * connection's solo budget (`PromotionBudget`, a token bucket per connection) has a token; and the
 * hot set holds at most `maxHot` keys: at the cap a candidate must beat the weakest of a random
 * sample of hot keys (more reporters, then more QPS), which is demoted ('evicted') to make room.
 * Keys many instances report therefore always get in, and junk carried by one connection stays
 * within that connection's budget. A refused key stays tracked and is reconsidered on its next
 * crossing.
 *
 * Memory is bounded by `maxKeys`: once full, a new key replaces the smallest non-hot key among a
 * random sample (sampled eviction, as in Redis' approximated LRU), so any key cardinality keeps the
 * slab at its cap. Distinct reporters of a key are estimated by linear counting over a 128-bit
 * bitmap per slot (Whang et al., "A linear-time probabilistic counting algorithm", 1990).
 *
 * Modes (a rule's `mode`): 'fixed' is the threshold above. 'baseline' and 'topk' rules hand each
 * report to their rule's detector (detectors/baseline.ts, detectors/topk.ts), which says whether
 * the key is anomalous; a per-slot `level` keeps the window total the key was promoted at, and
 * the same hysteresis demotes it (below `level × demoteRatio`, or for topk out of the top ⌈1.5k⌉,
 * for `demoteWindows` windows). Pre-declared windows (`hotFrom` / `hotUntil`, schedule.ts) promote
 * any reported key of an open window, and `tick` promotes their exact keys at the window's start.
 * Fixed rules without a window keep the original one-compare path.
 *
 * Pure: no timers, no I/O; time comes in as `now` (ms) on every call.
 */
import { hashString } from '@hotkey/sdk';
import type { HubDemoteReason } from '@hotkey/sdk/protocol';
import { RuleSet, WINDOW_SLICES, type Rule } from '@hotkey/sdk/rules';
import { BaselineDetector } from './detectors/baseline.ts';
import { TopKDetector } from './detectors/topk.ts';
import { KeyIndex } from './key-index.ts';
import type { ReportFrame } from './report-frame.ts';
import { activeExactKeys, nextTransition } from './schedule.ts';

export type DemoteReason = HubDemoteReason;

/** Called synchronously on transitions only (never per record). */
export interface AggregatorListener {
  promote(key: string, rule: Rule, qps: number, latencyMs: number | undefined, manual: boolean): void;
  demote(key: string, qps: number, reason: DemoteReason): void;
}

export interface AggregatorOptions {
  rules: readonly Rule[];
  listener: AggregatorListener;
  /** keys tracked at most; more are admitted by evicting the smallest sampled non-hot key @default 100000 */
  maxKeys?: number;
  /** slots allocated up front; the slab doubles up to `maxKeys` @default 1024 */
  initialCapacity?: number;
  /** slots examined per eviction @default 8 */
  evictionSamples?: number;
  /** slots `tick` checks for emptiness per call, to free idle keys @default 2048 */
  sweepPerTick?: number;
  /** random source in [0, 1) for eviction sampling @default Math.random */
  random?: () => number;
  /** keys this hub may track (its own, in a cluster); checked once per admission @default every key */
  accept?: (key: string) => boolean;
  /** share of a rule's threshold the SDKs together may leave unreported (baseline priors) @default 0.2 */
  reportFraction?: number;
  /** ms since epoch at construction (starts the baseline warm-up) @default 0 */
  now?: number;
  /** hot keys at most; at the cap a stronger candidate displaces the weakest sampled one @default Infinity */
  maxHot?: number;
}

/** What one connection may still promote alone (a TokenBucket fits). */
export interface PromotionBudget {
  take(now: number): boolean;
}

export interface HotKeyView {
  key: string;
  qps: number;
  threshold: number;
  /** ms when the key was promoted */
  since: number;
  /** ms the promotion lives without renewal */
  ttlMs: number;
  /** estimated distinct instances reporting the key in the current and previous window */
  instances: number;
  rule: Rule;
}

export interface AggregatorStats {
  keys: number;
  hot: number;
  /** records dropped because the slab was full of hot keys */
  dropped: number;
  /** keys evicted to admit others */
  evicted: number;
  /** records whose key matches no rule, or that another hub owns */
  ignored: number;
  /** crossings not promoted: the only reporter's connection was out of solo budget */
  soloRefused: number;
  /** crossings not promoted: the hot set was at `maxHot` and the key was not stronger than the weakest sampled */
  capRefused: number;
  /** hot keys demoted to make room for a stronger one */
  displaced: number;
}

const REPORTER_WORDS = 4; // 128 bits
const REPORTER_BITS = REPORTER_WORDS * 32;
/**
 * A slot's record in the slab, in float64s: the absolute slice it was last rotated to, the window
 * total, the reporter window, the rule index (float64 3, read as a uint32 through `#slabBits`), the
 * current reporters' bitmap (float64s 4 and 5, four uint32s), then the WINDOW_SLICES slice
 * counters; 128 bytes.
 * One Float64Array per field cost a cache line per field per record (six per record, most of them
 * misses for the long tail of keys once other processes have run on the core).
 */
const TICK = 0;
const TOTAL = 1;
const REPORTER_WINDOW = 2;
const SLICES = 6;
const SLOT_STRIDE = SLICES + WINDOW_SLICES;
/** in uint32s from the slot's start (`#slabBits`): the rule index (an integer index, never a float64 one), the bitmap */
const RULE = 6;
const BITS = 8;
const BITS_STRIDE = SLOT_STRIDE * 2;
const NEGATIVE_CACHE_MAX = 10_000;
const NONE = -1;
const MODE_FIXED = 0;
const MODE_BASELINE = 1;
const MODE_TOPK = 2;
type Detector = BaselineDetector | TopKDetector | undefined;

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** The reporter bit (0..127) of an instance id; compute once per session, not per record. */
export function reporterBit(instance: string): number {
  // the SDK's string hash: consecutive ids (`i-1`, `i-2`) land on unrelated bits
  return hashString(instance) % REPORTER_BITS;
}

export class Aggregator {
  readonly #listener: AggregatorListener;
  #maxKeys: number;
  readonly #samples: number;
  readonly #sweepPerTick: number;
  readonly #random: () => number;
  #accept: ((key: string) => boolean) | undefined;

  #ruleSet: RuleSet;
  // per rule index
  #rThreshold = new Float64Array(0);
  #rSliceMs = new Float64Array(0);
  #rWindowMs = new Float64Array(0);
  #rHotMs = new Float64Array(0);
  #rDemoteLevel = new Float64Array(0);
  #rDemoteMs = new Float64Array(0);
  /** 0: fixed without a pre-declared window (the fast path); else the rule needs #judge */
  #rSpecial = new Uint8Array(0);
  #rMode = new Uint8Array(0);
  #rHotFrom = new Float64Array(0);
  #rHotUntil = new Float64Array(0);
  /** per rule for `#hoistedAt` (see #hoist): current slice, its ring index, reporter window */
  #rSliceNow = new Float64Array(0);
  #rSliceIndex = new Int32Array(0);
  #rGenNow = new Float64Array(0);
  #hoistedAt = NaN;
  #detectors: Detector[] = [];
  #detectorKeys: string[] = [];
  readonly #reportFraction: number;
  /** latest `now` seen by ingest / tick (for calls that take no time) */
  #lastNow = 0;
  /** setRules is recounting the topk detectors' hot keys */
  #recounting = false;
  /** next pre-declared window start or end (Infinity: none) */
  #nextTransition = Infinity;

  /** key -> slot (a Map would hash every freshly decoded key in a runtime call: key-index.ts) */
  readonly #slotOf = new KeyIndex();
  readonly #negative = new Set<string>();
  #capacity = 0;
  #highWater = 0; // slots ever handed out; [0, highWater) minus free list are live
  readonly #free: number[] = [];
  #keys: (string | undefined)[] = [];
  /**
   * The per-slot fields an ingested record touches, side by side (see SLOT_STRIDE): one or two
   * cache lines per record instead of one per field. `#slabBits` views the same memory.
   */
  #slab = new Float64Array(0);
  #slabBits = new Uint32Array(0);
  #hot = new Uint8Array(0);
  #hotUntil = new Float64Array(0);
  #hotSince = new Float64Array(0);
  #lowSince = new Float64Array(0);
  /** baseline / topk: the window total the key was promoted at (its renewal level) */
  #level = new Float64Array(0);
  // which instances reported the key (a 128-bit linear-counting bitmap per slot) in the current
  // window-length period (REPORTER_WINDOW = floor(now / windowMs), bits in the slab) and the one before it
  #reporterBitsPrevious = new Uint32Array(0);
  readonly #hotSlots = new Set<number>();
  // the hot slots again, as an array for uniform sampling (slot -> index in #hotPos)
  readonly #hotList: number[] = [];
  #hotPos = new Int32Array(0);
  readonly #maxHot: number;
  #sweepAt = 0;

  #dropped = 0;
  #evicted = 0;
  #ignored = 0;
  #soloRefused = 0;
  #capRefused = 0;
  #displaced = 0;

  constructor(options: AggregatorOptions) {
    this.#listener = options.listener;
    this.#maxKeys = Math.max(1, options.maxKeys ?? 100_000);
    this.#samples = Math.max(1, options.evictionSamples ?? 8);
    this.#sweepPerTick = Math.max(0, options.sweepPerTick ?? 2048);
    this.#random = options.random ?? Math.random;
    this.#accept = options.accept;
    this.#reportFraction = options.reportFraction ?? 0.2;
    this.#maxHot = Math.max(1, options.maxHot ?? Infinity);
    this.#ruleSet = new RuleSet(options.rules);
    this.#compileRules(options.now ?? 0);
    this.#grow(Math.min(this.#maxKeys, Math.max(1, options.initialCapacity ?? 1024)));
  }

  /** rules in effect (DEFAULT_RULE when the app has none) */
  get rules(): readonly Rule[] {
    return this.#ruleSet.rules;
  }

  get stats(): AggregatorStats {
    return {
      keys: this.#slotOf.size,
      hot: this.#hotSlots.size,
      dropped: this.#dropped,
      evicted: this.#evicted,
      ignored: this.#ignored,
      soloRefused: this.#soloRefused,
      capRefused: this.#capRefused,
      displaced: this.#displaced,
    };
  }

  /**
   * Adds `counts[i]` accesses of `keys[i]` at `now`, for i in [from, to). `reporter` is the sending
   * instance's bit from `reporterBit`; `solo` is its connection's budget for keys only it reports
   * (none: unlimited). Promotes synchronously. Allocates nothing per record for tracked keys.
   */
  ingest(
    keys: readonly string[],
    counts: readonly number[],
    reporter: number,
    now: number,
    solo?: PromotionBudget,
    from = 0,
    to = keys.length,
  ): void {
    this.#lastNow = now;
    // per rule, once per call: the current slice, its index in the ring and the reporter window
    // (two float divisions and a float modulo per record cost as much as the rest of the loop)
    this.#hoist(now);
    const n = Math.min(to, keys.length);
    for (let i = from; i < n; ) i = this.#ingestRun(keys, counts, undefined, reporter, now, solo, i, n);
  }

  /**
   * As `ingest`, for a Report frame read in place (report-frame.ts), from its cursor's record to
   * record `to`: a tracked key is found by its bytes, and only a key not tracked yet is decoded to
   * a string. The cursor ends at `to`.
   */
  ingestFrame(frame: ReportFrame, reporter: number, now: number, solo?: PromotionBudget, to = frame.length): void {
    this.#lastNow = now;
    this.#hoist(now);
    const n = Math.min(to, frame.length);
    for (let i = frame.index; i < n; ) i = this.#ingestRun(undefined, undefined, frame, reporter, now, solo, i, n);
  }

  /**
   * The ingest loop proper, over records [i, n) of `keys`/`counts` or, without them, of `frame`
   * (whose cursor stands at record i), with the slab's arrays in locals (fields reloaded per
   * record cost a load and a check each; an admission that grows the slab reloads them). Returns
   * early, with the next record's index, after a promotion (it reaches the listener, which may
   * change anything), so that the caller starts a fresh run.
   */
  #ingestRun(
    keys: readonly string[] | undefined,
    counts: readonly number[] | undefined,
    frame: ReportFrame | undefined,
    reporter: number,
    now: number,
    solo: PromotionBudget | undefined,
    i: number,
    n: number,
  ): number {
    const word = reporter >>> 5;
    const bit = 1 << (reporter & 31);
    const slotOf = this.#slotOf;
    let slab = this.#slab;
    let slabBits = this.#slabBits;
    let hotUntil = this.#hotUntil;
    let lowSince = this.#lowSince;
    let hot = this.#hot;
    const special = this.#rSpecial;
    const threshold = this.#rThreshold;
    const hotMs = this.#rHotMs;
    const sliceNow = this.#rSliceNow;
    const sliceIndex = this.#rSliceIndex;
    const genNow = this.#rGenNow;
    for (; i < n; i++) {
      let count: number;
      let slot: number;
      if (frame === undefined) {
        count = counts![i]!;
        if (!(count > 0)) continue;
        const key = keys![i]!;
        const found = slotOf.get(key);
        slot = found === undefined ? this.#admit(key, now) : found;
      } else {
        frame.next();
        count = frame.count;
        if (!(count > 0)) continue;
        slot =
          frame.seed === slotOf.seed
            ? slotOf.getHashed(frame.bytes, frame.keyStart, frame.keyLength, frame.hashes[i]!)
            : slotOf.getBytes(frame.bytes, frame.keyStart, frame.keyLength);
        if (slot < 0) slot = this.#admit(frame.key(), now);
      }
      if (slot < 0) continue;
      if (this.#slab !== slab) {
        // the admission grew the slab
        slab = this.#slab;
        slabBits = this.#slabBits;
        hotUntil = this.#hotUntil;
        lowSince = this.#lowSince;
        hot = this.#hot;
      }
      const at = slot * SLOT_STRIDE;
      const r = slabBits[slot * BITS_STRIDE + RULE]!;
      const cur = sliceNow[r]!;
      if (slab[at + TICK] !== cur) this.#rotate(slot, now);
      // a clock that stepped back leaves the slot ahead of `cur`: count in its own current slice
      const tick = slab[at + TICK]!;
      const index = tick === cur ? sliceIndex[r]! : tick % WINDOW_SLICES;
      slab[at + SLICES + index]! += count;
      const total = (slab[at + TOTAL]! += count);

      const gen = genNow[r]!;
      if (gen !== slab[at + REPORTER_WINDOW]) this.#rollReporters(slot, gen);
      slabBits[slot * BITS_STRIDE + BITS + word]! |= bit;

      if (special[r] !== 0) {
        if (this.#judge(slot, r, count, total, now)) return i + 1;
        continue;
      }
      if (total >= threshold[r]!) {
        hotUntil[slot] = now + hotMs[r]!;
        lowSince[slot] = NONE;
        if (hot[slot] === 0 && this.#admitHot(slot, solo, now)) {
          this.#promote(slot, now, false);
          return i + 1;
        }
      }
    }
    return n;
  }

  /** Fills the per-rule slice and window numbers for `now` (cached while `now` repeats). */
  #hoist(now: number): void {
    if (now === this.#hoistedAt) return;
    this.#hoistedAt = now;
    for (let r = 0; r < this.#rSliceMs.length; r++) {
      const slice = Math.floor(now / this.#rSliceMs[r]!);
      this.#rSliceNow[r] = slice;
      this.#rSliceIndex[r] = slice % WINDOW_SLICES;
      this.#rGenNow[r] = Math.floor(now / this.#rWindowMs[r]!);
    }
  }

  /** A record of a baseline, topk or pre-declared rule (see the design note); true when it promoted the key. */
  #judge(slot: number, r: number, count: number, total: number, now: number): boolean {
    const key = this.#keys[slot]!;
    const hot = this.#hot[slot] === 1;
    const mode = this.#rMode[r]!;
    let promote = false;
    let renew = false;
    if (mode === MODE_BASELINE) {
      const level = (this.#detectors[r] as BaselineDetector).observe(key, count, now, hot);
      if (!hot) this.#level[slot] = level;
      renew = total >= this.#level[slot]!;
      promote = renew;
    } else if (mode === MODE_TOPK) {
      const detector = this.#detectors[r] as TopKDetector;
      detector.observe(key, count, now);
      if (total >= this.#rThreshold[r]!) {
        renew = hot && !detector.outranked(key);
        promote = !hot && detector.entersTop(key, now);
        if (promote) this.#level[slot] = this.#rThreshold[r]!;
      }
    } else {
      renew = promote = total >= this.#rThreshold[r]!;
    }
    if (now >= this.#rHotFrom[r]! && now < this.#rHotUntil[r]!) {
      // a pre-declared window is open: any reported access makes the key hot until its end
      this.#hotUntil[slot] = Math.max(now + this.#rHotMs[r]!, this.#rHotUntil[r]!);
      this.#lowSince[slot] = NONE;
      if (hot) return false;
      this.#promote(slot, now, false);
      return true;
    }
    if (!renew && !promote) return false;
    if (hot) {
      if (renew) {
        this.#hotUntil[slot] = now + this.#rHotMs[r]!;
        this.#lowSince[slot] = NONE;
      }
    } else if (promote) {
      this.#hotUntil[slot] = now + this.#rHotMs[r]!;
      this.#lowSince[slot] = NONE;
      this.#promote(slot, now, false);
      return true;
    }
    return false;
  }

  /** Demotes hot keys that cooled or expired, and frees idle cold keys. Call every ~100 ms. */
  tick(now: number): void {
    this.#lastNow = now;
    for (const detector of this.#detectors) if (detector instanceof TopKDetector) detector.refresh(now);
    this.#promoteDeclared(now);
    for (const slot of this.#hotSlots) {
      this.#rotate(slot, now);
      const r = this.#ruleOf(slot);
      if (now >= this.#hotUntil[slot]!) {
        this.#demote(slot, 'expired', now);
      } else if (this.#rSpecial[r] !== 0 && now >= this.#rHotFrom[r]! && now < this.#rHotUntil[r]!) {
        this.#lowSince[slot] = NONE; // pre-declared: never cool inside the window
      } else if (this.#isLow(slot, r)) {
        if (this.#lowSince[slot] === NONE) this.#lowSince[slot] = now;
        else if (now - this.#lowSince[slot]! >= this.#rDemoteMs[r]!) this.#demote(slot, 'cooled', now);
      } else {
        this.#lowSince[slot] = NONE;
      }
    }
    this.#sweep(now);
  }

  /**
   * True once per pre-declared window start or end reached by `now`: the SDKs' per-instance
   * thresholds changed (1 inside a window), so the caller sends the app a Config.
   */
  transitionDue(now: number): boolean {
    if (now < this.#nextTransition) return false;
    this.#nextTransition = nextTransition(this.#ruleSet.rules, now);
    return true;
  }

  /** Below the demotion level: fixed `threshold × demoteRatio`, else the promotion level × demoteRatio (topk: also out of the top ⌈1.5k⌉). */
  #isLow(slot: number, r: number): boolean {
    const mode = this.#rMode[r]!;
    if (mode === MODE_FIXED) return this.#totalOf(slot) < this.#rDemoteLevel[r]!;
    const ratio = this.#ruleSet.rules[r]!.demoteRatio;
    if (this.#totalOf(slot) < this.#level[slot]! * ratio) return true;
    return mode === MODE_TOPK && (this.#detectors[r] as TopKDetector).outranked(this.#keys[slot]!);
  }

  /** Exact keys of an open pre-declared window become hot at its start, before any traffic. */
  #promoteDeclared(now: number): void {
    for (const { key, rule } of activeExactKeys(this.#ruleSet.rules, now)) {
      let slot = this.#slotOf.get(key);
      if (slot !== undefined && this.#hot[slot] === 1) continue;
      if (slot === undefined) {
        if (this.#negative.has(key) || (this.#accept !== undefined && !this.#accept(key))) continue;
        slot = this.#admit(key, now);
        if (slot < 0) continue;
      }
      if (this.#ruleOf(slot) !== rule) continue; // a more specific rule decides this key
      this.#rotate(slot, now);
      this.#hotUntil[slot] = Math.max(now + this.#rHotMs[rule]!, this.#rHotUntil[rule]!);
      this.#lowSince[slot] = NONE;
      this.#promote(slot, now, false);
    }
  }

  /** Marks a key hot by hand (dashboard / API). False when no rule matches it or the slab is full of hot keys. */
  promote(key: string, now: number): boolean {
    let slot = this.#slotOf.get(key);
    if (slot === undefined) slot = this.#admit(key, now);
    if (slot < 0) return false;
    this.#rotate(slot, now);
    this.#hotUntil[slot] = now + this.#rHotMs[this.#ruleOf(slot)]!;
    this.#lowSince[slot] = NONE;
    this.#promote(slot, now, true);
    return true;
  }

  /** Demotes a hot key by hand; false when it was not hot. */
  demote(key: string, now: number): boolean {
    const slot = this.#slotOf.get(key);
    if (slot === undefined || this.#hot[slot] === 0) return false;
    this.#demote(slot, 'manual', now);
    return true;
  }

  isHot(key: string): boolean {
    const slot = this.#slotOf.get(key);
    return slot !== undefined && this.#hot[slot] === 1;
  }

  /** Current window total of a key (0 when untracked). */
  count(key: string, now: number): number {
    const slot = this.#slotOf.get(key);
    if (slot === undefined) return 0;
    this.#rotate(slot, now);
    return this.#totalOf(slot);
  }

  /** A key's accesses per second over the time its window covers at `now` (0 when untracked). */
  qps(key: string, now: number): number {
    const slot = this.#slotOf.get(key);
    return slot === undefined ? 0 : this.#qps(slot, now);
  }

  /** The hot keys, unordered. */
  hot(now: number): HotKeyView[] {
    const out: HotKeyView[] = [];
    for (const slot of this.#hotSlots) {
      this.#rotate(slot, now);
      const r = this.#ruleOf(slot);
      out.push({
        key: this.#keys[slot]!,
        qps: this.#qps(slot, now),
        threshold: this.#rThreshold[r]!,
        since: this.#hotSince[slot]!,
        ttlMs: Math.max(0, this.#hotUntil[slot]! - now),
        instances: this.#reporters(slot, now),
        rule: this.#ruleSet.rules[r]!,
      });
    }
    return out;
  }

  /**
   * Replaces the rules. Keys now matching no rule are dropped (demoted with reason 'rules' when
   * hot); keys whose rule's window length changed restart their window; hot keys stay hot.
   */
  setRules(rules: readonly Rule[], now: number): void {
    const oldWindow = this.#rWindowMs;
    this.#ruleSet = new RuleSet(rules);
    this.#compileRules(now);
    this.#negative.clear();
    this.#recounting = true;
    for (const [key, slot] of [...this.#slotOf]) {
      const r = this.#ruleSet.match(key);
      if (r < 0) {
        if (this.#hot[slot] === 1) this.#demote(slot, 'rules', now);
        this.#release(slot);
        continue;
      }
      const changedWindow = oldWindow[this.#ruleOf(slot)] !== this.#rWindowMs[r];
      this.#slabBits[slot * BITS_STRIDE + RULE] = r;
      if (this.#hot[slot] === 1) {
        if (this.#rMode[r] !== MODE_FIXED && !(this.#level[slot]! > 0)) this.#level[slot] = this.#rThreshold[r]!;
        const detector = this.#detectors[r];
        if (detector instanceof TopKDetector) detector.hot++;
      }
      if (changedWindow) {
        this.#clearWindow(slot);
        this.#slab[slot * SLOT_STRIDE + TICK] = Math.floor(now / this.#rSliceMs[r]!);
      }
    }
    this.#recounting = false;
  }

  /**
   * Changes which keys this aggregator may track (cluster ownership) and forgets the others without
   * demotion events: their new owner decides now, and SDKs resynchronise on the new member epoch.
   */
  setAccept(accept: ((key: string) => boolean) | undefined): number {
    this.#accept = accept;
    this.#negative.clear();
    // keys this hub did not watch may arrive now: their baselines need a fresh warm-up
    for (const detector of this.#detectors)
      if (detector instanceof BaselineDetector) detector.restartWarmup(this.#lastNow);
    if (accept === undefined) return 0;
    let removed = 0;
    for (const [key, slot] of [...this.#slotOf]) {
      if (accept(key)) continue;
      if (this.#hot[slot] === 1) this.#hotGone(slot);
      this.#removeHot(slot);
      this.#release(slot);
      removed++;
    }
    return removed;
  }

  // ---- internals ----

  #compileRules(now: number): void {
    const rules = this.#ruleSet.rules;
    const n = rules.length;
    // a detector survives a rule change that leaves its rule as it was (its baselines with it)
    const kept = new Map<string, Detector>();
    this.#detectorKeys.forEach((k, i) => kept.set(k, this.#detectors[i]));
    this.#detectors = [];
    this.#detectorKeys = [];
    this.#rSpecial = new Uint8Array(n);
    this.#rMode = new Uint8Array(n);
    this.#rHotFrom = new Float64Array(n).fill(Infinity);
    this.#rHotUntil = new Float64Array(n).fill(-Infinity);
    this.#nextTransition = nextTransition(rules, now);
    this.#rThreshold = new Float64Array(n);
    this.#rSliceMs = new Float64Array(n);
    this.#rWindowMs = new Float64Array(n);
    this.#rHotMs = new Float64Array(n);
    this.#rDemoteLevel = new Float64Array(n);
    this.#rDemoteMs = new Float64Array(n);
    this.#rSliceNow = new Float64Array(n);
    this.#rSliceIndex = new Int32Array(n);
    this.#rGenNow = new Float64Array(n);
    this.#hoistedAt = NaN;
    rules.forEach((rule, i) => {
      this.#rThreshold[i] = rule.threshold;
      this.#rWindowMs[i] = rule.windowMs;
      this.#rSliceMs[i] = rule.windowMs / WINDOW_SLICES;
      this.#rHotMs[i] = rule.hotMs;
      this.#rDemoteLevel[i] = rule.threshold * rule.demoteRatio;
      this.#rDemoteMs[i] = rule.windowMs * rule.demoteWindows;
      const mode = rule.mode === 'baseline' ? MODE_BASELINE : rule.mode === 'topk' ? MODE_TOPK : MODE_FIXED;
      this.#rMode[i] = mode;
      if (rule.hotFrom !== undefined && rule.hotUntil !== undefined) {
        this.#rHotFrom[i] = rule.hotFrom;
        this.#rHotUntil[i] = rule.hotUntil;
      }
      this.#rSpecial[i] = mode !== MODE_FIXED || rule.hotFrom !== undefined ? 1 : 0;
      const { hotFrom: _from, hotUntil: _until, hotMs: _hotMs, cacheTtlMs: _ttl, cache: _cache, ...detection } = rule;
      const id = mode === MODE_FIXED ? '' : JSON.stringify(detection);
      let detector = kept.get(id);
      if (id !== '' && detector === undefined) {
        detector =
          mode === MODE_BASELINE
            ? new BaselineDetector(rule, now, { maxKeys: this.#maxKeys, reportFraction: this.#reportFraction })
            : new TopKDetector(rule, now);
      }
      if (detector instanceof TopKDetector) detector.hot = 0; // recounted by setRules
      kept.delete(id);
      this.#detectors.push(detector);
      this.#detectorKeys.push(id);
    });
  }

  /** A hot slot stops being hot without a demotion event (ownership moved, rules dropped it). */
  #hotGone(slot: number): void {
    if (this.#recounting) return;
    const detector = this.#detectors[this.#ruleOf(slot)];
    if (detector instanceof TopKDetector) detector.hot = Math.max(0, detector.hot - 1);
  }

  /**
   * Accesses per second over the time the window's slices actually cover: the total holds the
   * current slice, partly elapsed, and WINDOW_SLICES - 1 full ones, so dividing by the whole window would read
   * up to 1/WINDOW_SLICES low for a steady rate.
   */
  #qps(slot: number, now: number): number {
    this.#rotate(slot, now);
    const sliceMs = this.#rSliceMs[this.#ruleOf(slot)]!;
    // clamped: a clock that stepped back leaves `now` before the slot's current slice
    const elapsed = Math.min(sliceMs, Math.max(0, now - this.#slab[slot * SLOT_STRIDE + TICK]! * sliceMs));
    return (this.#totalOf(slot) * 1000) / ((WINDOW_SLICES - 1) * sliceMs + elapsed);
  }

  /** The rule index cached in the slot (the ingest loop reads it from its local view instead). */
  #ruleOf(slot: number): number {
    return this.#slabBits[slot * BITS_STRIDE + RULE]!;
  }

  /** The slot's window total (as of its last rotation). */
  #totalOf(slot: number): number {
    return this.#slab[slot * SLOT_STRIDE + TOTAL]!;
  }

  #rotate(slot: number, now: number): void {
    const cur = Math.floor(now / this.#rSliceMs[this.#ruleOf(slot)]!);
    const last = this.#slab[slot * SLOT_STRIDE + TICK]!;
    if (cur <= last) return; // same slice, or the clock stepped back: keep counting in place
    if (cur - last >= WINDOW_SLICES) {
      this.#clearWindow(slot);
    } else {
      const base = slot * SLOT_STRIDE + SLICES;
      let total = this.#totalOf(slot);
      for (let s = last + 1; s <= cur; s++) {
        const i = base + (s % WINDOW_SLICES);
        total -= this.#slab[i]!;
        this.#slab[i] = 0;
      }
      this.#slab[slot * SLOT_STRIDE + TOTAL] = total;
    }
    this.#slab[slot * SLOT_STRIDE + TICK] = cur;
  }

  /**
   * Detection latency of a promotion: ms since the start of the oldest slice in the window that
   * holds counts — how long the crossing counts took to gather. Bounded by the window, so a key
   * that hovered near its threshold for minutes does not report minutes.
   */
  #accumulatedFor(slot: number, now: number): number {
    const sliceMs = this.#rSliceMs[this.#ruleOf(slot)]!;
    const tick = this.#slab[slot * SLOT_STRIDE + TICK]!;
    const base = slot * SLOT_STRIDE + SLICES;
    for (let age = WINDOW_SLICES - 1; age > 0; age--) {
      if (this.#slab[base + ((((tick - age) % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES)]! > 0)
        return Math.max(0, now - (tick - age) * sliceMs);
    }
    return Math.max(0, now - tick * sliceMs);
  }

  #clearWindow(slot: number): void {
    this.#slab.fill(0, slot * SLOT_STRIDE + SLICES, slot * SLOT_STRIDE + SLICES + WINDOW_SLICES);
    this.#slab[slot * SLOT_STRIDE + TOTAL] = 0;
  }

  #rollReporters(slot: number, gen: number): void {
    const base = slot * REPORTER_WORDS;
    const current = slot * BITS_STRIDE + BITS;
    const adjacent = gen === this.#slab[slot * SLOT_STRIDE + REPORTER_WINDOW]! + 1;
    for (let w = 0; w < REPORTER_WORDS; w++) {
      this.#reporterBitsPrevious[base + w] = adjacent ? this.#slabBits[current + w]! : 0;
      this.#slabBits[current + w] = 0;
    }
    this.#slab[slot * SLOT_STRIDE + REPORTER_WINDOW] = gen;
  }

  #reporters(slot: number, now: number): number {
    const gen = Math.floor(now / this.#rWindowMs[this.#ruleOf(slot)]!);
    if (gen !== this.#slab[slot * SLOT_STRIDE + REPORTER_WINDOW]) this.#rollReporters(slot, gen);
    const base = slot * REPORTER_WORDS;
    const current = slot * BITS_STRIDE + BITS;
    let ones = 0;
    for (let w = 0; w < REPORTER_WORDS; w++)
      ones += popcount32((this.#slabBits[current + w]! | this.#reporterBitsPrevious[base + w]!) >>> 0);
    const zeros = REPORTER_BITS - ones;
    if (zeros === 0) return Math.round(REPORTER_BITS * Math.log(REPORTER_BITS));
    return Math.round(-REPORTER_BITS * Math.log(zeros / REPORTER_BITS));
  }

  #promote(slot: number, now: number, manual: boolean): void {
    const wasHot = this.#hot[slot] === 1;
    this.#hot[slot] = 1;
    const r = this.#ruleOf(slot);
    if (!wasHot) {
      this.#addHot(slot);
      this.#hotSince[slot] = now;
      const detector = this.#detectors[r];
      if (detector instanceof TopKDetector) detector.hot++;
      if (this.#rMode[r] !== MODE_FIXED && !(this.#level[slot]! > 0 && this.#level[slot]! < Infinity))
        this.#level[slot] = this.#rThreshold[r]!;
    }
    const latency = manual ? undefined : this.#accumulatedFor(slot, now);
    let rule = this.#ruleSet.rules[r]!;
    // inside a pre-declared window the SDKs keep the key to the window's end
    if (this.#hotUntil[slot]! - now > rule.hotMs) rule = { ...rule, hotMs: Math.ceil(this.#hotUntil[slot]! - now) };
    this.#listener.promote(this.#keys[slot]!, rule, this.#qps(slot, now), latency, manual);
  }

  #demote(slot: number, reason: DemoteReason, now: number): void {
    this.#hotGone(slot);
    this.#level[slot] = 0;
    this.#hot[slot] = 0;
    this.#removeHot(slot);
    this.#lowSince[slot] = NONE;
    this.#listener.demote(this.#keys[slot]!, this.#qps(slot, now), reason);
  }

  #addHot(slot: number): void {
    if (this.#hotSlots.has(slot)) return;
    this.#hotSlots.add(slot);
    this.#hotPos[slot] = this.#hotList.length;
    this.#hotList.push(slot);
  }

  #removeHot(slot: number): void {
    if (!this.#hotSlots.delete(slot)) return;
    const i = this.#hotPos[slot]!;
    const last = this.#hotList.pop()!;
    if (last !== slot) {
      this.#hotList[i] = last;
      this.#hotPos[last] = i;
    }
  }

  /** distinct reporter bits of the slot over the current and previous window (1: one instance alone) */
  #reporterBitCount(slot: number): number {
    const base = slot * REPORTER_WORDS;
    const current = slot * BITS_STRIDE + BITS;
    let ones = 0;
    for (let w = 0; w < REPORTER_WORDS; w++)
      ones += popcount32((this.#slabBits[current + w]! | this.#reporterBitsPrevious[base + w]!) >>> 0);
    return ones;
  }

  /** May the crossing key in `slot` become hot? See the design note at the top. */
  #admitHot(slot: number, solo: PromotionBudget | undefined, now: number): boolean {
    const reporters = this.#reporterBitCount(slot);
    let victim = -1;
    if (this.#hotSlots.size >= this.#maxHot) {
      victim = this.#weakestHot(now);
      if (victim < 0 || !this.#stronger(slot, reporters, victim, now)) {
        this.#capRefused++;
        return false;
      }
    }
    if (reporters <= 1 && solo !== undefined && !solo.take(now)) {
      this.#soloRefused++;
      return false;
    }
    if (victim >= 0) {
      this.#displaced++;
      this.#demote(victim, 'evicted', now);
    }
    return true;
  }

  #stronger(slot: number, reporters: number, victim: number, now: number): boolean {
    const victimReporters = this.#reporterBitCount(victim);
    if (reporters !== victimReporters) return reporters > victimReporters;
    return this.#qps(slot, now) > this.#qps(victim, now);
  }

  /** The weakest (fewest reporters, then lowest QPS) of a random sample of hot slots. */
  #weakestHot(now: number): number {
    const n = this.#hotList.length;
    if (n === 0) return -1;
    let best = -1;
    let bestReporters = Infinity;
    let bestQps = Infinity;
    for (let k = 0; k < this.#samples; k++) {
      const slot = this.#hotList[Math.floor(this.#random() * n)]!;
      this.#rollReporterWindow(slot, now);
      const reporters = this.#reporterBitCount(slot);
      const qps = this.#qps(slot, now);
      if (reporters < bestReporters || (reporters === bestReporters && qps < bestQps)) {
        best = slot;
        bestReporters = reporters;
        bestQps = qps;
      }
    }
    return best;
  }

  #rollReporterWindow(slot: number, now: number): void {
    const gen = Math.floor(now / this.#rWindowMs[this.#ruleOf(slot)]!);
    if (gen !== this.#slab[slot * SLOT_STRIDE + REPORTER_WINDOW]) this.#rollReporters(slot, gen);
  }

  #admit(key: string, now: number): number {
    if (this.#negative.has(key)) {
      this.#ignored++;
      return -1;
    }
    const r = this.#accept === undefined || this.#accept(key) ? this.#ruleSet.match(key) : -1;
    if (r < 0) {
      // unmatched and foreign keys alike: remember them so a repeat costs one Set lookup
      if (this.#negative.size >= NEGATIVE_CACHE_MAX) this.#negative.clear();
      this.#negative.add(key);
      this.#ignored++;
      return -1;
    }
    let slot: number;
    if (this.#slotOf.size >= this.#maxKeys) {
      // at the cap (lowered by setMaxKeys below what is allocated): replace, never add
      slot = this.#evictOne(now);
      if (slot < 0) {
        this.#dropped++;
        return -1;
      }
    } else if (this.#free.length > 0) slot = this.#free.pop()!;
    else if (this.#highWater < this.#capacity) slot = this.#highWater++;
    else if (this.#capacity < this.#maxKeys) {
      this.#grow(Math.min(this.#maxKeys, this.#capacity * 2));
      slot = this.#highWater++;
    } else {
      slot = this.#evictOne(now);
      if (slot < 0) {
        this.#dropped++;
        return -1;
      }
    }
    this.#slotOf.set(key, slot);
    this.#keys[slot] = key;
    this.#slabBits[slot * BITS_STRIDE + RULE] = r;
    this.#slab[slot * SLOT_STRIDE + TICK] = Math.floor(now / this.#rSliceMs[r]!);
    this.#clearWindow(slot);
    this.#hot[slot] = 0;
    this.#hotUntil[slot] = 0;
    this.#hotSince[slot] = 0;
    this.#lowSince[slot] = NONE;
    this.#level[slot] = 0;
    this.#slab[slot * SLOT_STRIDE + REPORTER_WINDOW] = Math.floor(now / this.#rWindowMs[r]!);
    this.#slabBits.fill(0, slot * BITS_STRIDE + BITS, slot * BITS_STRIDE + BITS + REPORTER_WORDS);
    this.#reporterBitsPrevious.fill(0, slot * REPORTER_WORDS, slot * REPORTER_WORDS + REPORTER_WORDS);
    return slot;
  }

  /**
   * Changes the key cap (the hub shares one key budget among its apps). Lowering it evicts the
   * smallest non-hot keys until the app fits (hot keys stay: they are bounded by the rules' own
   * promotion budget); raising it lets the slab grow again.
   */
  setMaxKeys(maxKeys: number, now: number): void {
    this.#maxKeys = Math.max(1, Math.floor(maxKeys));
    while (this.#slotOf.size > this.#maxKeys) {
      const slot = this.#evictOne(now);
      if (slot < 0) break;
      this.#free.push(slot);
    }
  }

  /** the key cap now */
  get maxKeys(): number {
    return this.#maxKeys;
  }

  /** Frees the smallest non-hot slot in a random sample and returns it, or -1 if all sampled were hot. */
  #evictOne(now: number): number {
    let best = -1;
    let bestTotal = Infinity;
    for (let attempt = 0; attempt < this.#samples * 4 && (best < 0 || attempt < this.#samples); attempt++) {
      const slot = Math.floor(this.#random() * this.#highWater);
      if (this.#keys[slot] === undefined || this.#hot[slot] === 1) continue;
      this.#rotate(slot, now);
      const total = this.#totalOf(slot);
      if (total < bestTotal) {
        bestTotal = total;
        best = slot;
        if (total === 0) break;
      }
    }
    if (best < 0) return -1;
    this.#slotOf.delete(this.#keys[best]!);
    this.#keys[best] = undefined;
    this.#evicted++;
    return best;
  }

  #release(slot: number): void {
    const key = this.#keys[slot];
    if (key === undefined) return;
    this.#slotOf.delete(key);
    this.#keys[slot] = undefined;
    this.#hot[slot] = 0;
    this.#free.push(slot);
  }

  #sweep(now: number): void {
    const n = Math.min(this.#sweepPerTick, this.#highWater);
    for (let k = 0; k < n; k++) {
      if (this.#sweepAt >= this.#highWater) this.#sweepAt = 0;
      const slot = this.#sweepAt++;
      if (this.#keys[slot] === undefined || this.#hot[slot] === 1) continue;
      this.#rotate(slot, now);
      if (this.#totalOf(slot) === 0) this.#release(slot);
    }
  }

  #grow(capacity: number): void {
    const copyF = (a: Float64Array) => {
      const b = new Float64Array(capacity);
      b.set(a);
      return b;
    };
    const copyU32 = (a: Uint32Array, per: number) => {
      const b = new Uint32Array(capacity * per);
      b.set(a);
      return b;
    };
    const slab = new Float64Array(capacity * SLOT_STRIDE);
    slab.set(this.#slab);
    this.#slab = slab;
    this.#slabBits = new Uint32Array(slab.buffer);
    const hot = new Uint8Array(capacity);
    hot.set(this.#hot);
    this.#hot = hot;
    const hotPos = new Int32Array(capacity);
    hotPos.set(this.#hotPos);
    this.#hotPos = hotPos;
    this.#hotUntil = copyF(this.#hotUntil);
    this.#hotSince = copyF(this.#hotSince);
    this.#lowSince = copyF(this.#lowSince);
    this.#level = copyF(this.#level);
    this.#reporterBitsPrevious = copyU32(this.#reporterBitsPrevious, REPORTER_WORDS);
    // push, not `length =`: a length jump turns the array into a slow dictionary-mode array
    for (let i = this.#keys.length; i < capacity; i++) this.#keys.push(undefined);
    this.#capacity = capacity;
  }
}
