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
import { HubConnection, type ConnectionHandler } from '../wire/connection.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { HotSet, type HotState } from '../cache/hot-set.ts';
import { LocalCache, MISS } from '../cache/local-cache.ts';
import { Ownership } from '../ownership.ts';
import { CloseCode, encode, MAX_FRAME_BYTES, MAX_KEY_LENGTH, MAX_REPORT_KEYS, MsgType, PROTOCOL_VERSION, type Hello, type Member, type ServerMessage, type Welcome } from '../wire/protocol.ts';
import { RuleSet, type Rule } from '../rules.ts';
import { AccessWindow } from '../counting/window.ts';

export const SDK_NAME = '@hotkey/sdk/0.1.0';

export interface ClientOptions {
  /** the application name the hub knows this service by (required) */
  app: string;
  /** seed hub URLs (`ws://host:port`); the first hub reached tells the rest (required) */
  hubs: string | readonly string[];
  /** the app's token, if the hub requires one @default undefined */
  token?: string;
  /** this instance's id @default `${hostname}-${pid}-${random}` */
  instanceId?: string;
  /** host name shown on the dashboard @default os.hostname() */
  host?: string;
  /** how often counts are reported to the hubs @default 100 */
  flushIntervalMs?: number;
  /** hot values kept in the local cache @default 10000 */
  maxEntries?: number;
  /** a hot key of a hub we are cut off from is served from cache at most this long @default 3000 */
  maxStaleMs?: number;
  /** keys counted exactly (the rest only in a fixed-size sketch) @default 8192 */
  maxCandidates?: number;
  /** hot keys remembered at most @default 65536 */
  maxHotKeys?: number;
  /** first reconnect delay cap (full jitter) @default 100 */
  reconnectMinMs?: number;
  /** largest reconnect delay cap (full jitter) @default 5000 */
  reconnectMaxMs?: number;
  /** ping period @default 1000 */
  pingIntervalMs?: number;
  /** a hub silent this long is dead @default 2000 */
  livenessTimeoutMs?: number;
  /** `invalidate()` rejects with HK_ERR_TIMEOUT after this @default 3000 */
  invalidateTimeoutMs?: number;
  /** invalidations awaiting their ack at most; more reject with HK_ERR_UNAVAILABLE @default 10000 */
  maxPendingInvalidations?: number;
  /** a report is dropped (and counted) while the socket has more than this queued @default 1048576 */
  maxBufferedBytes?: number;
  /** monotonic clock in ms; tests inject one @default performance.now */
  now?: () => number;
}

/** Connection state changes, as yielded by `status()`. */
export type ClientStatus =
  | { type: 'connect'; hub: string; url: string }
  | { type: 'disconnect'; hub: string | undefined; url: string; code: number; reason: string }
  | { type: 'reconnecting'; url: string; delayMs: number }
  | { type: 'members'; epoch: number; members: Member[] }
  | { type: 'resync'; hub: string; reason: 'gap' }
  | { type: 'stale'; hub: string; keys: number }
  | { type: 'error'; error: Error; url?: string }
  | { type: 'closed' };

export interface PromoteInfo {
  hub: string;
  qps: number;
  hotMs: number;
  cacheTtlMs: number;
  cache: boolean;
}
export interface DemoteInfo {
  hub: string;
  /** 'demote': the hub said so; 'expired': the promotion ran out; 'stale': cut off from the hub; 'snapshot': absent from a resync; 'evicted': over maxHotKeys */
  reason: 'demote' | 'expired' | 'stale' | 'snapshot' | 'evicted';
}
export interface InvalidateInfo {
  hub: string;
  seq: number;
}

export interface ClientEvents {
  promote: [key: string, info: PromoteInfo];
  demote: [key: string, info: DemoteInfo];
  invalidate: [key: string, info: InvalidateInfo];
  /** network and protocol faults; emitted only when someone listens */
  error: [error: Error];
}

export interface ClientStats {
  /** get() answered from the local cache */
  hits: number;
  /** get() that called the loader because the key was not hot (or hot without caching) */
  misses: number;
  /** loads of hot keys (single flight: concurrent callers share one) */
  loads: number;
  /** get() calls that joined a load already in flight */
  coalesced: number;
  loadErrors: number;
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
}

interface HubLink {
  hub: string;
  conn: HubConnection;
  lastSeq: number;
  resyncing: boolean;
}

