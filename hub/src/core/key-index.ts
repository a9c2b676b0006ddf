/**
 * String key -> slot number, for the aggregator's ingest loop: an open-addressing hash table
 * (linear probing, backward-shift deletion, load ≤ 1/2) over typed arrays.
 *
 * Why not a Map: every key in a Report is a string the decoder just made, whose hash V8 has not
 * computed yet; `Map.get` computes it in a runtime call, which measured ~50 ns of the ~80 ns a
 * lookup costs at 3M records/s (half the hub's per-record ingest cost). Hashing the characters in
 * JIT-compiled code and comparing with `===` costs a fraction of that. A bucket's hash and slot
 * sit side by side in one Int32Array, so a probe touches one cache line before the key compare.
 *
 * Hash flooding: the hash is seeded per table with a random seed, so keys that collide cannot be
 * chosen without knowing it (V8 seeds its own string hash the same way).
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;

/**
 * MurmurHash3_x86_32 (Austin Appleby, public domain) over the key's UTF-16 code units taken two
 * per 32-bit block: half the blocks of a per-character hash, and the block mixing does not
 * depend on the running state, so consecutive blocks overlap in the CPU. Only this table uses it:
 * any well-mixed hash serves, as long as it is seeded.
 */
function hashKey(key: string, seed: number): number {
  const n = key.length;
  let h = seed | 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    h ^= mixBlock(key.charCodeAt(i) | (key.charCodeAt(i + 1) << 16));
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < n) h ^= mixBlock(key.charCodeAt(i));
  h ^= n;
  // fmix32: every input bit reaches the low bits the table masks
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

function mixBlock(block: number): number {
  const k = Math.imul(block, 0xcc9e2d51);
  return Math.imul((k << 15) | (k >>> 17), 0x1b873593);
}

export class KeyIndex {
  readonly #seed: number;
  #mask: number;
  /** per bucket i: [2i] the key's hash, [2i + 1] its slot or EMPTY (one cache line for both) */
  #table: Int32Array;
  #keys: (string | undefined)[];
  #size = 0;

  /** @param [seed] hash seed @default random */
  constructor(seed: number = (Math.random() * 0x1_0000_0000) >>> 0) {
    this.#seed = seed;
    this.#mask = MIN_CAPACITY - 1;
    this.#table = KeyIndex.#emptyTable(MIN_CAPACITY);
    this.#keys = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** The slot stored for `key` (a non-negative integer), or undefined. */
  get(key: string): number | undefined {
    const h = hashKey(key, this.#seed);
    const mask = this.#mask;
    const table = this.#table;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = table[2 * i + 1]!;
      if (v === EMPTY) return undefined;
      if (table[2 * i] === h && this.#keys[i] === key) return v;
    }
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` (a non-negative integer below 2^31) for `key`. */
  set(key: string, value: number): this {
    if ((this.#size + 1) * 2 > this.#mask + 1) this.#resize((this.#mask + 1) * 2);
    const h = hashKey(key, this.#seed);
    const mask = this.#mask;
    const table = this.#table;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = table[2 * i + 1]!;
      if (v === EMPTY) {
        table[2 * i] = h;
        table[2 * i + 1] = value;
        this.#keys[i] = key;
        this.#size++;
        return this;
      }
      if (table[2 * i] === h && this.#keys[i] === key) {
        table[2 * i + 1] = value;
        return this;
      }
    }
  }

  /** Removes `key`; true when it was there. */
  delete(key: string): boolean {
    const h = hashKey(key, this.#seed);
    const mask = this.#mask;
    const table = this.#table;
    let i = h & mask;
    for (; ; i = (i + 1) & mask) {
      const v = table[2 * i + 1]!;
      if (v === EMPTY) return false;
      if (table[2 * i] === h && this.#keys[i] === key) break;
    }
    // backward-shift deletion: move later entries of the probe run into the hole, so lookups
    // never need tombstones (Knuth, TAOCP vol. 3, 6.4 Algorithm R)
    let hole = i;
    for (let j = (hole + 1) & mask; table[2 * j + 1] !== EMPTY; j = (j + 1) & mask) {
      const home = table[2 * j]! & mask;
      // the entry at j may fill the hole unless its home lies cyclically in (hole, j]
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      table[2 * hole] = table[2 * j]!;
      table[2 * hole + 1] = table[2 * j + 1]!;
      this.#keys[hole] = this.#keys[j];
      hole = j;
    }
    table[2 * hole + 1] = EMPTY;
    this.#keys[hole] = undefined;
    this.#size--;
    return true;
  }

  clear(): void {
    this.#table = KeyIndex.#emptyTable(this.#mask + 1);
    this.#keys.fill(undefined);
    this.#size = 0;
  }

  /** [key, slot] pairs in table order. Do not modify the index while iterating: copy first. */
  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (let i = 0; i <= this.#mask; i++) {
      const v = this.#table[2 * i + 1]!;
      if (v !== EMPTY) yield [this.#keys[i]!, v];
    }
  }

  static #emptyTable(capacity: number): Int32Array {
    const table = new Int32Array(2 * capacity);
    for (let i = 1; i < table.length; i += 2) table[i] = EMPTY;
    return table;
  }

  #resize(capacity: number): void {
    const old = this.#table;
    const keys = this.#keys;
    const mask = capacity - 1;
    const table = KeyIndex.#emptyTable(capacity);
    this.#keys = new Array<string | undefined>(capacity).fill(undefined);
    for (let i = 0; i < keys.length; i++) {
      if (old[2 * i + 1] === EMPTY) continue;
      for (let j = old[2 * i]! & mask; ; j = (j + 1) & mask) {
        if (table[2 * j + 1] !== EMPTY) continue;
        table[2 * j] = old[2 * i]!;
        table[2 * j + 1] = old[2 * i + 1]!;
        this.#keys[j] = keys[i];
        break;
      }
    }
    this.#mask = mask;
    this.#table = table;
  }
}
