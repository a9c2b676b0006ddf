/**
 * Key -> slot number, for the aggregator's ingest loop: an open-addressing hash table (linear
 * probing, backward-shift deletion, load ≤ 3/4) over typed arrays, looked up by a string or by the
 * key's UTF-8 bytes inside a Report frame (report-frame.ts), with the same answer for both.
 *
 * Why not a Map: a key decoded from a frame is a fresh string whose hash V8 has not computed yet;
 * `Map.get` computes it in a runtime call, most of a lookup's cost on the ingest path.
 * Why bytes: a key the hub already tracks needs no string at all — decoding one per record cost
 * its decode, its garbage, and a compare against a stored string elsewhere in the heap.
 *
 * Layout: a bucket is 32 bytes in one Int32Array — the key's hash, its slot, its UTF-8 length and,
 * when it has at most INLINE_BYTES, its bytes as little-endian words (zeros past its end, so a
 * frame's key compares four bytes at a time) — so a lookup of a short key reads one cache line: no
 * pointer to a string to follow. Longer keys keep their bytes in `#long`. The string of every key is kept too
 * (`#keys`), for string lookups (`===`) and iteration.
 *
 * Bytes are WTF-8: UTF-8, with a lone surrogate (which a JS string may hold) as its 3-byte form,
 * so that strings and byte sequences map one to one. Report frames carry only well-formed UTF-8
 * (report-frame.ts checks), which never contains those forms: a frame's key bytes equal a stored
 * key's bytes exactly when the decoded strings are equal.
 *
 * Hash flooding: the hash is seeded with a random seed per process (KEY_HASH_SEED), so keys that
 * collide cannot be chosen without knowing it (V8 seeds its own string hash the same way). One
 * seed for every table lets a frame's key hashes be computed once, as the frame is checked
 * (report-frame.ts), and used by whichever app's table then looks the keys up.
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;
/** MAX_LOAD = 3/4: most keys per bucket before the table doubles */
const MAX_LOAD_NUMERATOR = 3;
const MAX_LOAD_DENOMINATOR = 4;
/** int32s per bucket: hash, slot, byte length, then the key's first INLINE_BYTES bytes */
const STRIDE = 8;
const HASH = 0;
const VALUE = 1;
const LENGTH = 2;
/** the inline bytes, as little-endian int32 words (see `word`), from the bucket's start */
const INLINE = 3;
const INLINE_BYTES = (STRIDE - INLINE) * 4;

/** the default seed of every KeyIndex, and of the key hashes report-frame.ts computes */
export const KEY_HASH_SEED = (Math.random() * 0x1_0000_0000) | 0;

/** WTF-8 encoding scratch (keys are re-encoded on insert and for non-ASCII string lookups) */
let scratch = new Uint8Array(256);

/**
 * `key` as WTF-8 into `scratch` (grown as needed); returns the byte length. Well-formed strings
 * get their UTF-8 (what TextEncoder writes); a lone surrogate gets its own 3-byte form.
 */
function encodeKey(key: string): number {
  const n = key.length;
  if (scratch.length < n * 3) scratch = new Uint8Array(n * 3);
  const out = scratch;
  let p = 0;
  for (let i = 0; i < n; i++) {
    let c = key.charCodeAt(i);
    if (c < 0x80) {
      out[p++] = c;
    } else if (c < 0x800) {
      out[p++] = 0xc0 | (c >> 6);
      out[p++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        const low = key.charCodeAt(i + 1);
        if (low >= 0xdc00 && low <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          i++;
          out[p++] = 0xf0 | (c >> 18);
          out[p++] = 0x80 | ((c >> 12) & 0x3f);
          out[p++] = 0x80 | ((c >> 6) & 0x3f);
          out[p++] = 0x80 | (c & 0x3f);
          continue;
        }
      }
      out[p++] = 0xe0 | (c >> 12);
      out[p++] = 0x80 | ((c >> 6) & 0x3f);
      out[p++] = 0x80 | (c & 0x3f);
    }
  }
  return p;
}

/*
 * MurmurHash3_x86_32 (Austin Appleby, public domain) over the key's bytes, four per block. Only
 * this table uses it: any well-mixed hash serves, as long as it is seeded. `hashString` gives
 * exactly `hashBytes` of the string's WTF-8 bytes (ASCII read straight from the string, four
 * characters per block; anything else encoded first).
 */

/* the steps of hashBytes, for a caller that reads the bytes anyway (report-frame.ts checks them) */

export function mixBlock(block: number): number {
  const k = Math.imul(block, 0xcc9e2d51);
  return Math.imul((k << 15) | (k >>> 17), 0x1b873593);
}

