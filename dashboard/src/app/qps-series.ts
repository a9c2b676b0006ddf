/**
 * Per-row QPS history for sparklines and the key detail chart: one sample per row per tick in a
 * fixed ring (Float64Array), so memory is `rows * capacity` numbers whatever the feed does. A row
 * that leaves the hot set keeps its ring only while someone is looking at it (`pin`).
 */

/**
 * @param [capacity=240] samples kept per row (4 minutes at one per second)
 * @param [maxSeries=20000] rows tracked; rows beyond it get no history
 */
export interface QpsSeriesOptions {
  capacity?: number;
  maxSeries?: number;
}

interface Ring {
  values: Float64Array;
  /** sample times, ms */
  times: Float64Array;
  /** index of the next write */
  head: number;
  size: number;
}

export class QpsSeries {
  readonly capacity: number;
  readonly #maxSeries: number;
  readonly #rings = new Map<string, Ring>();
  readonly #pinned = new Set<string>();

  constructor(opts: QpsSeriesOptions = {}) {
    this.capacity = opts.capacity ?? 240;
    this.#maxSeries = opts.maxSeries ?? 20_000;
  }

  get size(): number {
    return this.#rings.size;
  }

  /** Keep the ring of `id` even after its row leaves (the key detail view shows it). */
  pin(id: string | undefined): void {
    this.#pinned.clear();
    if (id !== undefined) this.#pinned.add(id);
  }

  /**
   * One tick: appends `qps(id)` for every live id (and 0 for a pinned id that is not live), and
   * forgets rings of ids that are neither live nor pinned.
   */
  sample(now: number, live: Iterable<[string, number]>): void {
    const seen = new Set<string>();
    for (const [id, qps] of live) {
      seen.add(id);
      this.#push(id, now, qps);
    }
    for (const id of this.#pinned) if (!seen.has(id) && this.#rings.has(id)) this.#push(id, now, 0);
    for (const id of this.#rings.keys()) if (!seen.has(id) && !this.#pinned.has(id)) this.#rings.delete(id);
  }

  #push(id: string, now: number, qps: number): void {
    let ring = this.#rings.get(id);
    if (!ring) {
      if (this.#rings.size >= this.#maxSeries) return;
      ring = { values: new Float64Array(this.capacity), times: new Float64Array(this.capacity), head: 0, size: 0 };
      this.#rings.set(id, ring);
    }
    ring.values[ring.head] = qps;
    ring.times[ring.head] = now;
    ring.head = (ring.head + 1) % this.capacity;
    ring.size = Math.min(this.capacity, ring.size + 1);
  }

  /** The last `limit` samples of `id`, oldest first (empty when unknown). */
  values(id: string, limit = this.capacity): number[] {
    return this.#read(id, limit, 'values');
  }

  /** Sample times matching `values(id, limit)`. */
  times(id: string, limit = this.capacity): number[] {
    return this.#read(id, limit, 'times');
  }

  #read(id: string, limit: number, field: 'values' | 'times'): number[] {
    const ring = this.#rings.get(id);
    if (!ring) return [];
    const n = Math.min(limit, ring.size);
    const out = new Array<number>(n);
    for (let i = 0; i < n; i++) out[i] = ring[field][(ring.head - n + i + this.capacity) % this.capacity]!;
    return out;
  }
}
