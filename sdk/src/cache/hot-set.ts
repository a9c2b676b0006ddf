/**
 * The keys this instance currently treats as hot, each remembering the hub that promoted it.
 *
 * An entry lives until `until`: the promotion's lifetime (renewed by each Promote or Snapshot),
 * shortened to `now + maxStaleMs` when its hub is cut off, so that a value nobody can invalidate
 * any more is served for a bounded time only. `generation` changes whenever the cached value of
 * the key stops being trustworthy (invalidation, resync); a load that started under an older
 * generation must not be cached. Bounded: past `maxKeys` the lowest-QPS of the oldest promotions is dropped.
 *
 * A cached value is served only while `lease.until` is ahead of the clock: the lease of the link
 * to the hub that vouches for the key (client/links.ts), one object per link generation shared by
 * all its keys, so a renewal is one write and a reconnect (a new lease object) orphans every value
 * cached under the old link: a promotion or snapshot under the new one drops it.
 *
 * An entry is also the key's local-cache slot (`CacheSlot`): one lookup here answers both "is it
 * hot?" and "what is its cached value?" on the `get()` hot path. The cache fills and empties it.
 */
import { DEFAULT_CLIENT_OPTIONS } from '../options.ts';
import type { HotEntry, Promotion } from '../promotion.ts';
import type { RuleKind } from '../rules.ts';
import type { CacheSlot } from './local-cache.ts';

/** A hub link's lease as this instance sees it: values it vouches for are served while `until` > clock. */
export interface Lease {
  until: number;
}

/** The lease of an entry no link vouches for (never current). */
export const NO_LEASE: Lease = Object.freeze({ until: Number.NEGATIVE_INFINITY });

export interface HotState extends CacheSlot {
  key: string;
  /** id of the hub whose promotion or snapshot put the key here */
  hub: string;
  /** clock time after which the entry is gone */
  until: number;
  cacheTtlMs: number;
  cache: boolean;
  /** cluster-wide accesses per second at promotion */
  qps: number;
  /** which accesses made it hot (the promotion's rule kind) */
  kind: RuleKind;
  /** copies of the key that serve reads, itself included (Promote's `replicas`; 1: none) */
  replicas: number;
  generation: number;
  /** the lease of the link its hub promoted it on: its cached value is served only while current */
  lease: Lease;
  /**
   * The key's counter slot in the client's access window when last counted (-1: none): a hint
   * that spares `get()` a second lookup, checked against the window on each use because slots
   * are recycled. The client keeps it; here it only starts at -1.
   */
  counterSlot: number;
  /** the cached value is valid (cacheTtlMs) until then; past it, only stale-if-error may serve it (client/read/loads.ts) */
  freshUntil: number;
  /** stale-if-error: no reload is tried before then (a reload just failed); 0 when none did */
  retryAt: number;
  /**
   * Promoted by this instance alone, on a surge it saw (client/read/surge-local.ts), not by a hub:
   * served under the lease of the key's owner hub until that hub promotes it (which clears this)
   * or `until` passes.
   */
  local: boolean;
  /**
   * Protocol 3 (client/invalidate/holds.ts): the owner hub's answer to this entry's registration while it is
   * awaited; a load begun before it waits for it before filling. Undefined once recorded (or none
   * was needed).
   */
  hold: Promise<number | undefined> | undefined;
  /** the lease of the link this entry is registered on (undefined: not registered, or no more) */
  heldOn: Lease | undefined;
}

const NONE: readonly HotState[] = Object.freeze([]);
/** oldest entries compared when one must go for a new promotion */
const EVICTION_SAMPLE = 16;

export interface HotSetOptions {
  /** hot keys kept at most; a promotion past it drops the lowest-QPS of the 16 oldest entries @default 65536 (DEFAULT_CLIENT_OPTIONS.maxHotKeys) */
  maxKeys?: number;
}

export class HotSet {
  readonly maxKeys: number;
  readonly #map = new Map<string, HotState>();
  #generation = 0;
  /** no entry ends before this (a lower bound): `expire` skips the walk until then */
  #nextExpiry = Infinity;

  constructor(options: HotSetOptions = {}) {
    const maxKeys = options.maxKeys ?? DEFAULT_CLIENT_OPTIONS.maxHotKeys;
    if (!Number.isInteger(maxKeys) || maxKeys < 1)
      throw new TypeError(`maxKeys must be a positive integer, got ${String(maxKeys)}`);
    this.maxKeys = maxKeys;
  }

  get(key: string): HotState | undefined {
    return this.#map.get(key);
  }

  get size(): number {
    return this.#map.size;
  }

  keys(): IterableIterator<string> {
    return this.#map.keys();
  }

