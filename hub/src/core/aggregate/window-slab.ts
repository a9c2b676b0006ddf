/**
 * Slot storage of the aggregator: every tracked key owns a slot, and a slot's fields live in
 * typed arrays indexed by slot number, bounded by `maxKeys`.
 *
 * Design: what one ingested record updates sits side by side in one Float64Array slab
 * (SLOT_STRIDE float64s a slot: the absolute slice last rotated to, the window total, the reporter
 * window, the rule index and the current reporters' bitmap, then the WINDOW_SLICES slice
 * counters; 128 bytes). One Float64Array per field cost a cache line per field per record (six
 * per record, most of them misses for the long tail of keys once other processes have run on
 * the core). Rotation is lazy: touching a slot zeroes the slices that expired since its last
 * touch (O(1) amortised), so no timer walks cold keys.
 *
 * Once full, a new key replaces a non-hot key among a random sample (sampled eviction, as in
 * Redis' approximated LRU), so any key cardinality keeps the slab at its cap; a periodic sweep
 * frees slots whose window emptied. The victim is fair to the sessions and their remote addresses
 * (fair-shares.ts): an empty window first, then keys of sessions holding their part of the table, then keys one instance
 * reported, keys several instances reported last, the smallest total within each.
 */
import { WINDOW_SLICES } from '@hotkey/sdk/rules';
import { KeyIndex } from './key-index.ts';
import { type FairShare, FairShares } from './fair-shares.ts';
import { estimateReporters, popcount32, REPORTER_WORDS } from './reporter-count.ts';
import { NONE, type RuleTable } from '../decide/rule-table.ts';

/** float64 offsets in a slot's record */
export const TICK = 0;
export const TOTAL = 1;
export const REPORTER_WINDOW = 2;
export const SLICES = 6;
export const SLOT_STRIDE = SLICES + WINDOW_SLICES;
/** uint32 offsets in a slot's record (`bits`): the rule index (float64 3, an integer, never a float64 one), the bitmap (float64s 4 and 5) */
export const RULE = 6;
export const BITS = 8;
export const BITS_STRIDE = SLOT_STRIDE * 2;

/**
 * Brings slot `slot` of `slab` to absolute slice `cur`, zeroing the slices that expired since its
 * last touch. A plain function over the slab, so that the ingest loop calls it on its local view
 * of the slab as cheaply as a private method.
 */
export function rotateSlot(slab: Float64Array, slot: number, cur: number): void {
  const at = slot * SLOT_STRIDE;
  const last = slab[at + TICK]!;
  if (cur <= last) return; // same slice, or the clock stepped back: keep counting in place
  if (cur - last >= WINDOW_SLICES) {
    slab.fill(0, at + SLICES, at + SLICES + WINDOW_SLICES);
    slab[at + TOTAL] = 0;
  } else {
    const base = at + SLICES;
    let total = slab[at + TOTAL]!;
    for (let s = last + 1; s <= cur; s++) {
      const i = base + (s % WINDOW_SLICES);
      total -= slab[i]!;
      slab[i] = 0;
    }
    slab[at + TOTAL] = total;
  }
  slab[at + TICK] = cur;
}

/**
 * Starts reporter period `gen` of slot `slot`: its current bitmap (in `bits`, the slab's uint32
 * view) becomes the previous one (in `previous`) if `gen` follows it, else both clear. A plain
 * function for the same reason as rotateSlot.
 */
export function rollReporters(
  slab: Float64Array,
  bits: Uint32Array,
  previous: Uint32Array,
  slot: number,
  gen: number,
): void {
  const base = slot * REPORTER_WORDS;
  const current = slot * BITS_STRIDE + BITS;
  const adjacent = gen === slab[slot * SLOT_STRIDE + REPORTER_WINDOW]! + 1;
  for (let w = 0; w < REPORTER_WORDS; w++) {
    previous[base + w] = adjacent ? bits[current + w]! : 0;
    bits[current + w] = 0;
  }
  slab[slot * SLOT_STRIDE + REPORTER_WINDOW] = gen;
}

export interface SlotsOptions {
  maxKeys: number;
  initialCapacity: number;
  /** slots examined per eviction */
  samples: number;
  /** slots `sweep` checks per call */
  sweepPerTick: number;
  random: () => number;
}

