/**
 * What the Redis adapters (redis/, ioredis/, node-redis/) ask of a HotKeyClient beyond what a
 * service calls: cold reads they send and may hand to a hot load, whether a loader's value will
 * be cached, copies of replicated keys, vouching, value push. One view per client, built with it;
 * an adapter takes it once (`adapterView(hk)`) and keeps it, so no read pays for a lookup.
 * Exported from `@hotkey/sdk/internal` only: no stability promise.
 *
 * @internal
 */
import type { PushCodec } from './read/push.ts';
import type { ReadVouch } from './read/recent-reads.ts';

/** @internal */
export interface AdapterView {
  /**
   * Counts a read of `key` as `track(key)` does, for an adapter with `inFlight` earlier reads of
   * the key still unanswered: the key is read faster than one round trip here, so with local
   * surges on it may surge at once (surge-local.ts) and the caller's read become its load.
   * Throws TypeError on a bad key or a count that is not an integer >= 0.
   */
  trackConcurrent(key: string, inFlight: number): void;
  /**
   * A cold read of `key` goes out now, in `scope` (its database: a load in another scope never
   * takes it), while `vouch` — the adapter's Redis tracking session that has covered the key by
   * broadcast since before this send — lives; `reply` is its reply. Should the key turn hot, its
   * load may take that reply (`recentRead`) instead of reading the key again, as long as nothing
   * dropped the key here since (an invalidation of it, a flush, a sequence gap) and the lease of
   * its owner hub's link then is still current (recent-reads.ts). Bounded; a no-op while no hub
   * vouches for the key.
   */
  noteRead(key: string, vouch: ReadVouch, scope: number | undefined, reply: Promise<unknown>): void;
  /**
   * Whether a reply of a cold read of `key` that `noteRead` kept landed just now (within one
   * slice, recent-reads.ts RECENT_SURGE_MS). The adapter then counts the read as one arriving
   * while another is unanswered (`trackConcurrent(key, 1)`): a key this instance was not
   * counting surges, and its load takes that reply.
   */
  readJustAnswered(key: string): boolean;
  /** The cold read `noteRead` was given `reply` of was answered (said before its caller hears it). */
  readAnswered(key: string, reply: Promise<unknown>): void;
  /** For a load of `key` under `vouch` in `scope`: the reply of a cold read `noteRead` kept, when it may answer the load now. */
  recentRead(key: string, vouch: ReadVouch, scope: number | undefined): Promise<unknown> | undefined;
  /** The reply `recentRead` handed over answered the load (the adapter's own checks of it passed). */
  recentReadUsed(): void;
  /**
   * For an adapter's loader: true while get() is calling a loader whose value it will not cache
   * (the key is not hot, its rule does not cache it, no current lease of its hub vouches for a
   * cached value, or the client is closed). Such a loader may send the caller's plain read: a load
   * made to be cached (tracked, with its TTL) would cost Redis more for a value nobody keeps.
   */
  readonly uncachedLoad: boolean;
  /**
   * Whether `key` is hot here under a current lease of its hub, by the real clock (not the coarse
   * one a stall leaves behind): a value read for the key before now may still be published (the
   * ioredis wrapper's replica fills), because the hub has not acknowledged a write without us.
   */
  vouches(key: string): boolean;
  /**
   * Copies of a hot key that serve reads, itself included, as its hub decided (1: no replica
   * keys); 0 when the key is not hot here — so one call answers `isHot` too.
   */
  replicasOf(key: string): number;
  /** Whether `key` is hot here, cached, and its rule pushes values (`share: true`): value push applies to it. */
  isShared(key: string): boolean;
  /**
   * For adapters that cache values of their own shape (the ioredis wrapper's records): how they
   * are pushed and injected, and who vouches for them (push.ts PushCodec). One per client.
   */
  usePushCodec(codec: PushCodec): void;
}

const views = new WeakMap<object, AdapterView>();

/** Called once by each HotKeyClient's constructor with the view it built. @internal */
export function registerAdapterView(client: object, view: AdapterView): void {
  views.set(client, view);
}

/**
 * The adapter view of `client` (a HotKeyClient). Throws TypeError for anything else: an adapter
 * given something that is not a HotKeyClient says so when it is wrapped, not at its first read.
 *
 * @internal
 */
export function adapterView(client: object): AdapterView {
  const view = views.get(client);
  if (view === undefined) throw new TypeError('expected a HotKeyClient');
  return view;
}