export function round(h: number, block: number): number {
  h ^= mixBlock(block);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

export function finish(h: number, length: number): number {
  h ^= length;
  // fmix32: every input bit reaches the low bits the table masks
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash of bytes [start, start + length) of `src`. */
export function hashBytes(src: Uint8Array, start: number, length: number, seed: number): number {
  let h = seed | 0;
  let p = start;
  const end = start + length;
  for (; p + 4 <= end; p += 4) h = round(h, src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16) | (src[p + 3]! << 24));
  if (p < end) {
    let tail = src[p]!;
    if (p + 1 < end) tail |= src[p + 1]! << 8;
    if (p + 2 < end) tail |= src[p + 2]! << 16;
    h ^= mixBlock(tail);
  }
  return finish(h, length);
}

function hashEncoded(key: string, seed: number): number {
  const length = encodeKey(key); // may replace `scratch`: read it after
  return hashBytes(scratch, 0, length, seed);
}

/** The hash of `key`'s WTF-8 bytes. */
export function hashString(key: string, seed: number): number {
  const n = key.length;
  let h = seed | 0;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const c0 = key.charCodeAt(i);
    const c1 = key.charCodeAt(i + 1);
    const c2 = key.charCodeAt(i + 2);
    const c3 = key.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) > 0x7f) return hashEncoded(key, seed);
    h = round(h, c0 | (c1 << 8) | (c2 << 16) | (c3 << 24));
  }
  if (i < n) {
    let tail = 0;
    for (let k = 0; i + k < n; k++) {
      const c = key.charCodeAt(i + k);
      if (c > 0x7f) return hashEncoded(key, seed);
      tail |= c << (8 * k);
    }
    h ^= mixBlock(tail);
  }
  return finish(h, n);
}

/**
 * Bytes [p, min(p + 4, end)) of `src` as one little-endian int32, zeros past `end`: how a bucket
 * keeps its inline bytes, so that a key compares four bytes at a time (on any host byte order).
 */
function word(src: Uint8Array, p: number, end: number): number {
  if (p + 4 <= end) return src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16) | (src[p + 3]! << 24);
  if (p >= end) return 0;
  let w = src[p]!;
  if (p + 1 < end) w |= src[p + 1]! << 8;
  if (p + 2 < end) w |= src[p + 2]! << 16;
  return w;
}

export class KeyIndex {
  /** the hash seed: `getHashed` takes hashes made with it */
  readonly seed: number;
  #mask: number;
  /** per bucket i, from STRIDE * i: hash, slot (or EMPTY), byte length, inline bytes */
  #table: Int32Array;
  /** per bucket: the key */
  #keys: (string | undefined)[];
  /** per bucket: the key's bytes, when longer than INLINE_BYTES */
  #long: (Uint8Array | undefined)[];
  #size = 0;

  /** @param [seed] hash seed @default KEY_HASH_SEED (random per process) */
  constructor(seed: number = KEY_HASH_SEED) {
    this.seed = seed | 0;
    this.#mask = MIN_CAPACITY - 1;
    this.#table = KeyIndex.#emptyTable(MIN_CAPACITY);
    this.#keys = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
    this.#long = new Array<Uint8Array | undefined>(MIN_CAPACITY).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** The slot stored for `key` (a non-negative integer), or undefined. */
  get(key: string): number | undefined {
    const bucket = this.#find(key, hashString(key, this.seed));
    return bucket < 0 ? undefined : this.#table[bucket * STRIDE + VALUE]!;
  }

  /** The bucket holding `key` (hash `h`), or -1 - the empty bucket that ends its probe run. */
  #find(key: string, h: number): number {
    const mask = this.#mask;
    const table = this.#table;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      if (table[i * STRIDE + VALUE] === EMPTY) return -1 - i;
      if (table[i * STRIDE + HASH] === h && this.#keys[i] === key) return i;
    }
  }

  /**
   * The slot stored for the key whose UTF-8 bytes are [start, start + length) of `src`, or -1.
   * The bytes must be well-formed UTF-8 (report-frame.ts checks every key of a frame).
   */
  getBytes(src: Uint8Array, start: number, length: number): number {
    return this.getHashed(src, start, length, hashBytes(src, start, length, this.seed));
  }

  /** As `getBytes`, with the bytes' hash `h` (`hashBytes` under this index's `seed`) known. */
  getHashed(src: Uint8Array, start: number, length: number, h: number): number {
    const mask = this.#mask;
    const table = this.#table;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const at = i * STRIDE;
      const v = table[at + VALUE]!;
      if (v === EMPTY) return EMPTY;
      if (table[at + HASH] === h && table[at + LENGTH] === length && this.#sameBytes(i, src, start, length)) return v;
    }
  }

