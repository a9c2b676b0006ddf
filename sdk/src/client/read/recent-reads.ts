/**
 * Recent cold reads an adapter may answer a hot load with: the reply of the read that a key's
 * surge began with, so that the load costs no second read of the store.
 *
 * A key nobody has seen is read once cold before anything can know it will surge. A client that
 * caches every key it reads (node-redis `clientSideCache`) serves the next reads from that first
 * reply; one that caches only hot keys reads the key a second time to load it. This keeps the
 * last few replies instead, never serving them, only handing one to the key's load — and only
 * while nothing this instance must hear about a write of the key may have been missed since the
 * read was sent:
 * - the adapter's `vouch` (its Redis tracking session that covers the key by broadcast from
 *   before the read: redis/tracking/node-tracker.ts) still lives and is the one the load runs under: an
 *   outside write of the key since would have dropped the entry (`drop`, through
 *   `hk.dropLocal`);
 * - the lease of the link to the key's owner hub at the send is still the owner's, still current:
 *   every write through the SDK is an invalidation that hub relays to this instance and acks only
 *   once applied here or this instance's lease lapsed (docs/concepts/consistency.md), and an applied
 *   invalidation drops the entry. A reconnect is a new lease object, an owner change another
 *   hub's; a sequence gap clears everything (dispatch.ts).
 * An invalidation that arrives while the reply is still on its way wins (the entry is gone when
 * the reply lands): https://github.com/redis/lettuce/issues/3481, on the read's side.
 *
 * Bounded: MAX_RECENT_READS entries and MAX_RECENT_BYTES of values (estimated, surge-local.ts's
 * estimate); the oldest go first. A value over MAX_RECENT_VALUE_BYTES is not kept.
 */
import type { Lease } from '../../cache/hot-set.ts';
import type { HubLinks } from '../links.ts';
import { estimateBytes } from './surge-local.ts';

/**
 * cold reads remembered at most. A surge's load follows its first read within a job, a round trip
 * or a slice (RECENT_SURGE_MS), so this covers a wrapped service's first reads up to ~5,000 cold
 * reads/s; past that a surge may cost its tracked load as well, one GET more
 */
export const MAX_RECENT_READS = 512;
/** estimated bytes of remembered values at most */
export const MAX_RECENT_BYTES = 1 << 20;
/** a value estimated over this is not remembered */
export const MAX_RECENT_VALUE_BYTES = 64 << 10;
/**
 * A key's read this soon after a kept reply of it landed is judged as arriving faster than the
 * key's round trips (surge-local.ts, as a read while an earlier one is unanswered is): one slice
 * of the default 1 s window. A flash key's reads at one instance come far closer than that (300/s
 * at each of 20 instances: ~3 ms); a key read that close twice here is at ≥ 10/s on this instance.
 */
export const RECENT_SURGE_MS = 100;

/** what a remembered read is vouched for by on the adapter's side (its tracking session) */
export interface ReadVouch {
  readonly live: boolean;
}

interface Entry {
  /** the read's reply while in flight; undefined once `value` holds it (the promise is let go) */
  reply: Promise<unknown> | undefined;
  value: unknown;
  vouch: ReadVouch;
  /** the adapter's scope of the read (its database), matched by the load */
  scope: number | undefined;
  lease: Lease;
  /** the write clock its link had received when it was sent (a registration's `since`: holds.ts) */
  w: number;
  /** estimated bytes of its value once answered (0 while in flight) */
  bytes: number;
  /** when its reply landed (the clock of `now`); NaN while in flight */
  answeredAt: number;
}

export class RecentReads {
  readonly #links: () => HubLinks;
  readonly #monoNow: () => number;
  /** in send order: the first is the oldest */
  readonly #map = new Map<string, Entry>();
  #bytes = 0;
  /** loads answered by a remembered reply (`loadAnswered`: taken, and the load's own checks passed) */
  used = 0;

