/**
 * HotKeyClient: the agent a service embeds. Counts every access in a bounded sliding window,
 * reports keys over the per-instance threshold to each key's owner hub once per flush, applies
 * the hubs' promotions, invalidations and demotions, and serves hot keys from a bounded local
 * cache. `get()` never waits on the network and never fails because a hub is slow or down: the
 * loader is always the fallback. Network faults go to `status()` and to 'error' listeners (only
 * when there are any); misuse throws TypeError at once.
 */
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { HotSet, HotState } from '../cache/hot-set.ts';
import type { LocalCache } from '../cache/local-cache.ts';
import type { AccessWindow } from '../counting/window.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { resolveClientOptions, type ClientOptions, type ResolvedClientOptions } from '../options.ts';
import type { Rule, RuleKind } from '../rules.ts';
import { MAX_KEY_LENGTH } from '../wire/protocol.ts';
import { registerAdapterView, type AdapterView } from './adapter-view.ts';
import type { ClientEvents, EmitClientEvent } from './events.ts';
import type { InvalidateOptions, InvalidateResult, UpdateMark } from './invalidate/invalidator.ts';
import { askLease, wantLease } from './invalidate/leases.ts';
import { HUB_URL } from './links.ts';
import { buildParts, type ClientParts } from './parts.ts';
import type { ReadPath } from './read/read-path.ts';
import type { SurgeLocal } from './read/surge-local.ts';
import { collectStats, type ClientStats } from './observe/stats.ts';
import { logFault, logStatus } from './observe/status-log.ts';
import { StatusFeed, type ClientStatus } from './observe/status.ts';

export type { ClientOptions } from '../options.ts';
export type { ClientStatus } from './observe/status.ts';
export type { ClientEvents, DemoteInfo, InvalidateInfo, PromoteInfo } from './events.ts';
export type { InvalidateOptions, InvalidateResult, UpdateMark } from './invalidate/invalidator.ts';
export type { ClientStats } from './observe/stats.ts';

export { SDK_NAME } from './parts.ts';
/** a hit tells the LRU about its key at most this often (ms): recency finer than this buys nothing */
const LRU_TOUCH_MS = 1;

/** What one access did to a key, as `track()` counts it. */
export type AccessKind = 'read' | 'write';

export class HotKeyClient extends EventEmitter<ClientEvents> {
  readonly app: string;
  readonly instanceId: string;

  readonly #opts: ResolvedClientOptions;
  readonly #monoNow: () => number;
  readonly #p: ClientParts;
  // the hit path's parts, held here too: one field read each, not two
  readonly #window: AccessWindow;
  readonly #cache: LocalCache;
  readonly #hot: HotSet;
  readonly #reads: ReadPath;
  readonly #surge: SurgeLocal | undefined;
  readonly #statusFeed = new StatusFeed<ClientStatus>();
  /** what the Redis adapters ask beyond the public API (adapter-view.ts) */
  readonly #view: AdapterView;
  /** coarse clock, refreshed by the tick, by every hub frame and by every get() of a hot key */
  #coarseNow: number;

  #tickTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** get() answered from the local cache (the loads count their own hits) */
  #hits = 0;
  /** hits counted at the last tick: more since then mean the leases are in use */
  #hitsAtTick = 0;
  /** an access other than a hit since the last tick */
  #active = false;
  /** no link wants its lease (the last tick found nothing in use): the next access asks at once */
  #leasesIdle = false;