  #sameBytes(bucket: number, src: Uint8Array, start: number, length: number): boolean {
    if (length > INLINE_BYTES) {
      const stored = this.#long[bucket]!;
      for (let k = 0; k < length; k++) if (stored[k] !== src[start + k]) return false;
      return true;
    }
    // four bytes per compare (a key's last word holds zeros past its end, as `word` reads it)
    const table = this.#table;
    const end = start + length;
    let at = bucket * STRIDE + INLINE;
    for (let p = start; p < end; p += 4, at++) if (table[at] !== word(src, p, end)) return false;
    return true;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Stores `value` (a non-negative integer below 2^31) for `key`. */
  set(key: string, value: number): this {
    // load ≤ MAX_LOAD: at most load a tracked key takes 2.5 probes on average (1.5 at 1/2) in a
    // table half the size, and most lookups miss the core's cache for the bucket they read: the
    // smaller table costs the aggregator less per record (test/bench/aggregator-ab.ts compares)
    if ((this.#size + 1) * MAX_LOAD_DENOMINATOR > (this.#mask + 1) * MAX_LOAD_NUMERATOR)
      this.#resize((this.#mask + 1) * 2);
    const h = hashString(key, this.seed);
    const table = this.#table;
    const found = this.#find(key, h);
    if (found >= 0) {
      table[found * STRIDE + VALUE] = value;
      return this;
    }
    const i = -1 - found;
    const at = i * STRIDE;
    table[at + HASH] = h;
    table[at + VALUE] = value;
    this.#keys[i] = key;
    const length = encodeKey(key);
    table[at + LENGTH] = length;
    if (length <= INLINE_BYTES) {
      // the words a compare reads: the key's bytes, zeros past its end (words after are never read)
      for (let w = 0; w * 4 < length; w++) table[at + INLINE + w] = word(scratch, w * 4, length);
    } else this.#long[i] = scratch.slice(0, length);
    this.#size++;
    return this;
  }

  /** Removes `key`; true when it was there. */
  delete(key: string): boolean {
    const i = this.#find(key, hashString(key, this.seed));
    if (i < 0) return false;
    const mask = this.#mask;
    const table = this.#table;
    // backward-shift deletion: move later entries of the probe run into the hole, so lookups
    // never need tombstones (Knuth, TAOCP vol. 3, 6.4 Algorithm R)
    let hole = i;
    for (let j = (hole + 1) & mask; table[j * STRIDE + VALUE] !== EMPTY; j = (j + 1) & mask) {
      const home = table[j * STRIDE + HASH]! & mask;
      // the entry at j may fill the hole unless its home lies cyclically in (hole, j]
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      table.copyWithin(hole * STRIDE, j * STRIDE, j * STRIDE + STRIDE);
      this.#keys[hole] = this.#keys[j];
      this.#long[hole] = this.#long[j];
      hole = j;
    }
    table[hole * STRIDE + VALUE] = EMPTY;
    this.#keys[hole] = undefined;
    this.#long[hole] = undefined;
    this.#size--;
    return true;
  }

  clear(): void {
    this.#table = KeyIndex.#emptyTable(this.#mask + 1);
    this.#keys.fill(undefined);
    this.#long.fill(undefined);
    this.#size = 0;
  }

  /** [key, slot] pairs in table order. Do not modify the index while iterating: copy first. */
  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (let i = 0; i <= this.#mask; i++) {
      const v = this.#table[i * STRIDE + VALUE]!;
      if (v !== EMPTY) yield [this.#keys[i]!, v];
    }
  }

  static #emptyTable(capacity: number): Int32Array {
    const table = new Int32Array(STRIDE * capacity);
    for (let i = VALUE; i < table.length; i += STRIDE) table[i] = EMPTY;
    return table;
  }

  #resize(capacity: number): void {
    const old = this.#table;
    const keys = this.#keys;
    const long = this.#long;
    const mask = capacity - 1;
    const table = KeyIndex.#emptyTable(capacity);
    this.#keys = new Array<string | undefined>(capacity).fill(undefined);
    this.#long = new Array<Uint8Array | undefined>(capacity).fill(undefined);
    for (let i = 0; i < keys.length; i++) {
      if (old[i * STRIDE + VALUE] === EMPTY) continue;
      for (let j = old[i * STRIDE + HASH]! & mask; ; j = (j + 1) & mask) {
        if (table[j * STRIDE + VALUE] !== EMPTY) continue;
        table.set(old.subarray(i * STRIDE, i * STRIDE + STRIDE), j * STRIDE);
        this.#keys[j] = keys[i];
        this.#long[j] = long[i];
        break;
      }
    }
    this.#mask = mask;
    this.#table = table;
  }
}
