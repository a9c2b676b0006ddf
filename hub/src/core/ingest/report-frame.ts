/**
 * A Report frame read in place: the hub's ingest path for the one frame SDKs send most.
 *
 * `decodeClientMessage` builds a JS string per key and an array per field: at millions of records
 * per second that is most of the decode's cost and most of the hub's garbage, while almost every
 * key is one the aggregator already tracks. `readReport` instead checks the frame's bytes once,
 * and a `ReportFrame` then walks its records as (key bytes, count) pairs: the aggregator looks a
 * key up by its bytes (key-index.ts) and decodes a string only for a key it does not track yet.
 *
 * Strictness: `readReport` accepts only the plain shape every SDK writes — a map holding exactly
 * `t` (fixint 3), `keys` (strings), `counts` (unsigned integers) and optionally both `hits` and
 * `loads`, fields in any order, each once, nothing after the map — and only when every check of
 * `decodeClientMessage` passes on it: frame size, array lengths and their equality, every key 1
 * to MAX_KEY_LENGTH UTF-16 code units long (counted exactly from the UTF-8), every count an
 * integer in [0, MAX_COUNT]. Keys must be well-formed UTF-8, so that their bytes and the decoded
 * string correspond one to one. For anything else — other valid encodings (a float count, an
 * extra field, nil), or any fault — it returns undefined and the caller decodes the frame with
 * `decodeClientMessage`, which accepts it or throws the error it always threw. The fast path thus
 * never accepts a frame the protocol refuses, nor reads one differently.
 */
import { MAX_COUNT, MAX_FRAME_BYTES, MAX_KEY_LENGTH, MAX_REPORT_KEYS, MsgType } from '@hotkey/sdk/protocol';
import { finish, KEY_HASH_SEED, mixBlock, round } from '../aggregate/key-index.ts';

const T = 0;
const KEYS = 1;
const COUNTS = 2;
const HITS = 3;
const LOADS = 4;
/** each field name as its msgpack fixstr */
const FIELD_NAMES = ['t', 'keys', 'counts', 'hits', 'loads'].map((name) => [
  0xa0 | name.length,
  ...[...name].map((c) => c.charCodeAt(0)),
]);
const WITHOUT_SAVINGS = (1 << T) | (1 << KEYS) | (1 << COUNTS);
const WITH_SAVINGS = WITHOUT_SAVINGS | (1 << HITS) | (1 << LOADS);

const decoder = new TextDecoder();

/** Where a saved cursor stood (`ReportFrame.save`). */
export interface ReportPosition {
  readonly index: number;
  readonly keyAt: number;
  readonly countAt: number;
  readonly hitAt: number;
  readonly loadAt: number;
}

/**
 * A checked Report frame and a cursor over its records. `next()` reads record `index` into
 * `keyStart`/`keyLength` (its UTF-8 bytes in `bytes`), `count`, `hits` and `loads` (0 without
 * savings), and moves on. Only `readReport` makes one.
 */
export class ReportFrame {
  readonly bytes: Uint8Array;
  /** records in the frame */
  readonly length: number;
  /** per record: its key's hash (key-index.ts `hashBytes`) under `seed`, computed while checking */
  readonly hashes: readonly number[];
  readonly seed: number;
  /** the frame carries `hits` and `loads` */
  readonly savings: boolean;
  /** the record `next()` reads */
  index = 0;
  keyStart = 0;
  keyLength = 0;
  count = 0;
  hits = 0;
  loads = 0;
  #keyAt: number;
  #countAt: number;
  #hitAt: number;
  #loadAt: number;
  /** the integer #readCount read */
  #value = 0;

  constructor(
    bytes: Uint8Array,
    hashes: number[],
    seed: number,
    keyAt: number,
    countAt: number,
    hitAt: number,
    loadAt: number,
  ) {
    this.bytes = bytes;
    this.length = hashes.length;
    this.hashes = hashes;
    this.seed = seed;
    this.savings = hitAt >= 0;
    this.#keyAt = keyAt;
    this.#countAt = countAt;
    this.#hitAt = hitAt;
    this.#loadAt = loadAt;
  }