  constructor(links: () => HubLinks, monoNow: () => number) {
    this.#links = links;
    this.#monoNow = monoNow;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The current lease of the link to `key`'s owner hub, or undefined (no owner, a lapsed lease). */
  #leaseOf(key: string, now: number): Lease | undefined {
    const lease = this.#links().ownerLink(key)?.lease;
    return lease !== undefined && lease.until > now ? lease : undefined;
  }

  /** The write clock when `key`'s kept read was sent, if one is kept: its load may take it, so it registers with this `since`. */
  sinceOf(key: string): number | undefined {
    return this.#map.size > 0 ? this.#map.get(key)?.w : undefined;
  }

  /** A cold read of `key` goes out now; `reply` is its reply. Remembered while its vouchers hold. */
  sent(key: string, vouch: ReadVouch, scope: number | undefined, reply: Promise<unknown>): void {
    const lease = this.#leaseOf(key, this.#monoNow());
    if (lease === undefined || !vouch.live) return;
    this.#delete(key);
    if (this.#map.size >= MAX_RECENT_READS) this.#delete(this.#map.keys().next().value!);
    const w = this.#links().ownerLink(key)?.w ?? 0;
    const entry: Entry = { reply, value: undefined, vouch, scope, lease, w, bytes: 0, answeredAt: Number.NaN };
    this.#map.set(key, entry);
    reply.then(
      (value) => {
        if (this.#map.get(key) !== entry) return;
        const bytes = estimateBytes(value);
        if (bytes > MAX_RECENT_VALUE_BYTES) return void this.#delete(key);
        entry.bytes = bytes;
        entry.value = value;
        entry.reply = undefined;
        if (Number.isNaN(entry.answeredAt)) entry.answeredAt = this.#monoNow();
        this.#bytes += bytes;
        while (this.#bytes > MAX_RECENT_BYTES) this.#delete(this.#map.keys().next().value!);
      },
      () => {
        if (this.#map.get(key) === entry) this.#delete(key);
      },
    );
  }

  /**
   * The reply of the last cold read of `key` (maybe still in flight), for its load under `vouch`
   * in `scope`, when it may answer that load now; taken: a load uses it once.
   */
  take(key: string, vouch: ReadVouch, scope: number | undefined): Promise<unknown> | undefined {
    const entry = this.#map.get(key);
    if (entry === undefined) return undefined;
    this.#delete(key);
    if (entry.vouch !== vouch || !vouch.live || entry.scope !== scope) return undefined;
    if (this.#leaseOf(key, this.#monoNow()) !== entry.lease) return undefined;
    return entry.reply ?? Promise.resolve(entry.value);
  }

  /**
   * A reply `take` handed over answered its load. Apart from `take`: the load checks it further
   * (the key's node still serves it, its TTL agrees) and may refuse it.
   */
  loadAnswered(): void {
    this.used++;
  }

  /**
   * `reply`, a kept read's, landed now: said by an adapter whose reaction to it runs before its
   * caller's (the caller may read the key again at once, before this part's own reaction runs).
   */
  answered(key: string, reply: Promise<unknown>): void {
    const entry = this.#map.size > 0 ? this.#map.get(key) : undefined;
    if (entry !== undefined && entry.reply === reply && Number.isNaN(entry.answeredAt))
      entry.answeredAt = this.#monoNow();
  }

  /**
   * Whether `key`'s kept reply landed less than RECENT_SURGE_MS ago (a read of it now comes
   * faster than the key's round trips: its load may take that reply). Only a hint: `take` checks
   * the vouchers.
   */
  answeredJustNow(key: string): boolean {
    const entry = this.#map.size > 0 ? this.#map.get(key) : undefined;
    return entry !== undefined && this.#monoNow() - entry.answeredAt < RECENT_SURGE_MS;
  }

  /** A write of `key` may have happened: its read can answer nothing any more. */
  drop(key: string): void {
    if (this.#map.size > 0) this.#delete(key);
  }

  clear(): void {
    this.#map.clear();
    this.#bytes = 0;
  }

  #delete(key: string): void {
    const entry = this.#map.get(key);
    if (entry === undefined) return;
    this.#map.delete(key);
    this.#bytes -= entry.bytes;
  }
}
