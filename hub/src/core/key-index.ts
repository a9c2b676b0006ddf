/**
 * String key -> slot number, for the aggregator's ingest loop: an open-addressing hash table
 * (linear probing, backward-shift deletion, load ≤ 1/2) over typed arrays.
 *
 * Why not a Map: every key in a Report is a string the decoder just made, whose hash V8 has not
 * computed yet; `Map.get` computes it in a runtime call, which measured ~50 ns of the ~80 ns a
 * lookup costs at 3M records/s (half the hub's per-record ingest cost). Hashing the characters in
 * JIT-compiled code (sdk/src/hash.ts) and comparing with `===` costs a fraction of that.
 *
 * Hash flooding: the hash is seeded per table with a random seed, so keys that collide cannot be
 * chosen without knowing it (V8 seeds its own string hash the same way).
 */
import { hashString } from '@hotkey/sdk';

const EMPTY = -1;
const MIN_CAPACITY = 16;

export class KeyIndex {
  readonly #seed: number;
  #mask: number;
  #hashes: Int32Array;
  #values: Int32Array;
  #keys: (string | undefined)[];
  #size = 0;

  /** @param [seed] hash seed @default random */
  constructor(seed: number = (Math.random() * 0x1_0000_0000) >>> 0) {
    this.#seed = seed;
    this.#mask = MIN_CAPACITY - 1;
    this.#hashes = new Int32Array(MIN_CAPACITY);
    this.#values = new Int32Array(MIN_CAPACITY).fill(EMPTY);
    this.#keys = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** The slot stored for `key` (a non-negative integer), or undefined. */
  get(key: string): number | undefined {
    const h = hashString(key, this.#seed) | 0;
    const mask = this.#mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = this.#values[i]!;
      if (v === EMPTY) return undefined;
      if (this.#hashes[i] === h && this.#keys[i] === key) return v;
    }
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` (a non-negative integer below 2^31) for `key`. */
  set(key: string, value: number): this {
    if ((this.#size + 1) * 2 > this.#mask + 1) this.#resize((this.#mask + 1) * 2);
    const h = hashString(key, this.#seed) | 0;
    const mask = this.#mask;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = this.#values[i]!;
      if (v === EMPTY) {
        this.#hashes[i] = h;
        this.#keys[i] = key;
        this.#values[i] = value;
        this.#size++;
        return this;
      }
      if (this.#hashes[i] === h && this.#keys[i] === key) {
        this.#values[i] = value;
        return this;
      }
    }
  }

  /** Removes `key`; true when it was there. */
  delete(key: string): boolean {
    const h = hashString(key, this.#seed) | 0;
    const mask = this.#mask;
    let i = h & mask;
    for (; ; i = (i + 1) & mask) {
      const v = this.#values[i]!;
      if (v === EMPTY) return false;
      if (this.#hashes[i] === h && this.#keys[i] === key) break;
    }
    // backward-shift deletion: move later entries of the probe run into the hole, so lookups
    // never need tombstones (Knuth, TAOCP vol. 3, 6.4 Algorithm R)
    let hole = i;
    for (let j = (hole + 1) & mask; this.#values[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.#hashes[j]! & mask;
      // the entry at j may fill the hole unless its home lies cyclically in (hole, j]
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      this.#hashes[hole] = this.#hashes[j]!;
      this.#keys[hole] = this.#keys[j];
      this.#values[hole] = this.#values[j]!;
      hole = j;
    }
    this.#values[hole] = EMPTY;
    this.#keys[hole] = undefined;
    this.#size--;
    return true;
  }

  clear(): void {
    this.#values.fill(EMPTY);
    this.#keys.fill(undefined);
    this.#size = 0;
  }

  /** [key, slot] pairs in table order. Do not modify the index while iterating: copy first. */
  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (let i = 0; i <= this.#mask; i++) if (this.#values[i] !== EMPTY) yield [this.#keys[i]!, this.#values[i]!];
  }

  #resize(capacity: number): void {
    const hashes = this.#hashes;
    const values = this.#values;
    const keys = this.#keys;
    this.#mask = capacity - 1;
    this.#hashes = new Int32Array(capacity);
    this.#values = new Int32Array(capacity).fill(EMPTY);
    this.#keys = new Array<string | undefined>(capacity).fill(undefined);
    for (let i = 0; i < values.length; i++) {
      if (values[i] === EMPTY) continue;
      for (let j = hashes[i]! & this.#mask; ; j = (j + 1) & this.#mask) {
        if (this.#values[j] !== EMPTY) continue;
        this.#hashes[j] = hashes[i]!;
        this.#keys[j] = keys[i];
        this.#values[j] = values[i]!;
        break;
      }
    }
  }
}