  next(): void {
    const bytes = this.bytes;
    let p = this.#keyAt;
    const b = bytes[p]!;
    let length: number;
    if (b <= 0xbf) {
      length = b & 0x1f;
      p += 1;
    } else if (b === 0xd9) {
      length = bytes[p + 1]!;
      p += 2;
    } else if (b === 0xda) {
      length = (bytes[p + 1]! << 8) | bytes[p + 2]!;
      p += 3;
    } else {
      length = readUint32(bytes, p + 1);
      p += 5;
    }
    this.keyStart = p;
    this.keyLength = length;
    this.#keyAt = p + length;
    this.#countAt = this.#readCount(this.#countAt);
    this.count = this.#value;
    if (this.#hitAt >= 0) {
      this.#hitAt = this.#readCount(this.#hitAt);
      this.hits = this.#value;
      this.#loadAt = this.#readCount(this.#loadAt);
      this.loads = this.#value;
    }
    this.index++;
  }

  /** The current record's key as a string (a fresh one: call it only when needed). */
  key(): string {
    return decodeKey(this.bytes, this.keyStart, this.keyLength);
  }

  save(): ReportPosition {
    return { index: this.index, keyAt: this.#keyAt, countAt: this.#countAt, hitAt: this.#hitAt, loadAt: this.#loadAt };
  }

  restore(position: ReportPosition): void {
    this.index = position.index;
    this.#keyAt = position.keyAt;
    this.#countAt = position.countAt;
    this.#hitAt = position.hitAt;
    this.#loadAt = position.loadAt;
  }

  /** Reads the unsigned integer at `p` into #value; returns the position after it. */
  #readCount(p: number): number {
    const bytes = this.bytes;
    const b = bytes[p]!;
    if (b <= 0x7f) {
      this.#value = b;
      return p + 1;
    }
    if (b === 0xcc) {
      this.#value = bytes[p + 1]!;
      return p + 2;
    }
    if (b === 0xcd) {
      this.#value = (bytes[p + 1]! << 8) | bytes[p + 2]!;
      return p + 3;
    }
    this.#value = readUint32(bytes, p + 1);
    return p + 5;
  }
}

function readUint32(bytes: Uint8Array, p: number): number {
  return ((bytes[p]! << 24) | (bytes[p + 1]! << 16) | (bytes[p + 2]! << 8) | bytes[p + 3]!) >>> 0;
}

/** Well-formed UTF-8 bytes [start, start + length) of `bytes` as a string. */
export function decodeKey(bytes: Uint8Array, start: number, length: number): string {
  return decoder.decode(bytes.subarray(start, start + length));
}

/**
 * The frame as a ReportFrame, or undefined when it is not a Report of the plain shape, or breaks
 * any rule (the caller then decodes it with `decodeClientMessage`: see the note at the top).
 * @param [seed=KEY_HASH_SEED] the seed of the key hashes
 */
export function readReport(bytes: Uint8Array, seed = KEY_HASH_SEED): ReportFrame | undefined {
  const end = bytes.byteLength;
  if (end > MAX_FRAME_BYTES || end === 0) return undefined;
  const head = bytes[0]!;
  if (head !== 0x83 && head !== 0x85) return undefined; // fixmap of 3 or 5 fields
  let p = 1;
  let seen = 0;
  let records = -1;
  let hashes: number[] | undefined;
  const at = [-1, -1, -1, -1, -1];
  for (let f = 0; f < (head & 0x0f); f++) {
    const field = fieldAt(bytes, p);
    if (field < 0 || (seen & (1 << field)) !== 0) return undefined;
    seen |= 1 << field;
    p += FIELD_NAMES[field]!.length;
    if (p >= end) return undefined;
    if (field === T) {
      if (bytes[p] !== MsgType.Report) return undefined;
      p++;
      continue;
    }
    const b = bytes[p]!;
    let n: number;
    if (b >= 0x90 && b <= 0x9f) {
      n = b & 0x0f;
      p += 1;
    } else if (b === 0xdc && p + 3 <= end) {
      n = (bytes[p + 1]! << 8) | bytes[p + 2]!;
      p += 3;
    } else if (b === 0xdd && p + 5 <= end) {
      n = readUint32(bytes, p + 1);
      p += 5;
    } else return undefined;
    if (n > MAX_REPORT_KEYS || (records >= 0 && n !== records)) return undefined;
    records = n;
    at[field] = p;
    if (field === KEYS) {
      // every key takes 2 bytes at least: a frame too short for its count fails here, before the
      // array is sized by that count
      if (2 * n > end - p) return undefined;
      // a plain array: on the JS heap, where a typed array's backing store costs a malloc per
      // frame; sized once (`push` grew it step by step, copying)
      hashes = new Array<number>(n).fill(0);
      p = skipKeys(bytes, p, n, hashes, seed);
    } else p = skipCounts(bytes, p, n);
    if (p < 0) return undefined;
  }
  if (p !== end || seen !== (head === 0x83 ? WITHOUT_SAVINGS : WITH_SAVINGS)) return undefined;
  return new ReportFrame(bytes, hashes!, seed, at[KEYS]!, at[COUNTS]!, at[HITS]!, at[LOADS]!);
}

