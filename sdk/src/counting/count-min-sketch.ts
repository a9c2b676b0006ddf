/**
 * A count-min sketch of recent accesses: `depth` rows of `width` 16-bit saturating counters.
 * One string hash per key; the rows use double hashing (`h1 + row * h2`), as Caffeine's
 * FrequencySketch does, so a key costs one hash however deep the sketch. `halve()` ages every
 * counter (the caller does it once per window), so old accesses fade instead of piling up.
 * An idle sketch is not walked: after 16 halvings without an increment every counter is 0.
 * The mean counter (`noiseFloor`) is what a flood of one-off keys leaves behind; an estimate
 * only means something when it stands out from it.
 * Reference: Cormode & Muthukrishnan, "An improved data stream summary: the count-min sketch"
 * (2005); Caffeine `FrequencySketch.java`.
 */
import { hashString, mix32 } from '../hash.ts';

export interface CountMinSketchOptions {
  /** counters per row, rounded up to a power of two @default 16384 */
  width?: number;
  /** rows @default 4 */
  depth?: number;
}

const MAX_U16 = 0xffff;
/** halvings after which every 16-bit counter is 0 */
const HALVINGS_TO_ZERO = 16;

export class CountMinSketch {
  readonly width: number;
  readonly depth: number;
  readonly #table: Uint16Array;
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
    this.#table = new Uint16Array(width * this.depth);
  }

  /** Counts one access of `key` and returns its new estimate. */
  increment(key: string): number {
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
    return (this.#adds / this.width) | 0;
  }

  /** Ages the sketch: every counter halves. */
  halve(): void {
    if (this.#live > 0) {
      const table = this.#table;
      for (let i = 0; i < table.length; i++) table[i] = table[i]! >>> 1;
      this.#live--;
    }
    this.#adds = Math.floor(this.#adds / 2);
  }

  clear(): void {
    if (this.#live > 0) this.#table.fill(0);
    this.#adds = 0;
    this.#live = 0;
  }

  /** The one lookup loop: the minimum over the key's counters, after adding `add` (0 or 1) to each. */
  #visit(key: string, add: number): number {
    const h1 = hashString(key);
    const h2 = mix32(h1 ^ 0x9e3779b9) | 1;
    const mask = this.width - 1;
    const table = this.#table;
    let estimate = MAX_U16;
    for (let row = 0, base = 0; row < this.depth; row++, base += this.width) {
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
