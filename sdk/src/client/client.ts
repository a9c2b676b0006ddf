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
import { HotSet, type HotState } from '../cache/hot-set.ts';
import { LocalCache } from '../cache/local-cache.ts';
import { AccessWindow } from '../counting/window.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { resolveClientOptions, type ClientOptions, type ResolvedClientOptions } from '../options.ts';
import { LOAD_DEFAULTS, localThreshold, RuleSet, type Rule, type RuleKind } from '../rules.ts';
import { RateLimits } from './rate-limits.ts';
import type { ConnectionHandler, HubConnection } from '../wire/connection.ts';
import {
  MAX_KEY_LENGTH,
  MsgType,
  PROTOCOL_VERSION,
  type Hello,
  type InvalidateRequest,
  type Member,
  type SdkDemoteReason,
  type ServerMessage,
  type Welcome,
} from '../wire/protocol.ts';
import { PendingInvalidations } from './invalidations.ts';
import { applyGrant, askLease, LEASE_MARGIN_MS } from './leases.ts';
import { HotLoads, REFRESH_JITTER, type LoadPolicy } from './loads.ts';
import { ValuePush, type PushCodec, type PushCounters } from './push.ts';
import { HUB_URL, HubLinks, type HubLink } from './links.ts';
import { Reporter } from './reporter.ts';
import { applySnapshot, inSequence } from './resync.ts';
import { StatusFeed, type ClientStatus } from './status.ts';

export type { ClientOptions } from '../options.ts';
export type { ClientStatus } from './status.ts';

export const SDK_NAME = '@hotkey/sdk/0.1.0';
/** a hit tells the LRU about its key at most this often (ms): recency finer than this buys nothing */
const LRU_TOUCH_MS = 1;

/** What one access did to a key, as `track()` counts it. */
export type AccessKind = 'read' | 'write';

export interface PromoteInfo {
  hub: string;
  qps: number;
  /** ms the promotion lives from now without renewal: the rule's hotMs for a fresh promotion, what is left of it for one learnt from a snapshot */
  ttlMs: number;
  cacheTtlMs: number;
  cache: boolean;
  /** which accesses made it hot: its rule's kind ('read', 'write' or 'any') */
  kind: RuleKind;
  /** copies of the key serving reads, itself included (1: no replica keys; see the ioredis wrapper) */
  replicas: number;
}
export interface DemoteInfo {
  hub: string;
  /** 'demote': the hub said so; 'expired': the promotion ran out; 'stale': cut off from the hub; 'snapshot': absent from a resync; 'evicted': over maxHotKeys */
  reason: SdkDemoteReason;
}
export interface InvalidateInfo {
  hub: string;
  seq: number;
  /** the key names a flushed namespace (`invalidateAll`): every cached value was dropped */
  flush?: true;
}
/** `invalidate(key, options)` */
export interface InvalidateOptions {
  /**
   * The key's new value (value push, Redisson's UPDATE): if the key is hot and its rule shares
   * values (`share: true`), every instance drops the old value and caches this one in the same
   * step, instead of reloading. Only a value read back after the write, through a source that
   * vouches for it, belongs here (the ioredis wrapper's `writes: 'update'`). A value that is not
   * pushable or over `maxPushBytes`, or a key not hot and shared here: a plain invalidation.
   * @default undefined (a plain invalidation)
   */
  value?: unknown;
  /**
   * With `value`: `updateMark(key)` taken before the value was written (or read back). The hub
   * pushes the value only if no other write of the key went through it since the mark (one that
   * may have reached the store later, making this value the older); else it invalidates plainly.
   * @default a mark taken now (right only when nobody else writes the key meanwhile)
   */
  mark?: UpdateMark;
  /**
   * Only the value this instance pushed (value push: it vouches for it and heard a write of the
   * key): when the hub holds a newer value or none, nothing is broadcast and the ack comes at once.
   * @default false
   */
  pushed?: boolean;
}
/** Where the key's owner hub's broadcasts stood for this instance (`updateMark`); opaque. */
export interface UpdateMark {
  readonly hub: string | undefined;
  readonly link: object | undefined;
  readonly seq: number;
}
/** What a resolved `invalidate()` says. */
export interface InvalidateResult {
  /** the hub that acknowledged */
  hub: string;
  /**
   * instances that did not confirm the drop and were fenced instead: the hub waited until their
   * lease lapsed (they can no longer serve the old value). Empty when everyone confirmed.
   */
  fenced: string[];
  /** ms the hub took to acknowledge */
  ms: number;
}