/** Which field name starts at `p`, or -1. */
function fieldAt(bytes: Uint8Array, p: number): number {
  for (let field = 0; field < FIELD_NAMES.length; field++) {
    const name = FIELD_NAMES[field]!;
    let k = 0;
    while (k < name.length && bytes[p + k] === name[k]) k++;
    if (k === name.length) return field;
  }
  return -1;
}

/**
 * Past `n` keys from `p` (each a string of 1 to MAX_KEY_LENGTH UTF-16 units, well-formed
 * UTF-8), or -1; writes key i's hash to `hashes[i]`.
 */
function skipKeys(bytes: Uint8Array, p: number, n: number, hashes: number[], seed: number): number {
  const end = bytes.byteLength;
  for (let i = 0; i < n; i++) {
    if (p >= end) return -1;
    const b = bytes[p]!;
    let length: number;
    if (b >= 0xa0 && b <= 0xbf) {
      length = b & 0x1f;
      p += 1;
    } else if (b === 0xd9 && p + 2 <= end) {
      length = bytes[p + 1]!;
      p += 2;
    } else if (b === 0xda && p + 3 <= end) {
      length = (bytes[p + 1]! << 8) | bytes[p + 2]!;
      p += 3;
    } else if (b === 0xdb && p + 5 <= end) {
      length = readUint32(bytes, p + 1);
      p += 5;
    } else return -1;
    const stop = p + length;
    if (stop > end) return -1;
    // key-index.ts `hashBytes`, inlined: the same reads tell whether the key is ASCII
    let h = seed;
    let high = 0;
    let q = p;
    for (; q + 4 <= stop; q += 4) {
      const block = bytes[q]! | (bytes[q + 1]! << 8) | (bytes[q + 2]! << 16) | (bytes[q + 3]! << 24);
      high |= block;
      h = round(h, block);
    }
    if (q < stop) {
      let tail = bytes[q]!;
      if (q + 1 < stop) tail |= bytes[q + 1]! << 8;
      if (q + 2 < stop) tail |= bytes[q + 2]! << 16;
      high |= tail;
      h ^= mixBlock(tail);
    }
    hashes[i] = finish(h, length);
    // ASCII (the common case): one unit per byte
    const units = (high & 0x80808080) === 0 ? length : utf16Length(bytes, p, stop);
    if (units < 1 || units > MAX_KEY_LENGTH) return -1;
    p = stop;
  }
  return p;
}

/** Past `n` unsigned integers in [0, MAX_COUNT] from `p`, or -1. */
function skipCounts(bytes: Uint8Array, p: number, n: number): number {
  const end = bytes.byteLength;
  for (let i = 0; i < n; i++) {
    if (p >= end) return -1;
    const b = bytes[p]!;
    if (b <= 0x7f) p += 1;
    else if (b === 0xcc) p += 2;
    else if (b === 0xcd) p += 3;
    else if (b === 0xce && p + 5 <= end && readUint32(bytes, p + 1) <= MAX_COUNT) p += 5;
    else return -1;
    if (p > end) return -1;
  }
  return p;
}

/**
 * UTF-16 code units of the string bytes [p, end) decode to, or -1 when they are not well-formed
 * UTF-8 (Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
 */
export function utf16Length(bytes: Uint8Array, p: number, end: number): number {
  let units = 0;
  while (p < end) {
    const b = bytes[p]!;
    if (b <= 0x7f) {
      p++;
      units++;
      continue;
    }
    let extra: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) extra = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      extra = 2;
      if (b === 0xe0) low = 0xa0;
      else if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      extra = 3;
      if (b === 0xf0) low = 0x90;
      else if (b === 0xf4) high = 0x8f;
    } else return -1;
    if (p + extra >= end) return -1;
    const second = bytes[p + 1]!;
    if (second < low || second > high) return -1;
    for (let k = 2; k <= extra; k++) {
      const c = bytes[p + k]!;
      if (c < 0x80 || c > 0xbf) return -1;
    }
    p += extra + 1;
    units += extra === 3 ? 2 : 1;
  }
  return units;
}
