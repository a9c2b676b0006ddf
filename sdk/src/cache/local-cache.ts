/**
 * The bounded local cache of hot values: mnemonist's LRU map (Map-backed, so keys like
 * `__proto__` and `constructor` are ordinary keys; its LRUCache stores keys in a plain object
 * and breaks on them) plus a per-entry expiry. The only module that imports mnemonist, and it
 * loads only the one structure, by its subpath: the package root loads every structure
 * mnemonist has. Its subpaths are CommonJS-only exports, hence `createRequire`.
 *
 * An LRUMap allocates its key, value and pointer arrays for its capacity up front, so the map
 * starts at GROW_FROM entries and is rebuilt at twice its capacity when a new key finds it full
 * below `maxEntries` (capped there), and at half when deletes leave it under a quarter full:
 * memory follows what is held, not the bound. A rebuild re-inserts from least to most recent,
 * so recency is kept; each one copies a number of entries proportional to the inserts or
 * deletes since the last, so both stay amortised O(1).
 *
 * Each entry is a caller-owned `CacheSlot` object (the client passes the key's hot-state entry),
 * filled by `set` and emptied by every removal (eviction, expiry, delete, clear). So a caller
 * holding the slot reads the value, and a ready-made resolved Promise of it, without a lookup
 * here: a slot with a `promise` is exactly a slot this cache holds. Recency is whatever the
 * caller reports through `touch` (the client does at most once per key per millisecond).
 */
import { createRequire } from 'node:module';
// types only (erased): the root's typings name the class, its subpath's typings misdescribe the CommonJS export
import type { LRUMapWithDelete as LRUMapWithDeleteClass } from 'mnemonist';
import { DEFAULT_CLIENT_OPTIONS } from '../options.ts';

const LRUMapWithDelete: typeof LRUMapWithDeleteClass = createRequire(import.meta.url)('mnemonist/lru-map-with-delete');

/** The capacity the map starts at (or `maxEntries`, if smaller) and never shrinks below. */
const GROW_FROM = 64;

/** What `get` returns for an absent or expired entry (values themselves may be `undefined`). */
export const MISS: unique symbol = Symbol('hotkey.miss');

/** The fields a cached value lives in; empty (`promise === undefined`) when not cached. */
export interface CacheSlot {
  value: unknown;
  /** `Promise.resolve(value)`, made once per `set`; undefined when the slot is empty */
  promise: Promise<unknown> | undefined;
  /** until when the value is served straight away (a caller may move it, e.g. to refresh ahead) */
  expiresAt: number;
  /** until when the cache keeps the entry (≥ expiresAt: a caller may still serve it past expiresAt, e.g. stale-if-error) */
  keepUntil: number;
  /** the caller's clock reading when it last reported a use (`touch`) */
  usedAt: number;
}

export interface LocalCacheOptions {
  /** values kept at most; the least recently used one leaves first @default 10000 (DEFAULT_CLIENT_OPTIONS.maxEntries) */
  maxEntries?: number;
}

export function emptySlot(): CacheSlot {
  return { value: undefined, promise: undefined, expiresAt: 0, keepUntil: 0, usedAt: Number.NaN };
}

function empty(slot: CacheSlot): void {
  slot.value = undefined;
  slot.promise = undefined;
  slot.expiresAt = 0;
  slot.keepUntil = 0;
}

export class LocalCache {
  readonly maxEntries: number;
  #map: LRUMapWithDeleteClass<string, CacheSlot>;
  #evictions = 0;
  #expirations = 0;

  constructor(options: LocalCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_CLIENT_OPTIONS.maxEntries;
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new TypeError(`maxEntries must be a positive integer, got ${String(maxEntries)}`);
    this.maxEntries = maxEntries;
    this.#map = new LRUMapWithDelete<string, CacheSlot>(Math.min(GROW_FROM, maxEntries));
  }

  /** The value of `key` if present and `now < keepUntil`, else MISS (an expired entry is dropped). */
  get(key: string, now: number): unknown {
    const slot = this.#map.get(key);
    if (slot === undefined) return MISS;
    if (now >= slot.keepUntil) {
      this.delete(key);
      this.#expirations++;
      return MISS;
    }
    return slot.value;
  }

  /**
   * Stores a value until `expiresAt` (same clock as `get`), kept until `keepUntil`, in `slot`,
   * which becomes the key's entry; a full cache drops (and empties) its LRU entry. `value` must
   * not be a thenable (it is what a loader's promise resolved to).
   */
  set(key: string, value: unknown, expiresAt: number, slot: CacheSlot = emptySlot(), keepUntil = expiresAt): void {
    slot.value = value;
    slot.promise = Promise.resolve(value);
    slot.expiresAt = expiresAt;
    slot.keepUntil = Math.max(expiresAt, keepUntil);
    const map = this.#map;
    // only a map at maxEntries may evict: below it, a new key that finds the map full grows it
    if (map.size === map.capacity && map.capacity < this.maxEntries && !map.has(key))
      this.#rebuild(Math.min(map.capacity * 2, this.maxEntries));
    const popped = this.#map.setpop(key, slot);
    if (popped === null || popped.value === slot) return;
    empty(popped.value);
    if (popped.evicted) this.#evictions++;
  }

  /** Marks the key most recently used (no expiry check). */
  touch(key: string): void {
    this.#map.get(key);
  }

  delete(key: string): boolean {
    const map = this.#map;
    const slot = map.remove<undefined>(key);
    if (slot === undefined) return false;
    empty(slot);
    // halving at a quarter full leaves it half full: a rebuild either way needs many operations first
    if (map.capacity > GROW_FROM && map.size < map.capacity / 4)
      this.#rebuild(Math.max(Math.floor(map.capacity / 2), GROW_FROM));
    return true;
  }

  has(key: string): boolean {
    return this.#map.has(key);
  }

  clear(): void {
    for (const slot of this.#map.values()) empty(slot);
    this.#map = new LRUMapWithDelete<string, CacheSlot>(Math.min(GROW_FROM, this.maxEntries));
  }

  /** The same entries in a map of `capacity` (≥ size), least recent inserted first so recency is kept. */
  #rebuild(capacity: number): void {
    const old = this.#map;
    const keys: string[] = [];
    const slots: CacheSlot[] = [];
    // mnemonist iterates from most to least recent
    old.forEach((slot, key) => {
      keys.push(key);
      slots.push(slot);
    });
    const map = new LRUMapWithDelete<string, CacheSlot>(capacity);
    for (let i = keys.length - 1; i >= 0; i--) map.set(keys[i] as string, slots[i] as CacheSlot);
    this.#map = map;
  }

  get size(): number {
    return this.#map.size;
  }

  /** the number of entries the cache's arrays are sized for now: grows toward `maxEntries` as it fills */
  get capacity(): number {
    return this.#map.capacity;
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