export interface ClientEvents {
  promote: [key: string, info: PromoteInfo];
  demote: [key: string, info: DemoteInfo];
  invalidate: [key: string, info: InvalidateInfo];
  /** a Redis node's circuit breaker changed state (ioredis integration, `withHotKeys`) */
  breaker: [info: { node: string; state: 'closed' | 'open' | 'half-open' }];
  /** network and protocol faults; emitted only when someone listens */
  error: [error: Error];
  /** close() ran: integrations release what they hold for this client (the ioredis tracking connections) */
  close: [];
}

export interface ClientStats {
  /** get() answered from the local cache */
  hits: number;
  /** get() that called the loader because the key was not hot (or hot without caching, or unleased) */
  misses: number;
  /** of those, hot keys whose hub's lease was not current (cut off, stalled, or refused a renewal) */
  unleased: number;
  /** loads of hot keys (single flight: concurrent callers share one) */
  loads: number;
  /** get() calls that joined a load already in flight */
  coalesced: number;
  loadErrors: number;
  /** background reloads of hot values ahead of their expiry (refresh-ahead) */
  refreshes: number;
  /** refreshes put off because maxLoadsInFlight loads were running */
  refreshesSkipped: number;
  /** get() answered with a value past its cacheTtlMs because its reload failed (stale-if-error) */
  staleServed: number;
  /** hot-key loads that did not settle within loadTimeoutMs */
  loadTimeouts: number;
  /** hot-key loads running / waiting for a slot now, and refused by a full queue (HK_ERR_LOAD_LIMIT) */
  loadsInFlight: number;
  loadsQueued: number;
  loadsRejected: number;
  /** hot-key loads that resolved to `undefined`: returned, never cached */
  undefinedLoads: number;
  /** value push (`share: true` rules), see push.ts */
  push: PushCounters;
  /** Report frames sent / keys in them / reports dropped because the socket was backed up */
  reports: number;
  reportedKeys: number;
  reportsDropped: number;
  hotKeys: number;
  cacheSize: number;
  evictions: number;
  expirations: number;
  /** keys with an exact counter now / admitted / evicted from the counters */
  candidates: number;
  candidatesEvicted: number;
  invalidations: number;
  invalidationsPending: number;
  invalidateTimeouts: number;
  resyncs: number;
  /** hubs with a live, welcomed connection */
  hubs: number;
  /** SDK instances of the app the hub last reported */
  instances: number;
  /** accesses of rate-limited keys refused / admitted by `allow()` (and the ioredis wrapper) */
  rateLimited: number;
  rateAdmitted: number;
}

export class HotKeyClient extends EventEmitter<ClientEvents> {
  readonly app: string;
  readonly instanceId: string;

  readonly #opts: ResolvedClientOptions;
  readonly #now: () => number;
  readonly #window: AccessWindow;
  readonly #cache: LocalCache;
  readonly #hot: HotSet;
  readonly #loads: HotLoads;
  readonly #push: ValuePush;
  /** this instance's share of REFRESH_JITTER, in [0, 1) */
  readonly #jitter = Math.random();
  readonly #links: HubLinks;
  readonly #reporter: Reporter;
  readonly #invalidations: PendingInvalidations;
  readonly #statusFeed = new StatusFeed<ClientStatus>();
  readonly #limits: RateLimits;
  /** ids of pending invalidations that are namespace flushes (`invalidateAll`), resent as such */
  readonly #flushIds = new Set<number>();

  #rules = new RuleSet([]);
  #rulesJson = '';
  /** per-rule local thresholds scaled to this window, indexed like #rules.rules */
  #thresholds: number[] = [];
  #instances = 0;
  /** coarse clock, refreshed by the tick, by every hub frame and by every get() of a hot key */
  #clock: number;

  #tickTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #readySettled = false;
  readonly #ready: Promise<void>;
  #resolveReady!: () => void;
  #rejectReady!: (err: Error) => void;