  /**
   * Marks `key` hot for `ttlMs` from `now`, vouched for by `lease`. A renewal under the same lease
   * keeps the generation (the cached value is still good) unless caching was switched off; one
   * under another lease (a reconnect, another hub) starts a new generation and says `reset`: the
   * caller drops the cached value, which nobody vouches for any more. Returns the entry and
   * whether it is new.
   */
  promote(
    hub: string,
    key: string,
    p: Promotion,
    now: number,
    lease: Lease = NO_LEASE,
  ): { state: HotState; added: boolean; evicted?: string; reset?: boolean } {
    const existing = this.#map.get(key);
    if (existing !== undefined) {
      let reset = false;
      if (existing.lease !== lease) {
        existing.lease = lease;
        existing.generation = ++this.#generation;
        reset = true;
      }
      existing.hub = hub;
      existing.local = false;
      existing.until = now + p.ttlMs;
      if (existing.until < this.#nextExpiry) this.#nextExpiry = existing.until;
      if (existing.cache && !p.cache) existing.generation = ++this.#generation;
      existing.cache = p.cache;
      existing.cacheTtlMs = p.cacheTtlMs;
      existing.qps = p.qps;
      existing.kind = p.kind ?? 'read';
      existing.replicas = p.replicas ?? 1;
      return reset ? { state: existing, added: false, reset } : { state: existing, added: false };
    }
    let evicted: string | undefined;
    if (this.#map.size >= this.maxKeys) {
      evicted = this.#leastValuable();
      this.#map.delete(evicted);
    }
    const state: HotState = {
      key,
      hub,
      until: now + p.ttlMs,
      cacheTtlMs: p.cacheTtlMs,
      cache: p.cache,
      qps: p.qps,
      kind: p.kind ?? 'read',
      replicas: p.replicas ?? 1,
      generation: ++this.#generation,
      lease,
      counterSlot: -1,
      value: undefined,
      promise: undefined,
      expiresAt: 0,
      keepUntil: 0,
      usedAt: Number.NaN,
      freshUntil: 0,
      retryAt: 0,
      local: false,
      hold: undefined,
      heldOn: undefined,
    };
    this.#map.set(key, state);
    if (state.until < this.#nextExpiry) this.#nextExpiry = state.until;
    return evicted === undefined ? { state, added: true } : { state, added: true, evicted };
  }

  /**
   * The entry to drop for a new one: the lowest-QPS of the EVICTION_SAMPLE oldest promotions (the
   * oldest among equals). Dropping the oldest alone would drop a long-hot real key for any newcomer;
   * the hub already caps what one reporter can promote, so this only orders what is left.
   */
  #leastValuable(): string {
    let victim: HotState | undefined;
    let n = 0;
    for (const state of this.#map.values()) {
      if (victim === undefined || state.qps < victim.qps) victim = state;
      if (++n >= EVICTION_SAMPLE) break;
    }
    return victim!.key;
  }

  /** Drops the key; returns whether it was hot. */
  demote(key: string): boolean {
    return this.#map.delete(key);
  }

  /** The key's cached value can no longer be trusted: a new generation. Returns whether it is hot. */
  invalidate(key: string): boolean {
    const state = this.#map.get(key);
    if (state === undefined) return false;
    state.generation = ++this.#generation;
    return true;
  }

  /** Keys whose entry came from `hub`. */
  keysOf(hub: string): string[] {
    const out: string[] = [];
    for (const state of this.#map.values()) if (state.hub === hub) out.push(state.key);
    return out;
  }

  /** Invalidates every key of `hub` (after a sequence gap); returns them. */
  invalidateHub(hub: string): string[] {
    const keys = this.keysOf(hub);
    for (const key of keys) this.invalidate(key);
    return keys;
  }

  /**
   * Replaces every entry that came from `hub` with the snapshot's; returns the keys that were
   * dropped (hot before, absent from the snapshot) and all keys whose cached value must go.
   */
  replaceHub(
    hub: string,
    entries: readonly HotEntry[],
    now: number,
    lease: Lease = NO_LEASE,
  ): { removed: string[]; touched: string[] } {
    const previous = new Set(this.keysOf(hub));
    const touched = [...previous];
    for (const key of previous) this.#map.delete(key);
    for (const e of entries) {
      // an entry another hub promoted is replaced too: the snapshot is the newer word on it
      if (this.#map.has(e.key)) touched.push(e.key);
      this.#map.delete(e.key);
      previous.delete(e.key);
      const { ttlMs, cacheTtlMs, cache, qps, replicas, kind } = e;
      this.promote(hub, e.key, { ttlMs, cacheTtlMs, cache, qps, replicas, kind }, now, lease);
    }
    return { removed: [...previous], touched };
  }

  /** Cut off from `hub`: its entries live at most `maxStaleMs` more. */
  markStale(hub: string, now: number, maxStaleMs: number): number {
    let n = 0;
    const deadline = now + maxStaleMs;
    if (deadline < this.#nextExpiry) this.#nextExpiry = deadline;
    for (const state of this.#map.values()) {
      if (state.hub === hub && state.until > deadline) {
        state.until = deadline;
        n++;
      }
    }
    return n;
  }

  /** Drops entries whose time is up; returns them. Walks the entries only once one may be due. */
  expire(now: number): readonly HotState[] {
    if (now < this.#nextExpiry) return NONE;
    const out: HotState[] = [];
    let next = Infinity;
    for (const state of this.#map.values()) {
      if (now >= state.until) out.push(state);
      else if (state.until < next) next = state.until;
    }
    for (const state of out) this.#map.delete(state.key);
    this.#nextExpiry = next;
    return out;
  }

  clear(): void {
    this.#map.clear();
    this.#nextExpiry = Infinity;
  }
}
