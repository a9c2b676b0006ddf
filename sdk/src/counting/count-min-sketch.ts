/**
 * A count-min sketch of recent accesses: `depth` rows of `width` 16-bit saturating counters.
 * One string hash per key; the rows use double hashing (`h1 + row * h2`), as Caffeine's
 * FrequencySketch does, so a key costs one hash however deep the sketch. `halve()` ages every
 * counter (the caller does it once per window), so old accesses fade instead of piling up.
 * An idle sketch is not walked: after 16 halvings without an increment every counter is 0.
 * The mean counter (`noiseFloor`) is what a flood of one-off keys leaves behind; an estimate
 * only means something when it stands out from it.
 *
 * The width given is a bound, not an allocation: the table starts at INITIAL_WIDTH counters a
 * row and doubles while the increments since the last ageing exceed a quarter of its width, so
 * a service reading a few hundred keys a second holds a few KB, not the bound's 128 KB. Both
 * resizes keep the sketch's one guarantee (an estimate never under-counts), because a key's
 * column in a table of width 2w, taken modulo w, is its column in the table of width w:
 * doubling copies each row into both halves (every counter keeps what it had), and halving the
 * width when it is mostly idle (after an ageing leaves fewer increments than a sixteenth of it)
 * folds the halves by adding them (saturating).
 * Reference: Cormode & Muthukrishnan, "An improved data stream summary: the count-min sketch"
 * (2005); Caffeine `FrequencySketch.java`.
 */
import { hashString, mix32 } from '../hash.ts';

export interface CountMinSketchOptions {
  /** counters per row at most, rounded up to a power of two; the table grows to it as keys arrive @default 16384 */
  width?: number;
  /** rows @default 4 */
  depth?: number;
}

const MAX_U16 = 0xffff;
/** counters per row a sketch starts with (its bound, if smaller) */
export const INITIAL_WIDTH = 1024;
/** halvings after which every 16-bit counter is 0 */
const HALVINGS_TO_ZERO = 16;

export class CountMinSketch {
  /** counters per row at most */
  readonly width: number;
  readonly depth: number;
  #table: Uint16Array;
  /** counters per row now (a power of two, ≤ width) */
  #cur: number;
  /** increments since the sketch last aged (halved with it) */
  #adds = 0;
  /** halvings left before every counter is surely 0 */
  #live = 0;

  constructor(options: CountMinSketchOptions = {}) {
    this.depth = positiveInt(options.depth ?? 4, 'depth');
    const wanted = positiveInt(options.width ?? 16384, 'width');
    let width = 1;
    while (width < wanted) width <<= 1;
    this.width = width;
    this.#cur = Math.min(width, INITIAL_WIDTH);
    this.#table = new Uint16Array(this.#cur * this.depth);
  }

  /** counters per row the table holds now (grows to `width`, shrinks back when idle) */
  get currentWidth(): number {
    return this.#cur;
  }

  /** Counts one access of `key` and returns its new estimate. */
  increment(key: string): number {
    if (this.#adds >= this.#cur >>> 2 && this.#cur < this.width) this.#resize(this.#cur * 2);
    this.#adds++;
    this.#live = HALVINGS_TO_ZERO;
    return this.#visit(key, 1);
  }

  /** The key's estimate: an upper bound of its accesses since the counters last aged. */
  estimate(key: string): number {
    return this.#visit(key, 0);
  }

  /** Mean counter value: the estimate any key gets from noise alone under a flood of distinct keys. */
  get noiseFloor(): number {
    return (this.#adds / this.#cur) | 0;
  }

  /** Ages the sketch: every counter halves; a mostly idle table then folds to half its width. */
  halve(): void {
    if (this.#live > 0) {
      const table = this.#table;
      for (let i = 0; i < table.length; i++) table[i] = table[i]! >>> 1;
      this.#live--;
    }
    this.#adds = Math.floor(this.#adds / 2);
    if (this.#cur > INITIAL_WIDTH && this.#adds < this.#cur >>> 4) this.#resize(this.#cur >>> 1);
  }

  clear(): void {
    if (this.#cur > INITIAL_WIDTH) {
      this.#cur = INITIAL_WIDTH;
      this.#table = new Uint16Array(INITIAL_WIDTH * this.depth);
    } else if (this.#live > 0) this.#table.fill(0);
    this.#adds = 0;
    this.#live = 0;
  }

  /** Doubles (copy into both halves) or halves (fold by adding) every row; see the design note. */
  #resize(width: number): void {
    const old = this.#table;
    const w = this.#cur;
    const table = new Uint16Array(width * this.depth);
    for (let row = 0; row < this.depth; row++) {
      const from = row * w;
      const to = row * width;
      if (width > w) {
        const src = old.subarray(from, from + w);
        table.set(src, to);
        table.set(src, to + w);
      } else {
        for (let i = 0; i < width; i++) table[to + i] = Math.min(MAX_U16, old[from + i]! + old[from + width + i]!);
      }
    }
    this.#table = table;
    this.#cur = width;
  }

  /** The one lookup loop: the minimum over the key's counters, after adding `add` (0 or 1) to each. */
  #visit(key: string, add: number): number {
    const h1 = hashString(key);
    const h2 = mix32(h1 ^ 0x9e3779b9) | 1;
    const width = this.#cur;
    const mask = width - 1;
    const table = this.#table;
    let estimate = MAX_U16;
    for (let row = 0, base = 0; row < this.depth; row++, base += width) {
      const i = base + ((h1 + Math.imul(row, h2)) & mask);
      const c = table[i]!;
      if (add !== 0 && c < MAX_U16) table[i] = c + 1;
      if (c + add < estimate) estimate = c + add;
    }
    return estimate;
  }
}

function positiveInt(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
  return value;
}
