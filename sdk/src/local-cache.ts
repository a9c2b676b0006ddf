/**
 * The bounded local cache of hot values: mnemonist's LRU map (Map-backed, so keys like
 * `__proto__` and `constructor` are ordinary keys; its LRUCache stores keys in a plain object
 * and breaks on them) plus a per-entry expiry. The only module that imports mnemonist.
 */
import { LRUMapWithDelete } from 'mnemonist';

/** What `get` returns for an absent or expired entry (values themselves may be `undefined`). */
export const MISS: unique symbol = Symbol('hotkey.miss');

interface Entry {
  value: unknown;
  expiresAt: number;
}

export interface LocalCacheOptions {
  /** values kept at most; the least recently used one leaves first @default 10000 */
  maxEntries?: number;
}

export class LocalCache {
  readonly maxEntries: number;
  readonly #map: LRUMapWithDelete<string, Entry>;
  #evictions = 0;
  #expirations = 0;

  constructor(options: LocalCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new TypeError(`maxEntries must be a positive integer, got ${String(maxEntries)}`);
    this.maxEntries = maxEntries;
    this.#map = new LRUMapWithDelete<string, Entry>(maxEntries);
  }

  /** The value of `key` if present and `now < expiresAt`, else MISS (an expired entry is dropped). */
  get(key: string, now: number): unknown {
    const entry = this.#map.get(key);
    if (entry === undefined) return MISS;
    if (now >= entry.expiresAt) {
      this.#map.delete(key);
      this.#expirations++;
      return MISS;
    }
    return entry.value;
  }

  /** Stores a value until `expiresAt` (same clock as `get`); a full cache drops its LRU entry. */
  set(key: string, value: unknown, expiresAt: number): void {
    const popped = this.#map.setpop(key, { value, expiresAt });
    if (popped !== null && popped.evicted) this.#evictions++;
  }

  delete(key: string): boolean {
    return this.#map.delete(key);
  }

  has(key: string): boolean {
    return this.#map.has(key);
  }

  clear(): void {
    this.#map.clear();
  }

  get size(): number {
    return this.#map.size;
  }

  /** entries dropped to make room for newer ones */
  get evictions(): number {
    return this.#evictions;
  }

  /** entries dropped because their lifetime ended */
  get expirations(): number {
    return this.#expirations;
  }
}