export class WindowSlab {
  readonly #rules: RuleTable;
  readonly #samples: number;
  readonly #sweepPerTick: number;
  readonly #random: () => number;
  maxKeys: number;
  /** key -> slot (a Map would hash every freshly decoded key in a runtime call: key-index.ts) */
  readonly index = new KeyIndex();
  /** which session admitted each key (fair admission) */
  readonly shares = new FairShares();
  #capacity = 0;
  /** slots ever handed out; [0, highWater) minus the free list are live */
  #highWater = 0;
  readonly #free: number[] = [];
  keys: (string | undefined)[] = [];
  /** the per-slot fields an ingested record touches (see SLOT_STRIDE); `bits` views the same memory */
  slab = new Float64Array(0);
  bits = new Uint32Array(0);
  hot = new Uint8Array(0);
  hotUntil = new Float64Array(0);
  hotSince = new Float64Array(0);
  lowSince = new Float64Array(0);
  /** baseline / topk: the window total the key was promoted at (its renewal level) */
  level = new Float64Array(0);
  /** a hot slot's place in the decider's list of hot slots */
  hotPos = new Int32Array(0);
  /**
   * which instances reported the key in the window-length period before the current one (the
   * current period's bitmap is in the slab, its number at REPORTER_WINDOW = floor(now / windowMs))
   */
  reportersPrevious = new Uint32Array(0);
  #sweepAt = 0;
  /** keys evicted to admit others */
  evicted = 0;

  constructor(rules: RuleTable, options: SlotsOptions) {
    this.#rules = rules;
    this.maxKeys = options.maxKeys;
    this.#samples = options.samples;
    this.#sweepPerTick = options.sweepPerTick;
    this.#random = options.random;
    this.#grow(Math.min(this.maxKeys, Math.max(1, options.initialCapacity)));
  }

  /** The rule index cached in the slot (the ingest loop reads it from its local view instead). */
  ruleOf(slot: number): number {
    return this.bits[slot * BITS_STRIDE + RULE]!;
  }

  /** The slot's window total (as of its last rotation). */
  totalOf(slot: number): number {
    return this.slab[slot * SLOT_STRIDE + TOTAL]!;
  }

