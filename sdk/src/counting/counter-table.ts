/**
 * The access window's exact counters (window.ts): one slot per candidate key, its fields in
 * typed-array columns (a column per field, `slot * slices + slice` for the per-slice counts), the
 * occupied slots in a dense list (swap-remove) and the free ones on a stack.
 *
 * `max` is a bound, not an allocation. The columns start at INITIAL_SLOTS slots and double when
 * a key needs a slot and none is free, up to `max`; only a table full at `max` makes the window
 * evict. When the window finds the table sparse (a quarter or less in use, nothing urgent
 * listed) it compacts: the keys in the upper slots move down into free ones and the columns are
 * cut to the smallest power of two that leaves the keys half the room (never below
 * INITIAL_SLOTS). So a service that counts a few dozen keys holds a few KB, a flood of distinct
 * keys costs the bound while it lasts, and the memory comes back after it. A moved key keeps its
 * counts; only callers' remembered slot numbers go stale, which `trackAt` already checks.
 */

/** slots a table starts with (its bound, if smaller) */
export const INITIAL_SLOTS = 64;

export class CounterTable {
  /** slots at most */
  readonly max: number;
  readonly slices: number;
  /** slots allocated now (≤ max) */
  capacity: number;
  readonly slotOf = new Map<string, number>();
  /** one array for the table's life (resized in place, so a holder of it stays current) */
  readonly keys: (string | undefined)[];
  sliceCounts: Uint32Array;
  totals: Uint32Array;
  pending: Uint32Array;
  /** rule index of each slot's key (-1: no rule matches) */
  ruleOf: Int32Array;
  /** local threshold of each slot's rule (0: none, never reported nor urgent) */
  threshold: Uint32Array;
  /** total at which the slot next becomes urgent (0: disarmed) */
  crossAt: Uint32Array;
  /** slice at which the slot's urgent episode ends (-Infinity: none under way) */
  urgentEnd: Float64Array;
  /** listed in `urgent` since the last collect */
  urgentMark: Uint8Array;
  /** share of counted accesses kept (rule rate / client rate) */
  keep: Float64Array;
  /** the access kinds the slot's rule counts */
  kinds: Uint8Array;
  /** urgent slots since the last collect, `urgentCount` of them */
  urgent: Int32Array;
  urgentCount = 0;
  /** occupied slots, densely packed; `usedAt[slot]` is a slot's index in it */
  used: Int32Array;
  usedAt: Int32Array;
  usedCount = 0;
  #free: Int32Array;
  #freeTop = 0;

  constructor(max: number, slices: number) {
    this.max = max;
    this.slices = slices;
    const n = Math.min(max, INITIAL_SLOTS);
    this.capacity = n;
    this.keys = new Array<string | undefined>(n).fill(undefined);
    this.sliceCounts = new Uint32Array(n * slices);
    this.totals = new Uint32Array(n);
    this.pending = new Uint32Array(n);
    this.ruleOf = new Int32Array(n);
    this.threshold = new Uint32Array(n);
    this.crossAt = new Uint32Array(n);
    this.urgentEnd = new Float64Array(n).fill(Number.NEGATIVE_INFINITY);
    this.urgentMark = new Uint8Array(n);
    this.keep = new Float64Array(n).fill(1);
    this.kinds = new Uint8Array(n);
    this.urgent = new Int32Array(n);
    this.used = new Int32Array(n);
    this.usedAt = new Int32Array(n);
    this.#free = new Int32Array(n);
    this.#pushFree(0, n);
  }

  /** Whether `acquire` will find a slot (a free one, or room to grow). */
  get hasRoom(): boolean {
    return this.#freeTop > 0 || this.capacity < this.max;
  }

  /** A free slot for `key` (growing the columns if none is free), or -1 when full at `max`; the caller fills its fields. */
  acquire(key: string): number {
    if (this.#freeTop === 0) {
      if (this.capacity >= this.max) return -1;
      this.#resize(Math.min(this.max, this.capacity * 2));
    }
    const slot = this.#free[--this.#freeTop]!;
    this.usedAt[slot] = this.usedCount;
    this.used[this.usedCount++] = slot;
    this.keys[slot] = key;
    this.slotOf.set(key, slot);
    return slot;
  }