  constructor(options: ClientOptions) {
    super();
    if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
    const opts = resolveClientOptions(
      options,
      () => os.hostname(),
      (host) => `${host}-${process.pid}-${randomBytes(3).toString('hex')}`,
    );
    const hubs = typeof options.hubs === 'string' ? [options.hubs] : options.hubs;
    if (!Array.isArray(hubs) || hubs.length === 0)
      throw new TypeError('options.hubs must be a ws:// URL or a non-empty array of them');
    for (const url of hubs) {
      if (typeof url !== 'string' || !HUB_URL.test(url))
        throw new TypeError(`options.hubs: "${String(url)}" is not a ws:// or wss:// URL`);
    }
    const monoNow = options.now ?? (() => performance.now());
    if (typeof monoNow !== 'function') throw new TypeError('options.now must be a function');
    this.#opts = opts;
    this.app = opts.app;
    this.instanceId = opts.instanceId;
    this.#monoNow = monoNow;
    this.#coarseNow = monoNow();
    const p = buildParts(opts, hubs as string[], {
      monoNow,
      refreshCoarseNow: () => (this.#coarseNow = this.#monoNow()),
      coarseNow: () => this.#coarseNow,
      closed: () => this.#closed,
      emit: this.emit.bind(this) as EmitClientEvent,
      status: (status) => this.#status(status),
      fault: (error, url, refused) => this.#fault(error, url, refused),
    });
    this.#p = p;
    this.#window = p.window;
    this.#cache = p.cache;
    this.#hot = p.hot;
    this.#reads = p.reads;
    this.#surge = p.surge;
    this.#view = this.#adapterView();
    registerAdapterView(this, this.#view);
    // One timer drives the coarse clock, the window slices, hot-key expiry and the reports.
    this.#tickTimer = setInterval(() => this.#onTick(), this.#opts.flushIntervalMs);
    p.links.start();
  }

  /**
   * Resolves once a hub welcomed this instance (rules received). Rejects with a HotKeyError
   * HK_ERR_AUTH (an AuthError) / HK_ERR_UNKNOWN_APP / HK_ERR_VERSION when a hub refuses it, HK_ERR_TLS
   * when the TLS handshake with a wss:// hub fails (an untrusted certificate: see `tls.ca`; the
   * connection keeps retrying in the background, so a hub whose certificate is fixed is still
   * reached), HK_ERR_CLOSED when the client is closed first, or the signal's reason when `signal` aborts.
   */
  ready(options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.#p.readiness.wait(options.signal);
  }

  /**
   * Counts an access and returns the value: from the local cache when the key is hot and cached,
   * else from `loader` (single flight for hot keys: concurrent callers share one call). The
   * loader's errors reach the caller and are not cached. After close() every call goes to the
   * loader.
   */
  get<T>(key: string, loader: (key: string) => T | PromiseLike<T>): Promise<T> {
    checkKey(key);
    if (typeof loader !== 'function') throw new TypeError('loader must be a function');
    const hot = this.#closed ? undefined : this.#hot.get(key);
    if (hot !== undefined) {
      // A hot key counts through the window slot it remembers: one Map lookup per hit, not two.
      if (!this.#window.trackAt(hot.counterSlot, key)) hot.counterSlot = this.#window.track(key);
      // The hit path: the hot entry is also the cache slot and holds a resolved promise of the
      // value, served while the lease of its hub is current. The lease is checked against the
      // clock read by this call: a clock kept from an earlier call may predate a stall (SIGSTOP,
      // a long GC) during which the hub fenced this instance and acknowledged a write, so a read
      // that begins after the stall must not trust it. Recency reaches the LRU at most once per
      // key per LRU_TOUCH_MS, not on every hit.
      const clock = (this.#coarseNow = this.#monoNow());
      if (
        hot.promise !== undefined &&
        clock < hot.lease.until &&
        clock < hot.expiresAt &&
        clock < hot.until &&
        hot.cache
      ) {
        if (!(clock - hot.usedAt < LRU_TOUCH_MS)) {
          hot.usedAt = clock;
          this.#cache.touch(key);
        }
        this.#hits++;
        return hot.promise as Promise<T>;
      }
    }
    // Everything else lives apart (read-path.ts) so that get() stays small enough for V8 to
    // inline into the caller's loop (the load path alone would exceed its bytecode budget).
    return this.#getSlow(key, loader, hot);
  }

  /** get() past the hit path: one private call, so get() itself stays as small as it can be. */
  #getSlow<T>(key: string, loader: (key: string) => T | PromiseLike<T>, hot: HotState | undefined): Promise<T> {
    this.#accessed();
    return this.#reads.slow(key, loader, hot, this.#coarseNow);
  }

  /**
   * An access other than a hit (a hit needs a current lease: the tick sees hits). Its key may be
   * served from here soon (a load, a local surge, a kept read), so the links keep their leases; an
   * instance that was idle asks at once rather than at its next tick.
   */
  #accessed(): void {
    this.#active = true;
    if (this.#leasesIdle) this.#wantLeases(this.#monoNow(), true);
  }

  /** Every link keeps its lease for one more lease period; `ask`: asks now where one is due. */
  #wantLeases(now: number, ask: boolean): void {
    this.#leasesIdle = false;
    for (const link of this.#p.links.links()) {
      wantLease(link, now);
      if (ask) {
        link.conn.setQuiet(false);
        askLease(link, now);
      }
    }
  }

  /**
   * Counts an access without loading anything. `kind` says whether it read or wrote the key: a
   * key counts only the accesses its rule's `kind` selects (rules count reads by default).
   */
  track(key: string, kind: AccessKind = 'read'): void {
    checkKey(key);
    if (this.#closed) return;
    if (kind === 'read') {
      this.#accessed(); // a write needs no lease: it serves nothing
      const slot = this.#window.track(key);
      // an adapter's cold read counts here: a surge makes its next reads hot ones (surge-local.ts)
      if (this.#surge !== undefined) this.#surge.check(key, slot, this.#coarseNow);
    } else if (kind === 'write') this.#window.trackWrite(key);
    else throw new TypeError(`kind must be 'read' or 'write', got ${String(kind)}`);
  }

  /**
   * @deprecated adapter plumbing: `adapterView(hk).trackConcurrent` from `@hotkey/sdk/internal`;
   * this forward leaves at the next minor version.
   */
  trackConcurrent(key: string, inFlight: number): void {
    this.#view.trackConcurrent(key, inFlight);
  }

  /** Which accesses made the key hot ('read', 'write' or 'any'), or undefined when it is not hot here. */
  hotKind(key: string): RuleKind | undefined {
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#coarseNow ? hot.kind : undefined;
  }

  /**
   * Rate limit: takes a token for one access of `key` from its bucket and says whether the access
   * may go ahead. A key no rule gives a `limit` is always allowed. The bucket refills at this
   * instance's share of the limit (from the hub, by what each instance uses; before the first
   * share, `limit / instances`). Counts the access for detection unless `count` is false (the
   * ioredis wrapper counts its commands itself).
   */
  allow(key: string, count = true): boolean {
    checkKey(key);
    if (count && !this.#closed) this.#window.track(key);
    return this.#p.limits.take(key, this.#monoNow());
  }

  /** Whether any rule limits keys: callers that check many keys skip `allow()` otherwise. */
  get limiting(): boolean {
    return this.#p.limits.active;
  }

  /** The rate this instance admits for `key` now, per second (Infinity: no limit). */
  rateOf(key: string): number {
    checkKey(key);
    return this.#p.limits.rateOf(key, this.#monoNow());
  }

  /**
   * @deprecated adapter plumbing: `adapterView(hk).replicasOf` from `@hotkey/sdk/internal`; this
   * forward leaves at the next minor version.
   */
  replicasOf(key: string): number {
    return this.#view.replicasOf(key);
  }

  /** Whether the key is hot right now on this instance. */
  isHot(key: string): boolean {
    checkKey(key);
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#coarseNow;
  }

  /**
   * Drops the key's cached value here, then asks its owner hub to drop it everywhere. Resolves
   * once the hub acknowledged that every instance applied it or was fenced (its lease lapsed:
   * `fenced` names them); from then on no instance serves the old value. With no owner hub
   * reachable it is held and sent when one is welcomed. Rejects with HK_ERR_TIMEOUT after
   * `invalidateTimeoutMs`, HK_ERR_UNAVAILABLE at once when `maxPendingInvalidations` already
   * wait, HK_ERR_CLOSED after close(). A rejection promises nothing: instances the hub did
   * tell stop serving the old value within one lease (its leaseMs, 2 s by default), but if the hub
   * never heard of it, instances connected to it keep the value until cacheTtlMs — retry.
   * `options.value` makes it an update (value push: every instance caches the new value in the
   * same step, see InvalidateOptions); the ack means the same either way.
   */
  invalidate(key: string, options?: InvalidateOptions): Promise<InvalidateResult> {
    checkKey(key);
    if (options !== undefined && (typeof options !== 'object' || options === null))
      throw new TypeError('invalidate: options must be an object');
    if (this.#closed) return Promise.reject(new HotKeyError(ErrorCode.Closed, 'client is closed'));
    return this.#p.invalidator.invalidate(key, options);
  }

  /**
   * Marks where `key`'s owner hub's broadcasts stand here, for an update (`invalidate(key, {
   * value, mark })`): take it before writing the value (or reading it back), so that a write by
   * someone else the hub relays after the mark turns the update into a plain invalidation.
   */
  updateMark(key: string): UpdateMark {
    return this.#p.invalidator.updateMark(key);
  }

  /**
   * A namespace was flushed (FLUSHDB, FLUSHALL, SWAPDB through the ioredis wrapper): drops every
   * cached value here, then asks a hub to have every instance do the same. Resolves, rejects and
   * times out as `invalidate()` does. Every instance drops its WHOLE local cache, not only values
   * of `namespace`: each instance names namespaces after its own client options (`localhost:6379`
   * here, `10.0.0.5:6379` there), so matching by name could miss a copy — too much, never too
   * little, and flushes are rare. Hot keys stay hot and reload. `namespace` goes to the hub as
   * the invalidated "key" (1 to 1024 characters): events and the dashboard show it.
   */
  invalidateAll(namespace: string): Promise<InvalidateResult> {
    checkKey(namespace);
    if (this.#closed) return Promise.reject(new HotKeyError(ErrorCode.Closed, 'client is closed'));
    return this.#p.invalidator.invalidateAll(namespace);
  }

  /**
   * Drops cached values on this instance only — no hub round trip, no other instance told — and
   * voids any load of them in flight (its result is not cached). `target` is a key, or a test
   * `(key, value) => boolean` over every cached value. Returns how many keys it applied to. For
   * sources of invalidations every instance hears by itself (Redis server-assisted tracking: each
   * instance has its own tracking connection), or values one instance can no longer vouch for.
   */
  dropLocal(target: string | ((key: string, value: unknown) => boolean)): number {
    if (this.#closed) return 0;
    if (typeof target === 'string') checkKey(target);
    else if (typeof target !== 'function') throw new TypeError('dropLocal: target must be a key or a function');
    return this.#p.values.dropWhere(target);
  }

  /** An async iterator of connection state changes; it ends when the client closes. */
  status(): AsyncIterableIterator<ClientStatus> {
    return this.#statusFeed.iterate();
  }

  stats(): ClientStats {
    const p = this.#p;
    return collectStats({ ...p, hits: this.#hits });
  }

  /** The rules the hubs sent (the default rule until then). */
  rules(): readonly Rule[] {
    return this.#p.config.rules.rules;
  }

  /** Ids of the hubs this instance is connected to. */
  hubs(): string[] {
    return this.#p.links.hubs();
  }

  /**
   * Stops timers, closes every socket (1000), rejects pending invalidations with HK_ERR_CLOSED and
   * ends status() iterators. Later get() calls go straight to the loader.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#tickTimer);
    this.#tickTimer = undefined;
    this.#p.reportScheduler.close();
    this.#p.links.close();
    this.#p.invalidator.closeAll();
    this.#p.values.clear();
    this.#p.surge?.clear();
    this.#p.readiness.reject(new HotKeyError(ErrorCode.Closed, 'client closed before a hub welcomed it'));
    this.#status({ type: 'closed' });
    this.#statusFeed.end();
    this.emit('close');
  }

  // ---- internals ----

  /**
   * What the Redis adapters ask beyond the public API (adapter-view.ts), built once per client:
   * closures over this client's fields, so no adapter call allocates or looks anything up.
   */
  #adapterView(): AdapterView {
    const { recent, push, config } = this.#p;
    const hotSet = this.#hot;
    const reads = this.#reads;
    return {
      trackConcurrent: (key, inFlight) => {
        checkKey(key);
        if (!Number.isInteger(inFlight) || inFlight < 0)
          throw new TypeError(`trackConcurrent: inFlight must be an integer >= 0, got ${String(inFlight)}`);
        if (this.#closed) return;
        this.#accessed();
        const slot = this.#window.track(key);
        if (slot >= 0 && this.#surge !== undefined) this.#surge.check(key, slot, this.#coarseNow, inFlight);
      },
      noteRead: (key, vouch, scope, reply) => {
        if (!this.#closed) recent.sent(key, vouch, scope, reply);
      },
      readJustAnswered: (key) => !this.#closed && recent.answeredJustNow(key),
      readAnswered: (key, reply) => recent.answered(key, reply),
      recentRead: (key, vouch, scope) => (this.#closed ? undefined : recent.take(key, vouch, scope)),
      recentReadUsed: () => recent.loadAnswered(),
      get uncachedLoad() {
        return reads.passing;
      },
      vouches: (key) => {
        const hot = hotSet.get(key);
        const now = this.#monoNow();
        return hot !== undefined && hot.until > now && hot.lease.until > now;
      },
      replicasOf: (key) => {
        const hot = hotSet.get(key);
        return hot !== undefined && hot.until > this.#coarseNow ? hot.replicas : 0;
      },
      isShared: (key) => {
        const hot = hotSet.get(key);
        return hot !== undefined && hot.until > this.#coarseNow && hot.cache && config.ruleFor(key)?.push === true;
      },
      usePushCodec: (codec) => {
        push.codec = codec;
      },
    };
  }

  /** The flush-interval timer: coarse clock, window slices, hot-key expiry, then the reports. */
  #onTick(): void {
    const now = this.#monoNow();
    this.#coarseNow = now;
    this.#window.advance(now);
    for (const state of this.#hot.expire(now)) {
      this.#p.values.forget(state.key);
      if (state.local) this.#p.surge?.expired(state);
      else this.emit('demote', state.key, { hub: state.hub, reason: 'expired' });
    }
    this.#p.surge?.tick();
    // leases on demand (leases.ts): wanted while anything here may be served from a hub's word
    const holding =
      this.#cache.size > 0 || this.#p.loads.inFlight > 0 || (this.#surge !== undefined && this.#surge.size > 0);
    if (this.#active || this.#hits !== this.#hitsAtTick || holding) this.#wantLeases(now, false);
    else {
      let idle = true;
      for (const link of this.#p.links.links()) if (now < link.leaseWantedUntil) idle = false;
      this.#leasesIdle = idle;
    }
    this.#active = false;
    this.#hitsAtTick = this.#hits;
    // heartbeats folded into that traffic (connection.ts setQuiet): quiet while nothing is wanted or awaited
    const quiet = this.#leasesIdle && this.#p.invalidator.pending === 0;
    for (const link of this.#p.links.links()) {
      askLease(link, now);
      link.conn.setQuiet(quiet && !link.resyncing);
    }
    this.#p.reportScheduler.flush(now);
  }

  #fault(error: Error, url: string | undefined, refused: boolean): void {
    logFault(this.#opts.logger, error, url, refused);
    this.#status(url === undefined ? { type: 'error', error } : { type: 'error', error, url });
    // EventEmitter throws on 'error' without listeners: a network fault must never do that.
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  #status(status: ClientStatus): void {
    logStatus(this.#opts.logger, this.app, status);
    this.#statusFeed.push(status);
  }
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`key must be a string, got ${typeof key}`);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH)
    throw new TypeError(`key must be 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`);
}