  /**
   * A slot for `key` under rule `r`, admitted by `share`'s session, its window and reporters empty
   * and not hot; when the slab is at `maxKeys` and no sampled slot may be replaced, -1 (all hot)
   * or -2 (`share` holds its part of the table and sampled none it may replace).
   */
  allocate(key: string, r: number, now: number, share?: FairShare): number {
    let slot: number;
    if (this.index.size >= this.maxKeys) {
      // at the cap (lowered by setMaxKeys below what is allocated): replace, never add
      slot = this.evictOne(now, share);
      if (slot < 0) return slot;
    } else if (this.#free.length > 0) slot = this.#free.pop()!;
    else if (this.#highWater < this.#capacity) slot = this.#highWater++;
    else if (this.#capacity < this.maxKeys) {
      this.#grow(Math.min(this.maxKeys, this.#capacity * 2));
      slot = this.#highWater++;
    } else {
      slot = this.evictOne(now, share);
      if (slot < 0) return slot;
    }
    this.shares.assign(slot, share);
    this.index.set(key, slot);
    this.keys[slot] = key;
    this.bits[slot * BITS_STRIDE + RULE] = r;
    this.slab[slot * SLOT_STRIDE + TICK] = Math.floor(now / this.#rules.sliceMs[r]!);
    this.clearWindow(slot);
    this.hot[slot] = 0;
    this.hotUntil[slot] = 0;
    this.hotSince[slot] = 0;
    this.lowSince[slot] = NONE;
    this.level[slot] = 0;
    this.slab[slot * SLOT_STRIDE + REPORTER_WINDOW] = Math.floor(now / this.#rules.windowMs[r]!);
    this.bits.fill(0, slot * BITS_STRIDE + BITS, slot * BITS_STRIDE + BITS + REPORTER_WORDS);
    this.reportersPrevious.fill(0, slot * REPORTER_WORDS, slot * REPORTER_WORDS + REPORTER_WORDS);
    return slot;
  }

  /** Moves the slot to rule `r` (setRules); a changed window length restarts its window. */
  setRule(slot: number, r: number, now: number, restartWindow: boolean): void {
    this.bits[slot * BITS_STRIDE + RULE] = r;
    if (restartWindow) {
      this.clearWindow(slot);
      this.slab[slot * SLOT_STRIDE + TICK] = Math.floor(now / this.#rules.sliceMs[r]!);
    }
  }

  /** Brings the slot's window to `now`'s slice, zeroing the slices that expired since its last touch. */
  rotate(slot: number, now: number): void {
    rotateSlot(this.slab, slot, Math.floor(now / this.#rules.sliceMs[this.ruleOf(slot)]!));
  }

  clearWindow(slot: number): void {
    this.slab.fill(0, slot * SLOT_STRIDE + SLICES, slot * SLOT_STRIDE + SLICES + WINDOW_SLICES);
    this.slab[slot * SLOT_STRIDE + TOTAL] = 0;
  }

  /**
   * Accesses per second over the time the window's slices actually cover: the total holds the
   * current slice, partly elapsed, and WINDOW_SLICES - 1 full ones, so dividing by the whole window would read
   * up to 1/WINDOW_SLICES low for a steady rate.
   */
  qps(slot: number, now: number): number {
    this.rotate(slot, now);
    const sliceMs = this.#rules.sliceMs[this.ruleOf(slot)]!;
    // clamped: a clock that stepped back leaves `now` before the slot's current slice
    const elapsed = Math.min(sliceMs, Math.max(0, now - this.slab[slot * SLOT_STRIDE + TICK]! * sliceMs));
    return (this.totalOf(slot) * 1000) / ((WINDOW_SLICES - 1) * sliceMs + elapsed);
  }

  /**
   * Detection latency of a promotion: ms since the start of the oldest slice in the window that
   * holds counts — how long the crossing counts took to gather. Bounded by the window, so a key
   * that hovered near its threshold for minutes does not report minutes.
   */
  accumulatedFor(slot: number, now: number): number {
    const sliceMs = this.#rules.sliceMs[this.ruleOf(slot)]!;
    const tick = this.slab[slot * SLOT_STRIDE + TICK]!;
    const base = slot * SLOT_STRIDE + SLICES;
    for (let age = WINDOW_SLICES - 1; age > 0; age--) {
      if (this.slab[base + ((((tick - age) % WINDOW_SLICES) + WINDOW_SLICES) % WINDOW_SLICES)]! > 0)
        return Math.max(0, now - (tick - age) * sliceMs);
    }
    return Math.max(0, now - tick * sliceMs);
  }

  /** Starts reporter period `gen`: the current bitmap becomes the previous one if `gen` follows it, else both clear. */
  rollReporters(slot: number, gen: number): void {
    rollReporters(this.slab, this.bits, this.reportersPrevious, slot, gen);
  }

  /** Rolls the slot's reporter period forward to `now`'s. */
  rollReporterWindow(slot: number, now: number): void {
    const gen = Math.floor(now / this.#rules.windowMs[this.ruleOf(slot)]!);
    if (gen !== this.slab[slot * SLOT_STRIDE + REPORTER_WINDOW]) this.rollReporters(slot, gen);
  }

  /** distinct reporter bits of the slot over the current and previous period (1: one instance alone) */
  reporterBitCount(slot: number): number {
    const base = slot * REPORTER_WORDS;
    const current = slot * BITS_STRIDE + BITS;
    let ones = 0;
    for (let w = 0; w < REPORTER_WORDS; w++)
      ones += popcount32((this.bits[current + w]! | this.reportersPrevious[base + w]!) >>> 0);
    return ones;
  }

  /** estimated distinct instances reporting the key in the current and previous period */
  reporters(slot: number, now: number): number {
    this.rollReporterWindow(slot, now);
    return estimateReporters(this.reporterBitCount(slot));
  }

  /**
   * Frees a non-hot slot of a random sample for a key `share`'s session admits, and returns it; -1
   * if none sampled may go. The victim: an empty window first, then a key of a session holding its
   * part of the table (fair-shares.ts), then one a single instance reported, then one several
   * reported; the smallest total within each. A `share` holding its part itself, or whose address
   * holds the address's part, may take only an empty window or such a session's key (in a flood,
   * its own or its address's): -2 if none sampled.
   */
  evictOne(now: number, share?: FairShare): number {
    const shares = this.shares;
    // a session at its part, or one of an address at the address's part (many sessions of one flooder)
    const restricted =
      share !== undefined && (shares.atShare(share, this.maxKeys) || shares.addressAtShare(share, this.maxKeys));
    let best = -1;
    let bestRank = 4;
    let bestTotal = Infinity;
    for (let attempt = 0; attempt < this.#samples * 4 && (best < 0 || attempt < this.#samples); attempt++) {
      const slot = Math.floor(this.#random() * this.#highWater);
      if (this.keys[slot] === undefined || this.hot[slot] === 1) continue;
      this.rotate(slot, now);
      const total = this.totalOf(slot);
      let rank = 0;
      if (total > 0) {
        const owner = shares.ownerOf(slot);
        if (owner !== undefined && shares.atShare(owner, this.maxKeys)) rank = 1;
        else if (restricted) continue;
        else {
          this.rollReporterWindow(slot, now);
          rank = this.reporterBitCount(slot) > 1 ? 3 : 2;
        }
      }
      if (rank < bestRank || (rank === bestRank && total < bestTotal)) {
        bestRank = rank;
        bestTotal = total;
        best = slot;
        if (rank === 0) break;
      }
    }
    if (best < 0) {
      if (!restricted) return -1;
      shares.refused++;
      if (!shares.atShare(share!, this.maxKeys)) shares.refusedForAddress++;
      return -2;
    }
    if (bestRank === 1) shares.evictedOverShare++;
    shares.unassign(best);
    this.index.delete(this.keys[best]!);
    this.keys[best] = undefined;
    this.evicted++;
    return best;
  }

  /** Forgets the slot's key and returns the slot to the free list. */
  release(slot: number): void {
    const key = this.keys[slot];
    if (key === undefined) return;
    this.shares.unassign(slot);
    this.index.delete(key);
    this.keys[slot] = undefined;
    this.hot[slot] = 0;
    this.#free.push(slot);
  }

  /**
   * Changes the key cap. Lowering it evicts the smallest non-hot keys until the slots fit (hot
   * keys stay: they are bounded by the rules' own promotion budget); raising it lets the slab grow.
   */
  setMaxKeys(maxKeys: number, now: number): void {
    this.maxKeys = maxKeys;
    while (this.index.size > this.maxKeys) {
      const slot = this.evictOne(now);
      if (slot < 0) break;
      this.#free.push(slot);
    }
    // A sample can miss every live non-hot key when most slots below the high water are free;
    // a lowered cap must still hold, so the rest go by one full pass, smallest totals first.
    if (this.index.size > this.maxKeys) this.#evictSmallest(this.index.size - this.maxKeys, now);
  }

  #evictSmallest(count: number, now: number): void {
    const candidates: number[] = [];
    for (let slot = 0; slot < this.#highWater; slot++) {
      if (this.keys[slot] === undefined || this.hot[slot] === 1) continue;
      this.rotate(slot, now);
      candidates.push(slot);
    }
    candidates.sort((a, b) => this.totalOf(a) - this.totalOf(b));
    for (const slot of candidates.slice(0, count)) {
      this.release(slot);
      this.evicted++;
    }
  }

  /** Frees up to `sweepPerTick` idle cold slots, resuming where the last sweep stopped. */
  sweep(now: number): void {
    const n = Math.min(this.#sweepPerTick, this.#highWater);
    for (let k = 0; k < n; k++) {
      if (this.#sweepAt >= this.#highWater) this.#sweepAt = 0;
      const slot = this.#sweepAt++;
      if (this.keys[slot] === undefined || this.hot[slot] === 1) continue;
      this.rotate(slot, now);
      if (this.totalOf(slot) === 0) this.release(slot);
    }
  }

  #grow(capacity: number): void {
    const copyF = (a: Float64Array) => {
      const b = new Float64Array(capacity);
      b.set(a);
      return b;
    };
    const slab = new Float64Array(capacity * SLOT_STRIDE);
    slab.set(this.slab);
    this.slab = slab;
    this.bits = new Uint32Array(slab.buffer);
    const hot = new Uint8Array(capacity);
    hot.set(this.hot);
    this.hot = hot;
    const hotPos = new Int32Array(capacity);
    hotPos.set(this.hotPos);
    this.hotPos = hotPos;
    this.hotUntil = copyF(this.hotUntil);
    this.hotSince = copyF(this.hotSince);
    this.lowSince = copyF(this.lowSince);
    this.level = copyF(this.level);
    const previous = new Uint32Array(capacity * REPORTER_WORDS);
    previous.set(this.reportersPrevious);
    this.reportersPrevious = previous;
    this.shares.grow(capacity);
    // push, not `length =`: a length jump turns the array into a slow dictionary-mode array
    for (let i = this.keys.length; i < capacity; i++) this.keys.push(undefined);
    this.#capacity = capacity;
  }
}
