/**
 * Per-row QPS history for sparklines and the key detail chart. Every live row is sampled on the
 * same tick, so the sample times live in one shared ring and each row owns only a slot of values
 * in a slab of Float64Arrays (allocated 256 rows at a time, slots reused): a tick over 10 000 rows
 * is a Map lookup and a store per row, and memory is bounded by `maxSeries * capacity` numbers.
 * A row that leaves the hot set keeps its slot only while someone looks at it (`pin`).
 */

/**
 * @param [capacity=240] samples kept per row (4 minutes at one per second)
 * @param [maxSeries=20000] rows tracked; rows beyond it get no history
 */
export interface QpsSeriesOptions {
  capacity?: number;
  maxSeries?: number;
}

const SLAB_ROWS = 256;

interface Slot {
  index: number;
  /** tick of the row's first sample */
  first: number;
  /** tick of the row's latest sample */
  last: number;
}

export class QpsSeries {
  readonly capacity: number;
  readonly #maxSeries: number;
  readonly #slots = new Map<string, Slot>();
  readonly #free: number[] = [];
  readonly #slabs: Float64Array[] = [];
  readonly #times: Float64Array;
  /** ticks taken so far; the latest is `#tick - 1` */
  #tick = 0;
  #pinned: string | undefined;

  constructor(opts: QpsSeriesOptions = {}) {
    this.capacity = opts.capacity ?? 240;
    this.#maxSeries = opts.maxSeries ?? 20_000;
    this.#times = new Float64Array(this.capacity);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Keep the history of `id` even after its row leaves (the key detail view shows it). */
  pin(id: string | undefined): void {
    this.#pinned = id;
  }

  /**
   * One tick: stores `qps` for every live id (0 for a pinned id that is no longer live) and frees
   * the slots of ids that are neither live nor pinned.
   */
  sample(now: number, live: Iterable<[string, number]>): void {
    const tick = this.#tick++;
    const pos = tick % this.capacity;
    this.#times[pos] = now;
    const fresh: [string, number][] = [];
    for (const [id, qps] of live) {
      const slot = this.#slots.get(id);
      if (!slot) {
        fresh.push([id, qps]);
        continue;
      }
      slot.last = tick;
      this.#write(slot, pos, qps);
    }
    // free before allocating, so rows that left make room for rows that came in this tick
    for (const [id, slot] of this.#slots) {
      if (slot.last === tick) continue;
      if (id === this.#pinned) {
        slot.last = tick;
        this.#write(slot, pos, 0);
        continue;
      }
      this.#slots.delete(id);
      this.#free.push(slot.index);
    }
    for (const [id, qps] of fresh) {
      const index = this.#allocate();
      if (index < 0) break;
      const slot = { index, first: tick, last: tick };
      this.#slots.set(id, slot);
      this.#write(slot, pos, qps);
    }
  }

  #write(slot: Slot, pos: number, qps: number): void {
    this.#slabs[(slot.index / SLAB_ROWS) | 0]![(slot.index % SLAB_ROWS) * this.capacity + pos] = qps;
  }

  #allocate(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const index = this.#slots.size;
    if (index >= this.#maxSeries) return -1;
    if (index >= this.#slabs.length * SLAB_ROWS) this.#slabs.push(new Float64Array(SLAB_ROWS * this.capacity));
    return index;
  }

  /** The last `limit` samples of `id`, oldest first (empty when unknown). */
  values(id: string, limit = this.capacity): number[] {
    const slot = this.#slots.get(id);
    if (!slot) return [];
    const n = this.#count(slot, limit);
    const slab = this.#slabs[(slot.index / SLAB_ROWS) | 0]!;
    const base = (slot.index % SLAB_ROWS) * this.capacity;
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = slab[base + ((slot.last - n + 1 + i) % this.capacity)]!;
    return out;
  }

  /** Sample times matching `values(id, limit)`. */
  times(id: string, limit = this.capacity): number[] {
    const slot = this.#slots.get(id);
    if (!slot) return [];
    const n = this.#count(slot, limit);
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = this.#times[(slot.last - n + 1 + i) % this.capacity]!;
    return out;
  }

  #count(slot: Slot, limit: number): number {
    return Math.max(0, Math.min(limit, this.capacity, slot.last - slot.first + 1));
  }
}
