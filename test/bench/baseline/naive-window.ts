/**
 * The naive baseline's counting: an exact sliding window for every key ever reported — a Map from
 * key to an array of slice counts, no admission filter, no cap on keys. Shared by the naive hub
 * (over the network) and the accuracy benchmark (in process), so both grade the same logic.
 */

export interface NaiveWindowOptions {
  /** accesses within `windowMs` that promote a key @default 1000 */
  threshold?: number;
  /** @default 1000 */
  windowMs?: number;
  /** slices per window @default 10 */
  slices?: number;
  /** demote below threshold * this ratio @default 0.5 */
  demoteRatio?: number;
}

interface KeyWindow {
  /** counts per slice, indexed by absolute slice number modulo `slices` */
  counts: number[];
  /** absolute slice number each entry of `counts` belongs to */
  stamps: number[];
  hot: boolean;
}

export class NaiveWindows {
  readonly threshold: number;
  readonly windowMs: number;
  readonly #slices: number;
  readonly #sliceMs: number;
  readonly #demoteLevel: number;
  readonly #windows = new Map<string, KeyWindow>();

  constructor(opts: NaiveWindowOptions = {}) {
    this.threshold = opts.threshold ?? 1000;
    this.windowMs = opts.windowMs ?? 1000;
    this.#slices = opts.slices ?? 10;
    this.#sliceMs = this.windowMs / this.#slices;
    this.#demoteLevel = this.threshold * (opts.demoteRatio ?? 0.5);
  }

  get size(): number {
    return this.#windows.size;
  }

  #sum(w: KeyWindow, slice: number): number {
    let total = 0;
    for (let i = 0; i < this.#slices; i++) if (slice - w.stamps[i]! < this.#slices) total += w.counts[i]!;
    return total;
  }

  /** Adds `count` accesses of `key` at `now` (ms); returns the window total when this promotes the key, else -1. */
  add(key: string, count: number, now: number): number {
    const slice = Math.floor(now / this.#sliceMs);
    let w = this.#windows.get(key);
    if (!w) {
      w = {
        counts: new Array<number>(this.#slices).fill(0),
        stamps: new Array<number>(this.#slices).fill(-Infinity),
        hot: false,
      };
      this.#windows.set(key, w);
    }
    const i = slice % this.#slices;
    if (w.stamps[i] !== slice) {
      w.stamps[i] = slice;
      w.counts[i] = 0;
    }
    w.counts[i]! += count;
    if (w.hot) return -1;
    const total = this.#sum(w, slice);
    if (total < this.threshold) return -1;
    w.hot = true;
    return total;
  }

  /** The one pass over every key: returns keys to demote and forgets keys whose window emptied. */
  sweep(now: number): string[] {
    const slice = Math.floor(now / this.#sliceMs);
    const demoted: string[] = [];
    for (const [key, w] of this.#windows) {
      const total = this.#sum(w, slice);
      if (w.hot && total < this.#demoteLevel) {
        w.hot = false;
        demoted.push(key);
      }
      if (total === 0 && !w.hot) this.#windows.delete(key);
    }
    return demoted;
  }
}