interface PendingInvalidation {
  key: string;
  hub: string;
  resolve: () => void;
  reject: (err: HotKeyError) => void;
  timer: NodeJS.Timeout;
}

interface Flight {
  promise: Promise<unknown>;
}

interface StatusSubscriber {
  push(status: ClientStatus): void;
  end(): void;
}

const STATUS_QUEUE_LIMIT = 1024;
/** an early report (a key just reached its threshold) follows the previous report by at least this */
const URGENT_FLUSH_GAP_MS = 20;
/** report frames are split well under MAX_FRAME_BYTES (msgpack overhead is a few bytes a key) */
const REPORT_FRAME_BUDGET = MAX_FRAME_BYTES >> 1;

export class HotKeyClient extends EventEmitter<ClientEvents> {
  readonly app: string;
  readonly instanceId: string;

  readonly #opts: Required<Omit<ClientOptions, 'token' | 'hubs' | 'now'>> & { token: string | undefined };
  readonly #now: () => number;
  readonly #seeds: string[];
  readonly #window: AccessWindow;
  readonly #cache: LocalCache;
  readonly #hot: HotSet;
  readonly #flights = new Map<string, Flight>();
  readonly #conns = new Map<string, HubConnection>();
  readonly #links = new Map<string, HubLink>();
  readonly #dormantSeeds = new Set<string>();
  readonly #pending = new Map<number, PendingInvalidation>();
  readonly #subscribers = new Set<StatusSubscriber>();
  readonly #handler: ConnectionHandler;

  #ownership = new Ownership([]);
  #rules = new RuleSet([]);
  #rulesJson = '';
  /** per-rule local thresholds scaled to this window, indexed like #rules.rules */
  #thresholds: number[] = [];
  #instances = 0;
  #epoch = -1;
  /** coarse clock, refreshed by the tick and by every hub frame: no clock read per access */
  #clock: number;
  #tickTimer: NodeJS.Timeout | undefined;
  /** the pending early report, if any (an immediate when due at once, else a timeout) */
  #urgentImmediate: NodeJS.Immediate | undefined;
  #urgentTimer: NodeJS.Timeout | undefined;
  #lastFlushAt = -Infinity;
  #nextInvalidateId = 0;
  #closed = false;
  #readySettled = false;
  readonly #ready: Promise<void>;
  #resolveReady!: () => void;
  #rejectReady!: (err: Error) => void;

  #hits = 0;
  #misses = 0;
  #loads = 0;
  #coalesced = 0;
  #loadErrors = 0;
  #reports = 0;
  #reportedKeys = 0;
  #reportsDropped = 0;
  #invalidations = 0;
  #invalidateTimeouts = 0;
  #resyncs = 0;