  /** Frees the slot: its key forgets it and its counts are zeroed. */
  release(slot: number): void {
    const key = this.keys[slot];
    if (key === undefined) return;
    this.slotOf.delete(key);
    this.keys[slot] = undefined;
    const base = slot * this.slices;
    this.sliceCounts.fill(0, base, base + this.slices);
    this.totals[slot] = 0;
    this.pending[slot] = 0;
    this.#free[this.#freeTop++] = slot;
    // swap-remove from the dense list
    const at = this.usedAt[slot]!;
    const last = this.used[--this.usedCount]!;
    this.used[at] = last;
    this.usedAt[last] = at;
  }

  /**
   * Compacts a sparse table (see the design note): returns whether it shrank. Refused while
   * urgent slots are listed, since the list names slots by number.
   */
  shrinkIfSparse(): boolean {
    const floor = Math.min(this.max, INITIAL_SLOTS);
    if (this.capacity <= floor || this.usedCount * 4 > this.capacity || this.urgentCount > 0) return false;
    let target = floor;
    while (target < this.usedCount * 2) target *= 2;
    if (target >= this.capacity) return false;
    // move every key above the cut into the lowest free slot below it
    let hole = 0;
    for (let u = 0; u < this.usedCount; u++) {
      const from = this.used[u]!;
      if (from < target) continue;
      while (this.keys[hole] !== undefined) hole++;
      this.#move(from, hole);
      this.used[u] = hole;
      this.usedAt[hole] = u;
    }
    this.#resize(target);
    return true;
  }

  /** Copies slot `from` into the free slot `to` and frees `from` (no list bookkeeping). */
  #move(from: number, to: number): void {
    const key = this.keys[from]!;
    this.keys[to] = key;
    this.keys[from] = undefined;
    this.slotOf.set(key, to);
    const s = this.slices;
    this.sliceCounts.copyWithin(to * s, from * s, from * s + s);
    this.totals[to] = this.totals[from]!;
    this.pending[to] = this.pending[from]!;
    this.ruleOf[to] = this.ruleOf[from]!;
    this.threshold[to] = this.threshold[from]!;
    this.crossAt[to] = this.crossAt[from]!;
    this.urgentEnd[to] = this.urgentEnd[from]!;
    this.urgentMark[to] = 0;
    this.keep[to] = this.keep[from]!;
    this.kinds[to] = this.kinds[from]!;
  }

  /** Reallocates every column at `n` slots, keeping slots below `n` (all occupied ones are). */
  #resize(n: number): void {
    const old = this.capacity;
    const keep = Math.min(old, n);
    this.keys.length = n;
    if (n > old) this.keys.fill(undefined, old, n);
    this.sliceCounts = resized(this.sliceCounts, n * this.slices, keep * this.slices);
    this.totals = resized(this.totals, n, keep);
    this.pending = resized(this.pending, n, keep);
    this.ruleOf = resized(this.ruleOf, n, keep);
    this.threshold = resized(this.threshold, n, keep);
    this.crossAt = resized(this.crossAt, n, keep);
    this.urgentEnd = resized(this.urgentEnd, n, keep);
    if (n > old) this.urgentEnd.fill(Number.NEGATIVE_INFINITY, old);
    this.urgentMark = resized(this.urgentMark, n, keep);
    this.keep = resized(this.keep, n, keep);
    this.kinds = resized(this.kinds, n, keep);
    this.urgent = resized(this.urgent, n, Math.min(this.urgentCount, n));
    this.used = resized(this.used, n, this.usedCount);
    this.usedAt = resized(this.usedAt, n, keep);
    this.capacity = n;
    this.#free = new Int32Array(n);
    this.#freeTop = 0;
    if (n > old) {
      // grown only when no slot was free: the new ones are the free list
      this.#pushFree(old, n);
    } else {
      for (let slot = n - 1; slot >= 0; slot--) if (this.keys[slot] === undefined) this.#free[this.#freeTop++] = slot;
    }
  }

  /** Pushes slots [from, to) as free, the lowest on top, so that slots fill densely. */
  #pushFree(from: number, to: number): void {
    for (let slot = to - 1; slot >= from; slot--) this.#free[this.#freeTop++] = slot;
  }
}

type Column = Uint8Array | Uint32Array | Int32Array | Float64Array;

/** A column of `length`, holding the first `keep` entries of `a`. */
function resized<T extends Column>(a: T, length: number, keep: number): T {
  const out = new (a.constructor as new (n: number) => T)(length);
  out.set(a.subarray(0, keep) as never);
  return out;
}