  #hits = 0;
  #misses = 0;
  #unleased = 0;
  #loadErrors = 0;
  #invalidationCount = 0;
  #resyncs = 0;

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
    const now = options.now ?? (() => performance.now());
    if (typeof now !== 'function') throw new TypeError('options.now must be a function');
    this.#opts = opts;
    this.app = opts.app;
    this.instanceId = opts.instanceId;
    this.#now = now;
    this.#clock = now();
    this.#window = new AccessWindow({
      maxCandidates: opts.maxCandidates,
      sampleRate: opts.sampleRate,
      now: this.#clock,
      onUrgent: () => this.#reporter.urgentSoon(),
    });
    this.#cache = new LocalCache({ maxEntries: opts.maxEntries });
    this.#hot = new HotSet({ maxKeys: opts.maxHotKeys });
    this.#loads = new HotLoads({
      cache: this.#cache,
      hot: this.#hot,
      maxInFlight: opts.maxLoadsInFlight,
      maxQueued: opts.maxLoadsQueued,
      timeoutMs: opts.loadTimeoutMs,
      jitter: this.#jitter,
      policy: (key) => this.#loadPolicy(key),
      readClock: () => (this.#clock = this.#now()),
      callLoader: (key, loader) => this.#callLoader(key, loader),
      closed: () => this.#closed,
      onStale: (key, error) => this.#status({ type: 'stale-value', key, error }),
      awaitPush: (key) => this.#push.awaitPush(key),
      onFilled: (key, value, hot) => this.#push.filled(key, value, this.#links.get(hot.hub)),
    });
    this.#push = new ValuePush({
      hot: this.#hot,
      cache: this.#cache,
      maxPushBytes: opts.maxPushBytes,
      pushWaitMs: opts.pushWaitMs,
      shared: (key) => this.#rules.ruleFor(key)?.share === true,
      lifetime: (key, hot) => {
        const { refreshAheadRatio, staleIfErrorMs } = this.#loadPolicy(key);
        return {
          refreshMs:
            hot.cacheTtlMs * refreshAheadRatio * (refreshAheadRatio < 1 ? 1 - REFRESH_JITTER * this.#jitter : 1),
          keepMs: staleIfErrorMs,
        };
      },
      readClock: () => (this.#clock = this.#now()),
      loadNow: (key, loader, hot) => this.#loads.loadNow(key, loader, hot),
    });
    this.#limits = new RateLimits(opts.maxLimitedKeys);
    this.#invalidations = new PendingInvalidations({
      timeoutMs: opts.invalidateTimeoutMs,
      maxPending: opts.maxPendingInvalidations,
    });
    const hello: Hello = {
      t: MsgType.Hello,
      v: PROTOCOL_VERSION,
      app: opts.app,
      instance: opts.instanceId,
      sdk: SDK_NAME,
      host: opts.host,
      role: 'sdk',
    };
    if (opts.token !== undefined) hello.token = opts.token;
    this.#links = new HubLinks({
      seeds: [...new Set(hubs as string[])],
      hello,
      pingIntervalMs: opts.pingIntervalMs,
      livenessTimeoutMs: opts.livenessTimeoutMs,
      reconnectMinMs: opts.reconnectMinMs,
      reconnectMaxMs: opts.reconnectMaxMs,
      tls: opts.tls,
      handler: this.#makeHandler(),
      onLost: (hub) => this.#onLinkLost(hub),
    });
    this.#reporter = new Reporter({
      window: this.#window,
      links: this.#links,
      maxBufferedBytes: opts.maxBufferedBytes,
      refreshClock: () => (this.#clock = this.#now()),
      loadsOf: (key) => (this.#hot.get(key)?.cache === true ? this.#loads.tallied(key) : undefined),
      reported: () => this.#loads.resetTally(),
    });
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.#ready.catch(() => {}); // nobody may ever call ready(): not an unhandled rejection

    // One timer drives the coarse clock, the window slices, hot-key expiry and the reports.
    this.#tickTimer = setInterval(() => this.#onTick(), this.#opts.flushIntervalMs);
    this.#links.start();
  }

  /**
   * Resolves once a hub welcomed this instance (rules received). Rejects with a HotKeyError
   * HK_ERR_AUTH (an AuthError) / HK_ERR_UNKNOWN_APP / HK_ERR_VERSION when a hub refuses it, HK_ERR_TLS
   * when the TLS handshake with a wss:// hub fails (an untrusted certificate: see `tls.ca`; the
   * connection keeps retrying in the background, so a hub whose certificate is fixed is still
   * reached), HK_ERR_CLOSED when the client is closed first, or the signal's reason when `signal` aborts.
   */
  ready(options: { signal?: AbortSignal } = {}): Promise<void> {
    const { signal } = options;
    if (signal === undefined) return this.#ready;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#ready.then(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
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
      const clock = (this.#clock = this.#now());
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
    // Everything else lives apart so that get() stays small enough for V8 to inline into the
    // caller's loop (the load path alone would exceed its bytecode budget).
    return this.#getSlow(key, loader, hot);
  }

  /** get() past the hit path; a `hot` key's access is counted already. */
  #getSlow<T>(key: string, loader: (key: string) => T | PromiseLike<T>, hot: HotState | undefined): Promise<T> {
    if (this.#closed) return this.#callLoader(key, loader);
    if (hot === undefined) {
      this.#window.track(key);
      this.#misses++;
      return this.#callLoader(key, loader);
    }
    const clock = this.#clock; // read by get() in this call
    if (hot.until <= clock || !hot.cache || hot.lease.until <= clock) {
      // not hot any more, not cached by rule, or no current lease vouches for a cached value
      this.#misses++;
      if (hot.until > clock && hot.cache) {
        this.#unleased++;
        this.#loads.tally(key); // a read of a hot key that reaches the store
      }
      return this.#callLoader(key, loader);
    }
    this.#push.remember(key, loader);
    return this.#loads.get(key, loader, hot, clock);
  }

  /**
   * The key's rule's load fields (refresh-ahead, stale-if-error), defaults filled in. A shared
   * key's own refresh point sits 90 % of the way from the rule's to expiry (less the jitter: for
   * 0.8, at 0.88 to 0.98 of cacheTtlMs): the hub asks one instance to refresh at the rule's point
   * and pushes the value, so the others reload only if it is late.
   */
  #loadPolicy(key: string): LoadPolicy {
    const rule = this.#rules.ruleFor(key);
    const ratio = rule?.refreshAheadRatio ?? LOAD_DEFAULTS.refreshAheadRatio;
    return {
      refreshAheadRatio: rule?.share === true && ratio < 1 ? ratio + (1 - ratio) * 0.9 : ratio,
      staleIfErrorMs: rule?.staleIfErrorMs ?? LOAD_DEFAULTS.staleIfErrorMs,
    };
  }

  /**
   * Counts an access without loading anything. `kind` says whether it read or wrote the key: a
   * key counts only the accesses its rule's `kind` selects (rules count reads by default).
   */
  track(key: string, kind: AccessKind = 'read'): void {
    checkKey(key);
    if (this.#closed) return;
    if (kind === 'read') this.#window.track(key);
    else if (kind === 'write') this.#window.trackWrite(key);
    else throw new TypeError(`kind must be 'read' or 'write', got ${String(kind)}`);
  }

  /** Which accesses made the key hot ('read', 'write' or 'any'), or undefined when it is not hot here. */
  hotKind(key: string): RuleKind | undefined {
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#clock ? hot.kind : undefined;
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
    return this.#limits.take(key, this.#now());
  }

  /** Whether any rule limits keys: callers that check many keys skip `allow()` otherwise. */
  get limiting(): boolean {
    return this.#limits.active;
  }

  /** The rate this instance admits for `key` now, per second (Infinity: no limit). */
  rateOf(key: string): number {
    checkKey(key);
    return this.#limits.rateOf(key, this.#now());
  }

  /**
   * Whether `key` is hot here under a current lease of its hub, by the real clock (not the coarse
   * one a stall leaves behind): a value read for the key before now may still be published (the
   * ioredis wrapper's replica fills), because the hub has not acknowledged a write without us.
   */
  vouches(key: string): boolean {
    const hot = this.#hot.get(key);
    const now = this.#now();
    return hot !== undefined && hot.until > now && hot.lease.until > now;
  }

  /**
   * Copies of a hot key that serve reads, itself included, as its hub decided (1: no replica
   * keys); 0 when the key is not hot here — so one call answers `isHot` too.
   */
  replicasOf(key: string): number {
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#clock ? hot.replicas : 0;
  }

  /** Whether the key is hot right now on this instance. */
  isHot(key: string): boolean {
    checkKey(key);
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#clock;
  }

  /**
   * Drops the key's cached value here, then asks its owner hub to drop it everywhere. Resolves
   * once the hub acknowledged that every instance applied it or was fenced (its lease lapsed:
   * `fenced` names them); from then on no instance serves the old value. Rejects with
   * HK_ERR_TIMEOUT after `invalidateTimeoutMs`, HK_ERR_UNAVAILABLE at once when no hub is
   * connected, HK_ERR_CLOSED after close(). A rejection promises nothing: instances the hub did
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
    const hub = this.#links.owner(key);
    const mark = options?.value === undefined ? undefined : (options.mark ?? this.updateMark(key));
    // a mark from another hub, or from before a reconnect, counts in another seq: plain
    const update =
      mark === undefined || hub === undefined || mark.hub !== hub || mark.link !== this.#links.get(hub)
        ? undefined
        : this.#push.packUpdate(key, options!.value);
    this.#dropValue(key);
    this.#invalidationCount++;
    if (hub === undefined)
      return Promise.reject(new HotKeyError(ErrorCode.Unavailable, `no hub connected to invalidate "${key}"`));
    if (update === undefined) {
      const pushed = options?.pushed === true;
      return this.#invalidations.add(key, hub, (id, to) =>
        this.#links
          .get(to)
          ?.conn.send(
            pushed ? { t: MsgType.InvalidateRequest, id, key, pushed } : { t: MsgType.InvalidateRequest, id, key },
          ),
      );
    }
    const request = { t: MsgType.InvalidateRequest, key, value: update.bytes, since: mark!.seq } as InvalidateRequest;
    if (update.form !== undefined) request.form = update.form;
    const done = this.#invalidations.add(key, hub, (id, to) => this.#links.get(to)?.conn.send({ ...request, id }));
    this.#push.vouch(key, update);
    return done;
  }

  /**
   * Marks where `key`'s owner hub's broadcasts stand here, for an update (`invalidate(key, {
   * value, mark })`): take it before writing the value (or reading it back), so that a write by
   * someone else the hub relays after the mark turns the update into a plain invalidation.
   */
  updateMark(key: string): UpdateMark {
    const hub = this.#links.owner(key);
    const link = hub === undefined ? undefined : this.#links.get(hub);
    return { hub, link, seq: link?.lastSeq ?? 0 };
  }

  /** Whether `key` is hot here, cached, and its rule shares values (`share: true`): value push applies to it. */
  isShared(key: string): boolean {
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#clock && hot.cache && this.#rules.ruleFor(key)?.share === true;
  }

  /**
   * For adapters that cache values of their own shape (the ioredis wrapper's records): how they
   * are pushed and injected, and who vouches for them (push.ts PushCodec). One per client.
   */
  usePushCodec(codec: PushCodec): void {
    this.#push.codec = codec;
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
    this.#dropAll();
    this.#invalidationCount++;
    const hub = this.#links.owner(namespace);
    if (hub === undefined)
      return Promise.reject(new HotKeyError(ErrorCode.Unavailable, `no hub connected to flush "${namespace}"`));
    let sentId = 0;
    const done = this.#invalidations.add(namespace, hub, (id) => {
      sentId = id;
      this.#flushIds.add(id);
      this.#links.get(hub)?.conn.send({ t: MsgType.InvalidateRequest, id, key: namespace, flush: true });
    });
    const forget = () => this.#flushIds.delete(sentId);
    done.then(forget, forget);
    return done;
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
    if (typeof target === 'string') {
      checkKey(target);
      const held = this.#cache.has(target) || this.#loads.has(target);
      this.#dropValue(target);
      return held ? 1 : 0;
    }
    if (typeof target !== 'function') throw new TypeError('dropLocal: target must be a key or a function');
    const keys: string[] = [];
    for (const key of this.#hot.keys()) {
      const state = this.#hot.get(key);
      if (state?.promise !== undefined && target(key, state.value)) keys.push(key);
    }
    for (const key of keys) this.#dropValue(key);
    return keys.length;
  }

  /** An async iterator of connection state changes; it ends when the client closes. */
  status(): AsyncIterableIterator<ClientStatus> {
    return this.#statusFeed.iterate();
  }

  stats(): ClientStats {
    const w = this.#window.stats();
    const l = this.#loads;
    return {
      hits: this.#hits + l.hits,
      misses: this.#misses,
      unleased: this.#unleased,
      loads: l.loads,
      coalesced: l.coalesced,
      loadErrors: this.#loadErrors,
      refreshes: l.refreshes,
      refreshesSkipped: l.refreshesSkipped,
      staleServed: l.staleServed,
      loadTimeouts: l.timeouts,
      loadsInFlight: l.inFlight,
      loadsQueued: l.queued,
      loadsRejected: l.rejected,
      undefinedLoads: l.undefinedValues,
      push: { ...this.#push.counters },
      reports: this.#reporter.reports,
      reportedKeys: this.#reporter.reportedKeys,
      reportsDropped: this.#reporter.reportsDropped,
      hotKeys: this.#hot.size,
      cacheSize: this.#cache.size,
      evictions: this.#cache.evictions,
      expirations: this.#cache.expirations,
      candidates: w.candidates,
      candidatesEvicted: w.evicted,
      invalidations: this.#invalidationCount,
      invalidationsPending: this.#invalidations.size,
      invalidateTimeouts: this.#invalidations.timeouts,
      resyncs: this.#resyncs,
      hubs: this.#links.size,
      instances: this.#instances,
      rateLimited: this.#limits.rejected,
      rateAdmitted: this.#limits.admitted,
    };
  }

  /** The rules the hubs sent (the default rule until then). */
  rules(): readonly Rule[] {
    return this.#rules.rules;
  }

  /** Ids of the hubs this instance is connected to. */
  hubs(): string[] {
    return this.#links.hubs();
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
    this.#reporter.close();
    this.#links.close();
    this.#invalidations.closeAll();
    this.#hot.clear();
    this.#cache.clear();
    this.#loads.clear();
    this.#push.clear();
    if (!this.#readySettled) {
      this.#readySettled = true;
      this.#rejectReady(new HotKeyError(ErrorCode.Closed, 'client closed before a hub welcomed it'));
    }
    this.#status({ type: 'closed' });
    this.#statusFeed.end();
    this.emit('close');
  }

  // ---- internals ----

  #callLoader<T>(key: string, loader: (key: string) => T | PromiseLike<T>): Promise<T> {
    try {
      const result = Promise.resolve(loader(key));
      result.then(undefined, () => this.#loadErrors++);
      return result;
    } catch (err) {
      this.#loadErrors++;
      return Promise.reject(err);
    }
  }

  /** Forgets the cached value and any load in flight whose result can no longer be trusted. */
  #dropValue(key: string): void {
    this.#cache.delete(key);
    this.#hot.invalidate(key);
    this.#loads.drop(key);
    this.#push.dropped(key, this.#clock);
  }

  /** Every cached value and every load in flight goes; hot keys stay hot and reload. */
  #dropAll(): void {
    for (const key of [...this.#hot.keys()]) {
      this.#hot.invalidate(key);
      this.#push.dropped(key, this.#clock);
    }
    this.#cache.clear();
    this.#loads.clear();
  }

  #forget(key: string): void {
    this.#cache.delete(key);
    this.#loads.drop(key);
    this.#push.forget(key);
  }

  /** The flush-interval timer: coarse clock, window slices, hot-key expiry, then the reports. */
  #onTick(): void {
    const now = this.#now();
    this.#clock = now;
    this.#window.advance(now);
    for (const state of this.#hot.expire(now)) {
      this.#forget(state.key);
      this.emit('demote', state.key, { hub: state.hub, reason: 'expired' });
    }
    for (const link of this.#links.links()) askLease(link, now);
    this.#reporter.flush(now);
  }

  #makeHandler(): ConnectionHandler {
    return {
      welcome: (conn, welcome) => this.#onWelcome(conn, welcome),
      message: (conn, message) => this.#onMessage(conn, message),
      down: (conn, code, reason, welcomed) => this.#onDown(conn, code, reason, welcomed),
      reconnecting: (conn, delayMs) => this.#status({ type: 'reconnecting', url: conn.url, delayMs }),
      error: (conn, error) => {
        this.#fault(error, conn.url);
        // not fatal (a fixed certificate heals it), but ready() must not wait forever on a trust problem
        if (error instanceof HotKeyError && error.code === ErrorCode.Tls && !this.#readySettled) {
          this.#readySettled = true;
          this.#rejectReady(error);
        }
      },
      fatal: (conn, error) => {
        this.#links.forget(conn);
        this.#fault(error, conn.url, true);
        if (!this.#readySettled) {
          this.#readySettled = true;
          this.#rejectReady(error);
        }
      },
    };
  }

  #onWelcome(conn: HubConnection, welcome: Welcome): void {
    if (this.#closed) return;
    this.#clock = this.#now();
    if (!this.#links.admit(conn, welcome)) return;
    const link = this.#links.get(welcome.hub);
    if (link !== undefined) askLease(link, this.#clock, true);
    this.#applyConfig(welcome.rules, welcome.local, welcome.instances);
    this.#status({ type: 'connect', hub: welcome.hub, url: conn.url });
    this.#applyMembers(welcome.epoch, welcome.members);
    if (!this.#readySettled) {
      this.#readySettled = true;
      this.#resolveReady();
    }
  }

  #onDown(conn: HubConnection, code: number, reason: string, welcomed: boolean): void {
    // a failed attempt to reconnect is an 'error' + 'reconnecting', not another disconnect
    if (welcomed) this.#status({ type: 'disconnect', hub: conn.hubId, url: conn.url, code, reason });
    this.#links.down(conn, code);
  }

  /** A welcomed hub is gone: its keys moved to the other hubs and its hot keys go stale. */
  #onLinkLost(hub: string): void {
    this.#clock = this.#now();
    // Loads in flight may have missed an invalidation: they must not fill. Values cached already
    // stay servable under the old link's lease, which the hub waits out before any ack.
    for (const key of this.#hot.invalidateHub(hub)) this.#loads.drop(key);
    const stale = this.#hot.markStale(hub, this.#clock, this.#opts.maxStaleMs);
    if (stale > 0) this.#status({ type: 'stale', hub, keys: stale });
    // Invalidations that hub will never ack go to the key's new owner, or fail now.
    this.#invalidations.hubLost(hub, (id, key) => {
      const owner = this.#links.owner(key);
      const link = owner === undefined ? undefined : this.#links.get(owner);
      const request = this.#flushIds.has(id)
        ? { t: MsgType.InvalidateRequest, id, key, flush: true as const }
        : { t: MsgType.InvalidateRequest, id, key };
      return link !== undefined && link.conn.send(request) ? owner : undefined;
    });
  }

  #onMessage(conn: HubConnection, message: ServerMessage): void {
    if (this.#closed) return;
    const link = this.#links.linkOf(conn);
    if (link === undefined) return;
    const hub = link.hub;
    this.#clock = this.#now();
    switch (message.t) {
      case MsgType.Promote: {
        this.#sequence(link, message.seq);
        const promotion = {
          ttlMs: message.hotMs,
          cacheTtlMs: message.cacheTtlMs,
          cache: message.cache,
          qps: message.qps,
          kind: message.kind ?? 'read',
          replicas: message.replicas ?? 1,
        };
        const { state, added, evicted, reset } = this.#hot.promote(
          hub,
          message.key,
          promotion,
          this.#clock,
          link.lease,
        );
        if (reset === true) this.#forget(message.key); // cached under an older link or another hub
        if (evicted !== undefined) {
          this.#forget(evicted);
          this.emit('demote', evicted, { hub, reason: 'evicted' });
        }
        if (!state.cache) this.#forget(message.key);
        else if (added || reset === true) this.#push.promoted(message.key, this.#clock);
        this.#window.calm(message.key); // hot already: its reports need not hurry any more
        if (added) this.emit('promote', message.key, { hub, ...promotion });
        return;
      }
      case MsgType.Invalidate: {
        this.#sequence(link, message.seq);
        if (message.flush === true) this.#dropAll();
        else if (message.value !== undefined) this.#push.update(link, message, () => this.#dropValue(message.key));
        else this.#dropValue(message.key);
        link.conn.send({ t: MsgType.Applied, seq: message.seq });
        this.emit(
          'invalidate',
          message.key,
          message.flush === true ? { hub, seq: message.seq, flush: true } : { hub, seq: message.seq },
        );
        return;
      }
      case MsgType.Demote: {
        this.#sequence(link, message.seq);
        this.#forget(message.key);
        if (this.#hot.demote(message.key)) this.emit('demote', message.key, { hub, reason: 'demote' });
        return;
      }
      case MsgType.Snapshot: {
        const { removed, touched, promoted } = applySnapshot(this.#hot, link, message, this.#clock);
        for (const key of touched) this.#forget(key);
        for (const key of removed) {
          this.#forget(key);
          this.emit('demote', key, { hub, reason: 'snapshot' });
        }
        for (const e of promoted) {
          const { qps, ttlMs, cacheTtlMs, cache } = e;
          this.emit('promote', e.key, {
            hub,
            qps,
            ttlMs,
            cacheTtlMs,
            cache,
            replicas: e.replicas ?? 1,
            kind: e.kind ?? 'read',
          });
        }
        return;
      }
      case MsgType.Ack:
        this.#invalidations.ack(message.id, { hub, fenced: message.fenced, ms: message.ms });
        return;
      case MsgType.Grant:
        applyGrant(link, message, LEASE_MARGIN_MS);
        return;
      case MsgType.Fill:
        if (this.#hot.get(message.key)?.hub === hub) this.#push.fill(message);
        return;
      case MsgType.Value:
        this.#push.value(link, message);
        return;
      case MsgType.Limit:
        this.#limits.setShares(message.keys, message.rates, message.ttlMs, this.#now());
        return;
      case MsgType.Config:
        this.#applyConfig(message.rules, message.local, message.instances);
        return;
      case MsgType.Members:
        this.#applyMembers(message.epoch, message.members);
        return;
      case MsgType.Welcome:
      case MsgType.Error:
        return;
    }
  }

  /** A broadcast's sequence number; on a gap every cached value that hub vouched for goes (resync.ts). */
  #sequence(link: HubLink, seq: number): void {
    if (inSequence(link, seq)) return;
    this.#resyncs++;
    for (const key of this.#hot.invalidateHub(link.hub)) this.#forget(key);
    this.#status({ type: 'resync', hub: link.hub, reason: 'gap' });
  }

  #applyConfig(rules: Rule[], local: number[], instances: number): void {
    this.#instances = instances;
    const json = JSON.stringify(rules);
    if (json !== this.#rulesJson) {
      this.#rulesJson = json;
      this.#rules = new RuleSet(rules);
      this.#window.setRules(this.#rules);
    }
    // The hub's threshold counts accesses within the rule's window; ours is one fixed window.
    const windowMs = this.#window.sliceMs * this.#window.slices;
    this.#thresholds = this.#rules.rules.map((rule, i) => {
      // no threshold from the hub: this instance alone, as the hub would compute it
      const hubLocal = local[i] ?? localThreshold(rule, 1);
      return Math.max(1, Math.ceil((hubLocal * windowMs) / rule.windowMs));
    });
    this.#window.setThresholds(this.#thresholds);
    this.#limits.configure(this.#rules, instances);
  }

  /** Connects to new members and drops those that left (links.ts), then tells status(). */
  #applyMembers(epoch: number, members: Member[]): void {
    if (this.#links.applyMembers(epoch, members)) this.#status({ type: 'members', epoch, members });
  }

  #fault(error: Error, url?: string, refused = false): void {
    const code = (error as { code?: unknown }).code;
    if (refused)
      this.#opts.logger.error(
        { evt: 'refused', url, code, err: error.message },
        'hub refused this client; not retrying',
      );
    else this.#opts.logger.warn({ evt: 'error', url, code, err: error.message }, 'hub connection fault');
    this.#status(url === undefined ? { type: 'error', error } : { type: 'error', error, url });
    // EventEmitter throws on 'error' without listeners: a network fault must never do that.
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  #status(status: ClientStatus): void {
    const log = this.#opts.logger;
    switch (status.type) {
      case 'connect':
        log.info({ evt: 'connect', app: this.app, hub: status.hub, url: status.url }, 'connected to hub');
        break;
      case 'disconnect':
        log.warn(
          {
            evt: 'disconnect',
            app: this.app,
            hub: status.hub,
            url: status.url,
            code: status.code,
            reason: status.reason,
          },
          'hub disconnected',
        );
        break;
      case 'reconnecting':
        log.debug({ evt: 'reconnecting', url: status.url, delayMs: status.delayMs }, 'reconnecting');
        break;
      case 'members':
        log.debug({ evt: 'members', epoch: status.epoch, members: status.members.map((m) => m.id) }, 'cluster members');
        break;
      case 'stale':
        log.warn({ evt: 'stale', hub: status.hub, keys: status.keys }, 'hot keys of a lost hub served stale');
        break;
      case 'stale-value':
        log.warn(
          { evt: 'stale-value', key: status.key, err: status.error.message },
          'reload failed: serving the last value',
        );
        break;
      case 'resync':
        log.info({ evt: 'resync', hub: status.hub, reason: status.reason }, 'resynchronising the hot set');
        break;
      case 'closed':
        log.info({ evt: 'closed', app: this.app }, 'client closed');
        break;
    }
    this.#statusFeed.push(status);
  }
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`key must be a string, got ${typeof key}`);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH)
    throw new TypeError(`key must be 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`);
}