  constructor(options: ClientOptions) {
    super();
    if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
    const { app, token } = options;
    if (typeof app !== 'string' || app.length === 0 || app.length > 256) throw new TypeError('options.app must be a non-empty string of at most 256 characters');
    if (token !== undefined && (typeof token !== 'string' || token.length > 256)) throw new TypeError('options.token must be a string of at most 256 characters');
    const hubs = typeof options.hubs === 'string' ? [options.hubs] : options.hubs;
    if (!Array.isArray(hubs) || hubs.length === 0) throw new TypeError('options.hubs must be a ws:// URL or a non-empty array of them');
    for (const url of hubs) {
      if (typeof url !== 'string' || !/^wss?:\/\/[^\s]+$/.test(url)) throw new TypeError(`options.hubs: "${String(url)}" is not a ws:// or wss:// URL`);
    }
    const now = options.now ?? (() => performance.now());
    if (typeof now !== 'function') throw new TypeError('options.now must be a function');
    const host = options.host ?? os.hostname();
    const instanceId = options.instanceId ?? `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
    if (typeof instanceId !== 'string' || instanceId.length === 0 || instanceId.length > 256) throw new TypeError('options.instanceId must be a non-empty string of at most 256 characters');
    if (typeof host !== 'string' || host.length > 256) throw new TypeError('options.host must be a string of at most 256 characters');
    this.#opts = {
      app,
      token,
      instanceId,
      host,
      flushIntervalMs: posInt(options.flushIntervalMs, 100, 'flushIntervalMs'),
      maxEntries: posInt(options.maxEntries, 10_000, 'maxEntries'),
      maxStaleMs: nonNegInt(options.maxStaleMs, 3000, 'maxStaleMs'),
      maxCandidates: posInt(options.maxCandidates, 8192, 'maxCandidates'),
      maxHotKeys: posInt(options.maxHotKeys, 65_536, 'maxHotKeys'),
      reconnectMinMs: posInt(options.reconnectMinMs, 100, 'reconnectMinMs'),
      reconnectMaxMs: posInt(options.reconnectMaxMs, 5000, 'reconnectMaxMs'),
      pingIntervalMs: posInt(options.pingIntervalMs, 1000, 'pingIntervalMs'),
      livenessTimeoutMs: posInt(options.livenessTimeoutMs, 2000, 'livenessTimeoutMs'),
      invalidateTimeoutMs: posInt(options.invalidateTimeoutMs, 3000, 'invalidateTimeoutMs'),
      maxPendingInvalidations: posInt(options.maxPendingInvalidations, 10_000, 'maxPendingInvalidations'),
      maxBufferedBytes: posInt(options.maxBufferedBytes, 1 << 20, 'maxBufferedBytes'),
    };
    if (this.#opts.reconnectMaxMs < this.#opts.reconnectMinMs) throw new TypeError('options.reconnectMaxMs must be at least reconnectMinMs');
    this.app = app;
    this.instanceId = instanceId;
    this.#now = now;
    this.#clock = now();
    this.#seeds = [...new Set(hubs as string[])];
    this.#window = new AccessWindow({ maxCandidates: this.#opts.maxCandidates, now: this.#clock, onUrgent: () => this.#urgentSoon() });
    this.#cache = new LocalCache({ maxEntries: this.#opts.maxEntries });
    this.#hot = new HotSet({ maxKeys: this.#opts.maxHotKeys });
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.#ready.catch(() => {}); // nobody may ever call ready(): not an unhandled rejection
    this.#handler = this.#makeHandler();

    // One timer drives the coarse clock, the window slices, hot-key expiry and the reports.
    this.#tickTimer = setInterval(() => this.#tick(), this.#opts.flushIntervalMs);
    for (const url of this.#seeds) this.#connect(url);
  }

  /**
   * Resolves once a hub welcomed this instance (rules received). Rejects with a HotKeyError
   * HK_ERR_AUTH / HK_ERR_UNKNOWN_APP / HK_ERR_VERSION when a hub refuses it, HK_ERR_CLOSED when
   * the client is closed first, or the signal's reason when `signal` aborts.
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
      // value. Recency reaches the LRU once per key per coarse clock tick, not on every hit.
      const clock = this.#clock;
      if (hot.promise !== undefined && clock < hot.expiresAt && clock < hot.until && hot.cache) {
        if (hot.usedAt !== clock) {
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
    const clock = this.#clock;
    if (hot.until <= clock || !hot.cache) {
      this.#misses++;
      return this.#callLoader(key, loader);
    }
    const cached = this.#cache.get(key, clock); // drops (and counts) an expired value
    if (cached !== MISS) {
      this.#hits++;
      return Promise.resolve(cached as T);
    }
    const flight = this.#flights.get(key);
    if (flight !== undefined) {
      this.#coalesced++;
      return flight.promise as Promise<T>;
    }
    this.#loads++;
    const generation = hot.generation;
    const promise = this.#callLoader(key, loader).then((value) => {
      // Cache only if nothing made the value untrustworthy while it loaded.
      const now = this.#hot.get(key);
      if (!this.#closed && now !== undefined && now.generation === generation && now.cache && now.cacheTtlMs > 0 && this.#flights.get(key) === entry) {
        this.#cache.set(key, value, this.#clock + now.cacheTtlMs, now);
      }
      return value;
    });
    const entry: Flight = { promise };
    this.#flights.set(key, entry);
    const done = () => {
      if (this.#flights.get(key) === entry) this.#flights.delete(key);
    };
    promise.then(done, done);
    return promise;
  }

  /** Counts an access without loading anything. */
  track(key: string): void {
    checkKey(key);
    if (!this.#closed) this.#window.track(key);
  }

  /** Whether the key is hot right now on this instance. */
  isHot(key: string): boolean {
    checkKey(key);
    const hot = this.#hot.get(key);
    return hot !== undefined && hot.until > this.#clock;
  }

  /**
   * Drops the key's cached value here, then asks its owner hub to drop it everywhere. Resolves
   * once the hub acknowledged that every instance applied it; rejects with HK_ERR_TIMEOUT after
   * `invalidateTimeoutMs`, HK_ERR_UNAVAILABLE at once when no hub is connected, HK_ERR_CLOSED
   * after close().
   */
  invalidate(key: string): Promise<void> {
    checkKey(key);
    if (this.#closed) return Promise.reject(new HotKeyError(ErrorCode.Closed, 'client is closed'));
    this.#dropValue(key);
    this.#invalidations++;
    const hub = this.#ownership.owner(key);
    if (hub === undefined) return Promise.reject(new HotKeyError(ErrorCode.Unavailable, `no hub connected to invalidate "${key}"`));
    if (this.#pending.size >= this.#opts.maxPendingInvalidations) {
      return Promise.reject(new HotKeyError(ErrorCode.Unavailable, `${this.#pending.size} invalidations already await their ack`));
    }
    return new Promise<void>((resolve, reject) => {
      const id = ++this.#nextInvalidateId;
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        this.#invalidateTimeouts++;
        reject(new HotKeyError(ErrorCode.Timeout, `invalidation of "${key}" not acknowledged within ${this.#opts.invalidateTimeoutMs} ms`));
      }, this.#opts.invalidateTimeoutMs);
      this.#pending.set(id, { key, hub, resolve, reject, timer });
      this.#links.get(hub)?.conn.send({ t: MsgType.InvalidateRequest, id, key });
    });
  }

  /** An async iterator of connection state changes; it ends when the client closes. */
  status(): AsyncIterableIterator<ClientStatus> {
    const queue: ClientStatus[] = [];
    let ended = this.#closed;
    let wake: (() => void) | undefined;
    const subscribers = this.#subscribers;
    const sub: StatusSubscriber = {
      push(status) {
        if (queue.length >= STATUS_QUEUE_LIMIT) queue.shift(); // a reader that lags loses the oldest
        queue.push(status);
        wake?.();
      },
      end() {
        ended = true;
        wake?.();
      },
    };
    if (!ended) subscribers.add(sub);
    const iterator: AsyncIterableIterator<ClientStatus> = {
      async next() {
        for (;;) {
          const item = queue.shift();
          if (item !== undefined) return { value: item, done: false };
          if (ended) return { value: undefined, done: true };
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      },
      async return() {
        subscribers.delete(sub);
        ended = true;
        queue.length = 0;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  stats(): ClientStats {
    const w = this.#window.stats();
    return {
      hits: this.#hits,
      misses: this.#misses,
      loads: this.#loads,
      coalesced: this.#coalesced,
      loadErrors: this.#loadErrors,
      reports: this.#reports,
      reportedKeys: this.#reportedKeys,
      reportsDropped: this.#reportsDropped,
      hotKeys: this.#hot.size,
      cacheSize: this.#cache.size,
      evictions: this.#cache.evictions,
      expirations: this.#cache.expirations,
      candidates: w.candidates,
      candidatesEvicted: w.evicted,
      invalidations: this.#invalidations,
      invalidationsPending: this.#pending.size,
      invalidateTimeouts: this.#invalidateTimeouts,
      resyncs: this.#resyncs,
      hubs: this.#links.size,
      instances: this.#instances,
    };
  }

  /** The rules the hubs sent (the default rule until then). */
  rules(): readonly Rule[] {
    return this.#rules.rules;
  }

  /** Ids of the hubs this instance is connected to. */
  hubs(): string[] {
    return [...this.#links.keys()];
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
    clearImmediate(this.#urgentImmediate);
    clearTimeout(this.#urgentTimer);
    this.#urgentImmediate = undefined;
    this.#urgentTimer = undefined;
    for (const conn of this.#conns.values()) conn.close(CloseCode.Normal, 'client closed');
    this.#conns.clear();
    this.#links.clear();
    this.#ownership = new Ownership([]);
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(new HotKeyError(ErrorCode.Closed, `client closed before "${p.key}" was acknowledged`));
    }
    this.#pending.clear();
    this.#hot.clear();
    this.#cache.clear();
    this.#flights.clear();
    if (!this.#readySettled) {
      this.#readySettled = true;
      this.#rejectReady(new HotKeyError(ErrorCode.Closed, 'client closed before a hub welcomed it'));
    }
    this.#status({ type: 'closed' });
    for (const sub of this.#subscribers) sub.end();
    this.#subscribers.clear();
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
    this.#flights.delete(key);
  }

  #forget(key: string): void {
    this.#cache.delete(key);
    this.#flights.delete(key);
  }

  #tick(): void {
    const now = this.#now();
    this.#clock = now;
    this.#window.advance(now);
    for (const state of this.#hot.expire(now)) {
      this.#forget(state.key);
      this.emit('demote', state.key, { hub: state.hub, reason: 'expired' });
    }
    this.#flush();
  }

  #flush(): void {
    if (this.#links.size === 0) return; // counts wait (capped by the window) until a hub is back
    this.#lastFlushAt = this.#clock;
    this.#report(this.#window.collect());
  }

  /**
   * A key just reached its threshold (a surge): report the urgent keys at once instead of at the
   * next flush, but no sooner than URGENT_FLUSH_GAP_MS after the previous report, so a storm of
   * crossings costs at most one small extra frame per hub per gap. Steady keys wait for the tick.
   */
  #urgentSoon(): void {
    if (this.#closed || this.#urgentImmediate !== undefined || this.#urgentTimer !== undefined || this.#links.size === 0) return;
    this.#urgentImmediate = setImmediate(this.#urgentFlush);
  }

  readonly #urgentFlush = (): void => {
    this.#urgentImmediate = undefined;
    this.#urgentTimer = undefined;
    if (this.#closed || !this.#window.urgent || this.#links.size === 0) return;
    const now = this.#now();
    const wait = this.#lastFlushAt + URGENT_FLUSH_GAP_MS - now;
    if (wait > 0) {
      this.#urgentTimer = setTimeout(this.#urgentFlush, Math.ceil(wait));
      return;
    }
    this.#clock = now;
    this.#lastFlushAt = now;
    this.#report(this.#window.collectUrgent());
  };

  /** One Report frame per hub with the keys it owns (split only if a frame would be too large). */
  #report({ keys, counts }: { keys: readonly string[]; counts: readonly number[] }): void {
    if (keys.length === 0) return;
    const groups = new Map<string, { keys: string[]; counts: number[] }>();
    const single = this.#links.size === 1 ? this.#links.keys().next().value : undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const hub = single ?? this.#ownership.owner(key);
      if (hub === undefined) continue;
      let g = groups.get(hub);
      if (g === undefined) groups.set(hub, (g = { keys: [], counts: [] }));
      g.keys.push(key);
      g.counts.push(counts[i]!);
    }
    for (const [hub, g] of groups) {
      const link = this.#links.get(hub);
      if (link === undefined) continue;
      let start = 0;
      while (start < g.keys.length) {
        let end = start;
        let bytes = 16;
        while (end < g.keys.length && end - start < MAX_REPORT_KEYS && bytes < REPORT_FRAME_BUDGET) {
          bytes += g.keys[end]!.length * 3 + 16;
          end++;
        }
        const n = end - start;
        if (link.conn.bufferedAmount > this.#opts.maxBufferedBytes) {
          this.#reportsDropped++;
        } else if (link.conn.sendBytes(encode({ t: MsgType.Report, keys: g.keys.slice(start, end), counts: g.counts.slice(start, end) }))) {
          this.#reports++;
          this.#reportedKeys += n;
        } else this.#reportsDropped++;
        start = end;
      }
    }
  }

  #connect(url: string): HubConnection {
    const hello: Hello = { t: MsgType.Hello, v: PROTOCOL_VERSION, app: this.app, instance: this.instanceId, sdk: SDK_NAME, host: this.#opts.host, role: 'sdk' };
    if (this.#opts.token !== undefined) hello.token = this.#opts.token;
    const conn = new HubConnection(
      {
        url,
        hello,
        pingIntervalMs: this.#opts.pingIntervalMs,
        livenessTimeoutMs: this.#opts.livenessTimeoutMs,
        backoffMinMs: this.#opts.reconnectMinMs,
        backoffMaxMs: this.#opts.reconnectMaxMs,
      },
      this.#handler,
    );
    this.#conns.set(url, conn);
    conn.start();
    return conn;
  }

  #makeHandler(): ConnectionHandler {
    return {
      welcome: (conn, welcome) => this.#onWelcome(conn, welcome),
      message: (conn, message) => this.#onMessage(conn, message),
      down: (conn, code, reason, welcomed) => this.#onDown(conn, code, reason, welcomed),
      reconnecting: (conn, delayMs) => this.#status({ type: 'reconnecting', url: conn.url, delayMs }),
      error: (conn, error) => this.#fault(error, conn.url),
      fatal: (conn, error) => {
        this.#conns.delete(conn.url);
        this.#fault(error, conn.url);
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
    const existing = this.#links.get(welcome.hub);
    if (existing !== undefined && existing.conn !== conn) {
      // Two URLs reach the same hub: keep one socket. A duplicate seed sleeps until we lose every hub.
      conn.close(CloseCode.Normal, 'duplicate connection');
      this.#conns.delete(conn.url);
      if (this.#seeds.includes(conn.url)) this.#dormantSeeds.add(conn.url);
      return;
    }
    this.#links.set(welcome.hub, { hub: welcome.hub, conn, lastSeq: welcome.seq, resyncing: false });
    this.#ownership = new Ownership(this.#links.keys());
    this.#applyConfig(welcome.rules, welcome.local, welcome.instances);
    this.#status({ type: 'connect', hub: welcome.hub, url: conn.url });
    this.#applyMembers(welcome.epoch, welcome.members);
    if (!this.#readySettled) {
      this.#readySettled = true;
      this.#resolveReady();
    }
  }

  #onDown(conn: HubConnection, code: number, reason: string, welcomed: boolean): void {
    const hub = conn.hubId;
    const link = hub === undefined ? undefined : this.#links.get(hub);
    // a failed attempt to reconnect is an 'error' + 'reconnecting', not another disconnect
    if (welcomed) this.#status({ type: 'disconnect', hub, url: conn.url, code, reason });
    if (code === CloseCode.Leaving && !this.#seeds.includes(conn.url)) {
      // The hub left the cluster: its keys move. Members brings it back if it rejoins.
      conn.close();
      this.#conns.delete(conn.url);
    }
    if (hub === undefined || link === undefined || link.conn !== conn) return;
    this.#linkLost(hub);
    if (this.#links.size === 0 && this.#dormantSeeds.size > 0) {
      for (const url of this.#dormantSeeds) if (!this.#conns.has(url)) this.#connect(url);
      this.#dormantSeeds.clear();
    }
  }

  /** A welcomed hub is gone: its keys move to the other hubs and its hot keys go stale. */
  #linkLost(hub: string): void {
    this.#links.delete(hub);
    this.#ownership = new Ownership(this.#links.keys());
    this.#clock = this.#now();
    const stale = this.#hot.markStale(hub, this.#clock, this.#opts.maxStaleMs);
    if (stale > 0) this.#status({ type: 'stale', hub, keys: stale });
    // Invalidations that hub will never ack go to the key's new owner, or fail now.
    for (const [id, p] of this.#pending) {
      if (p.hub !== hub) continue;
      const owner = this.#ownership.owner(p.key);
      const link = owner === undefined ? undefined : this.#links.get(owner);
      if (owner !== undefined && link !== undefined && link.conn.send({ t: MsgType.InvalidateRequest, id, key: p.key })) {
        p.hub = owner;
      } else {
        clearTimeout(p.timer);
        this.#pending.delete(id);
        p.reject(new HotKeyError(ErrorCode.Unavailable, `hub ${hub} was lost before it acknowledged "${p.key}"`));
      }
    }
  }

  #onMessage(conn: HubConnection, message: ServerMessage): void {
    if (this.#closed) return;
    const hub = conn.hubId;
    const link = hub === undefined ? undefined : this.#links.get(hub);
    if (hub === undefined || link === undefined || link.conn !== conn) return;
    this.#clock = this.#now();
    switch (message.t) {
      case MsgType.Promote: {
        this.#sequence(link, message.seq);
        const { state, added, evicted } = this.#hot.promote(hub, message.key, message, this.#clock);
        if (evicted !== undefined) {
          this.#forget(evicted);
          this.emit('demote', evicted, { hub, reason: 'evicted' });
        }
        if (!state.cache) this.#forget(message.key);
        this.#window.calm(message.key); // hot already: its reports need not hurry any more
        if (added) this.emit('promote', message.key, { hub, qps: message.qps, hotMs: message.hotMs, cacheTtlMs: message.cacheTtlMs, cache: message.cache });
        return;
      }
      case MsgType.Invalidate: {
        this.#sequence(link, message.seq);
        this.#dropValue(message.key);
        link.conn.send({ t: MsgType.Applied, seq: message.seq });
        this.emit('invalidate', message.key, { hub, seq: message.seq });
        return;
      }
      case MsgType.Demote: {
        this.#sequence(link, message.seq);
        this.#forget(message.key);
        if (this.#hot.demote(message.key)) this.emit('demote', message.key, { hub, reason: 'demote' });
        return;
      }
      case MsgType.Snapshot: {
        const before = new Set(message.hot.map((e) => e.key).filter((k) => this.#hot.get(k) !== undefined));
        const { removed, touched } = this.#hot.replaceHub(hub, message.hot, this.#clock);
        for (const key of touched) this.#forget(key);
        link.lastSeq = message.seq;
        link.resyncing = false;
        for (const key of removed) {
          this.#forget(key);
          this.emit('demote', key, { hub, reason: 'snapshot' });
        }
        for (const e of message.hot) {
          if (!before.has(e.key)) this.emit('promote', e.key, { hub, qps: e.qps, hotMs: e.ttlMs, cacheTtlMs: e.cacheTtlMs, cache: e.cache });
        }
        return;
      }
      case MsgType.Ack: {
        const p = this.#pending.get(message.id);
        if (p !== undefined) {
          clearTimeout(p.timer);
          this.#pending.delete(message.id);
          p.resolve();
        }
        return;
      }
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

  /**
   * Broadcasts from a hub are numbered. A gap means we missed one (maybe an invalidation): drop
   * every cached value that hub vouched for and ask for a fresh snapshot. While it is on its way,
   * later broadcasts still apply.
   */
  #sequence(link: HubLink, seq: number): void {
    if (link.resyncing) return;
    if (seq === link.lastSeq + 1) {
      link.lastSeq = seq;
      return;
    }
    link.resyncing = true;
    this.#resyncs++;
    for (const key of this.#hot.invalidateHub(link.hub)) this.#forget(key);
    link.conn.send({ t: MsgType.Resync });
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
      const hubLocal = local[i] ?? Math.max(1, Math.floor(rule.threshold / 5));
      return Math.max(1, Math.ceil((hubLocal * windowMs) / rule.windowMs));
    });
    this.#window.setThresholds(this.#thresholds);
  }

  /**
   * Connects to every member with a URL we do not reach yet; drops members that left. A member
   * we are not welcomed by, listed under another URL than the one we last reached it at, has
   * moved (say, restarted on another port): the old connection would retry a dead address
   * forever and keep the new one from being made, so it goes (a seed URL goes dormant, to be
   * tried again once every hub is lost, like a duplicate seed).
   */
  #applyMembers(epoch: number, members: Member[]): void {
    if (epoch < this.#epoch) return;
    this.#epoch = epoch;
    const ids = new Set(members.map((m) => m.id));
    for (const [url, conn] of this.#conns) {
      if (this.#seeds.includes(url) || conn.hubId === undefined || ids.has(conn.hubId)) continue;
      conn.close(CloseCode.Normal, 'hub left the cluster');
      this.#conns.delete(url);
      if (this.#links.get(conn.hubId)?.conn === conn) this.#linkLost(conn.hubId);
    }
    for (const m of members) {
      if (m.url === '' || this.#links.has(m.id) || this.#conns.has(m.url)) continue;
      if (!/^wss?:\/\/[^\s]+$/.test(m.url)) continue;
      for (const [url, conn] of this.#conns) {
        if (conn.hubId !== m.id) continue;
        conn.close(CloseCode.Normal, 'hub moved to another URL');
        this.#conns.delete(url);
        if (this.#seeds.includes(url)) this.#dormantSeeds.add(url);
      }
      this.#connect(m.url);
    }
    this.#status({ type: 'members', epoch, members });
  }

  #fault(error: Error, url?: string): void {
    this.#status(url === undefined ? { type: 'error', error } : { type: 'error', error, url });
    // EventEmitter throws on 'error' without listeners: a network fault must never do that.
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  #status(status: ClientStatus): void {
    for (const sub of this.#subscribers) sub.push(status);
  }
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`key must be a string, got ${typeof key}`);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw new TypeError(`key must be 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`);
}

function posInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`options.${name} must be a positive integer, got ${String(value)}`);
  return value;
}

function nonNegInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new TypeError(`options.${name} must be a non-negative integer, got ${String(value)}`);
  return value;
}
