/**
 * The bounded local cache of hot values: a Map from key to an entry on an intrusive doubly
 * linked recency list (most recent after the sentinel), plus a per-entry expiry. Memory follows
 * what is held, never the bound: an entry costs one Map slot and one small node, and a Map
 * gives its table back as it empties, whereas an array-backed LRU (such as mnemonist's LRUMap)
 * allocates its key, value and pointer arrays for `maxEntries` up front. A Map keeps
 * keys like `__proto__` and `constructor` ordinary. Moving an entry to the front is six pointer
 * writes, no allocation.
 *
 * Each entry is a caller-owned `CacheSlot` object (the client passes the key's hot-state entry),
 * filled by `set` and emptied by every removal (eviction, expiry, delete, clear). So a caller
 * holding the slot reads the value, and a ready-made resolved Promise of it, without a lookup
 * here: a slot with a `promise` is exactly a slot this cache holds. Recency is whatever the
 * caller reports through `touch` (the client does at most once per key per millisecond).
 */
import { DEFAULT_CLIENT_OPTIONS } from '../options.ts';

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

/** A place on the recency list; the sentinel's `newer` is the most recent, its `older` the least. */
interface Node {
  key: string;
  slot: CacheSlot;
  newer: Node;
  older: Node;
}

export class LocalCache {
  readonly maxEntries: number;
  readonly #map = new Map<string, Node>();
  readonly #head: Node;
  #evictions = 0;
  #expirations = 0;

  constructor(options: LocalCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_CLIENT_OPTIONS.maxEntries;
    if (!Number.isInteger(maxEntries) || maxEntries < 1)
      throw new TypeError(`maxEntries must be a positive integer, got ${String(maxEntries)}`);
    this.maxEntries = maxEntries;
    const head = { key: '', slot: emptySlot() } as Node;
    head.newer = head;
    head.older = head;
    this.#head = head;
  }

  /** The value of `key` if present and `now < keepUntil`, else MISS (an expired entry is dropped). */
  get(key: string, now: number): unknown {
    const node = this.#map.get(key);
    if (node === undefined) return MISS;
    if (now >= node.slot.keepUntil) {
      this.delete(key);
      this.#expirations++;
      return MISS;
    }
    this.#toFront(node);
    return node.slot.value;
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
    const node = this.#map.get(key);
    if (node !== undefined) {
      // a new slot for the key empties the one it replaces (not an eviction)
      if (node.slot !== slot) empty(node.slot);
      node.slot = slot;
      this.#toFront(node);
      return;
    }
    if (this.#map.size >= this.maxEntries) {
      const lru = this.#head.older;
      this.#unlink(lru);
      this.#map.delete(lru.key);
      if (lru.slot !== slot) empty(lru.slot);
      this.#evictions++;
    }
    const head = this.#head;
    const fresh: Node = { key, slot, newer: head.newer, older: head };
    head.newer.older = fresh;
    head.newer = fresh;
    this.#map.set(key, fresh);
  }

  /** Marks the key most recently used (no expiry check). */
  touch(key: string): void {
    const node = this.#map.get(key);
    if (node !== undefined) this.#toFront(node);
  }

  delete(key: string): boolean {
    const node = this.#map.get(key);
    if (node === undefined) return false;
    this.#map.delete(key);
    this.#unlink(node);
    empty(node.slot);
    return true;
  }

  has(key: string): boolean {
    return this.#map.has(key);
  }

  clear(): void {
    for (const node of this.#map.values()) empty(node.slot);
    this.#map.clear();
    this.#head.newer = this.#head;
    this.#head.older = this.#head;
  }

  #unlink(node: Node): void {
    node.older.newer = node.newer;
    node.newer.older = node.older;
  }

  #toFront(node: Node): void {
    const head = this.#head;
    if (head.newer === node) return;
    this.#unlink(node);
    node.newer = head.newer;
    node.older = head;
    head.newer.older = node;
    head.newer = node;
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
