/**
 * Loads of hot keys past the hit path: single flight per key, refresh-ahead, stale-if-error and a
 * bound on loader calls in flight. The hit path (client.ts get()) is untouched: it serves a cached
 * value while `clock < expiresAt`, and this module moves `expiresAt` instead of adding checks.
 *
 * A value loaded at time s (when its load began: the value is at least that old) for a rule with
 * cacheTtlMs T, refreshAheadRatio r and staleIfErrorMs E lives in three phases:
 *
 *   [s, s + r·T·(1 − 0.1·j))   hit path (j ∈ [0, 1): this instance's jitter, spreading the reloads)
 *   [.., s + T)                still fresh: the first reader after the refresh point starts one
 *                              background reload (`expiresAt` moves to s + T while it runs, so
 *                              readers stay on the hit path) and gets the current value
 *   [s + T, s + T + E)         expired, kept for stale-if-error only. While the background reload
 *                              begun before s + T is still running (a slow or frozen store),
 *                              readers get the last value at once. Otherwise a reader reloads (others
 *                              join it); if that load fails (rejects, throws, times out after
 *                              loadTimeoutMs, or the limiter refuses it) the callers get the last
 *                              value, then every reader does until the value reloads, one retry
 *                              in the background every RELOAD_RETRY_MS
 *
 * Consistency: a load fills the cache only if the key's generation did not change while it ran
 * (no invalidation, resync or reconnect: hot-set.ts), exactly like a first load. An invalidation
 * empties the slot, so a value stale-if-error may serve is always one no invalidation dropped; it
 * is served only under a current lease, while the key is hot and cached by rule. Past s + T + E the
 * cache drops it and the loader's error reaches the caller.
 */
import type { HotSet, HotState } from '../../cache/hot-set.ts';
import { type LocalCache, MISS } from '../../cache/local-cache.ts';
import { ErrorCode, HotKeyError } from '../../errors.ts';
import { HoldResult } from '../../wire/protocol.ts';

/** share of the refresh point that instances spread their reloads over */
export const REFRESH_JITTER = 0.1;
/** after a failed reload, the next one is tried no sooner than this (the last value serves meanwhile) */
export const RELOAD_RETRY_MS = 250;
/** hot keys whose loader calls are tallied between two reports at most */
const MAX_TALLIED = 65_536;

/** The load fields of the key's rule, defaults filled in. */
export interface LoadPolicy {
  refreshAheadRatio: number;
  staleIfErrorMs: number;
}

export interface HotLoadsOptions {
  cache: LocalCache;
  hot: HotSet;
  /** loader calls in flight at most */
  maxInFlight: number;
  /** loads waiting for a slot at most */
  maxQueued: number;
  /** a load not settled after this long counts as failed for callers a stale value can answer */
  timeoutMs: number;
  /** this instance's jitter in [0, 1) */
  jitter: number;
  policy: (key: string) => LoadPolicy;
  /** reads the monotonic clock (and refreshes the client's coarse reading) */
  refreshCoarseNow: () => number;
  /** calls the loader: a synchronous throw becomes a rejection */
  callLoader: <T>(key: string, loader: (key: string) => T | PromiseLike<T>) => Promise<T>;
  closed: () => boolean;
  /** a key started serving its last value because a reload failed */
  onStale: (key: string, error: Error) => void;
  /** value push (push.ts): a promise of the key's pushed value to wait for instead of loading, or undefined */
  awaitPush: (key: string) => Promise<{ value: unknown } | undefined> | undefined;
  /** a load filled the cache with `value` (push.ts answers a Fill with it) */
  onFilled: (key: string, value: unknown, hot: HotState) => void;
}

interface Flight {
  promise: Promise<unknown>;
  /** the key's generation when the load began: it fills only if still the same */
  generation: number;
  startedAt: number;
  /** the load raced against its timeout, made for the first caller a stale value may answer */
  bounded: Promise<unknown> | undefined;
}

export class HotLoads {
  readonly #o: HotLoadsOptions;
  readonly #flights = new Map<string, Flight>();
  readonly #queue: (() => void)[] = [];
  #active = 0;
  /** loader calls per hot key since the last report (bounded: keys past MAX_TALLIED are not counted) */
  readonly #tally = new Map<string, number>();

  /** get() answered with a fresh value past the hit path (refresh due) */
  hits = 0;
  /** loader calls for hot keys (first loads, reloads, refreshes; not loads a pushed value answered) */
  loads = 0;
  coalesced = 0;
  /** background reloads started ahead of expiry */
  refreshes = 0;
  /** refreshes not started because the limiter was busy (retried later) */
  refreshesSkipped = 0;
  /** get() answered with a value past its cacheTtlMs because its reload failed */
  staleServed = 0;
  /** loads that did not settle within loadTimeoutMs */
  timeouts = 0;
  /** loads refused by a full queue (HK_ERR_LOAD_LIMIT) */
  rejected = 0;
  /** loads that resolved to `undefined`: returned to their callers, never cached */
  undefinedValues = 0;

  constructor(options: HotLoadsOptions) {
    this.#o = options;
  }

  /** loader calls running now */
  get inFlight(): number {
    return this.#active;
  }

  /** loads waiting for a slot now */
  get queued(): number {
    return this.#queue.length;
  }

  has(key: string): boolean {
    return this.#flights.has(key);
  }

  /** Voids the key's load in flight: its result is not cached. */
  drop(key: string): void {
    this.#flights.delete(key);
  }

  clear(): void {
    this.#flights.clear();
  }

  /** Loads the key now unless a load is in flight (value push: the hub asked this instance). */
  loadNow(key: string, loader: (key: string) => unknown, hot: HotState): void {
    if (!this.#flights.has(key)) this.#start(key, loader, hot, this.#o.refreshCoarseNow());
  }

  /** A hot key, cached by rule under a current lease, that the hit path did not answer. */
  get<T>(key: string, loader: (key: string) => T | PromiseLike<T>, hot: HotState, clock: number): Promise<T> {
    if (this.#o.cache.get(key, clock) === MISS) return this.#load(key, loader, hot, false) as Promise<T>;
    const held = hot.promise as Promise<T>;
    if (clock < hot.freshUntil) {
      this.hits++;
      if (clock >= hot.expiresAt && !this.#flights.has(key)) this.#refresh(key, loader, hot, clock);
      return held;
    }
    if (hot.retryAt !== 0) {
      // serving the last value already: readers do not wait, one retry runs in the background
      if (clock >= hot.retryAt && !this.#flights.has(key)) {
        hot.retryAt = clock + RELOAD_RETRY_MS;
        this.#start(key, loader, hot, clock);
      }
      this.staleServed++;
      return held;
    }
    const flight = this.#flights.get(key);
    if (flight !== undefined && flight.startedAt < hot.freshUntil && this.#mayServeStale(key, hot, clock)) {
      // its refresh began while the value was fresh and has not come back by expiry: the store
      // is slow or down, so readers keep the last value (within staleIfErrorMs) instead of waiting
      this.staleServed++;
      return held;
    }
    return this.#load(key, loader, hot, true) as Promise<T>;
  }

  /** Joins the key's load or starts one; `staleOk`: a failure answers with the last value if allowed. */
  #load(key: string, loader: (key: string) => unknown, hot: HotState, staleOk: boolean): Promise<unknown> {
    let flight = this.#flights.get(key);
    if (flight !== undefined) this.coalesced++;
    else flight = this.#start(key, loader, hot, this.#o.refreshCoarseNow());
    if (!staleOk) return flight.promise;
    return this.#bounded(flight).then(undefined, (err: unknown) => this.#stale(key, hot, err));
  }

  /** The answer to a caller whose load failed: the key's value if stale-if-error may serve it, else the error. */
  #stale(key: string, hot: HotState, err: unknown): unknown {
    const now = this.#o.refreshCoarseNow();
    if (!this.#mayServeStale(key, hot, now)) throw err;
    this.staleServed++;
    if (hot.retryAt === 0) this.#o.onStale(key, err instanceof Error ? err : new Error(String(err)));
    if (hot.retryAt < now + RELOAD_RETRY_MS) hot.retryAt = now + RELOAD_RETRY_MS;
    return hot.value;
  }

  /** Whether the key's last value may be served past cacheTtlMs: still kept, leased, hot and cached by rule. */
  #mayServeStale(key: string, hot: HotState, now: number): boolean {
    return (
      !this.#o.closed() &&
      this.#o.hot.get(key) === hot &&
      hot.promise !== undefined &&
      now < hot.keepUntil &&
      now < hot.lease.until &&
      now < hot.until &&
      hot.cache
    );
  }

  /** The flight raced against what is left of loadTimeoutMs (made once per flight). */
  #bounded(flight: Flight): Promise<unknown> {
    if (flight.bounded !== undefined) return flight.bounded;
    const left = flight.startedAt + this.#o.timeoutMs - this.#o.refreshCoarseNow();
    flight.bounded = new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.timeouts++;
          reject(new HotKeyError(ErrorCode.Timeout, `loader did not settle within ${this.#o.timeoutMs} ms`));
        },
        Math.max(0, left),
      );
      timer.unref?.();
      flight.promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
    return flight.bounded;
  }

  /** A background reload ahead of expiry; skipped (and retried later) when the limiter is busy. */
  #refresh(key: string, loader: (key: string) => unknown, hot: HotState, clock: number): void {
    if (this.#active >= this.#o.maxInFlight) {
      this.refreshesSkipped++;
      hot.expiresAt = Math.min(hot.freshUntil, clock + RELOAD_RETRY_MS);
      return;
    }
    this.refreshes++;
    hot.expiresAt = hot.freshUntil; // readers stay on the hit path while it runs
    this.#start(key, loader, hot, clock);
  }

  #start(key: string, loader: (key: string) => unknown, hot: HotState, clock: number): Flight {
    const flight: Flight = {
      promise: undefined as unknown as Promise<unknown>,
      generation: hot.generation,
      startedAt: clock,
      bounded: undefined,
    };
    // a local entry registering with its owner hub (holds.ts): this load began before the answer
    const hold = hot.hold;
    // a shared key just promoted: its value may be on its way from the hub (push.ts), else load
    flight.promise = this.#valueOf(key, loader, hot).then(
      async ({ value, pushed }) => {
        if (pushed) return value; // a pushed value is cached already
        if (hold === undefined) {
          this.#fill(key, value, flight);
          return value;
        }
        const held = await this.#afterHold(key, loader, hold, value);
        if (held.fill) this.#fill(key, held.value, flight);
        return held.value;
      },
      (err: unknown) => {
        // a failed refresh of a still-fresh value: the hit path serves it until the next try
        if (this.#flights.get(key) === flight && this.#o.hot.get(key) === hot && hot.promise !== undefined) {
          hot.expiresAt = Math.min(hot.freshUntil, this.#o.refreshCoarseNow() + RELOAD_RETRY_MS);
        }
        throw err;
      },
    );
    this.#flights.set(key, flight);
    const done = () => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
    };
    flight.promise.then(done, done);
    return flight;
  }

  /** The key's value: pushed (when a push is awaited and comes in time), else from the loader. */
  async #valueOf(
    key: string,
    loader: (key: string) => unknown,
    hot: HotState,
  ): Promise<{ value: unknown; pushed: boolean }> {
    const push = hot.promise === undefined ? this.#o.awaitPush(key) : undefined;
    const got = push === undefined ? undefined : await push;
    if (got !== undefined) return { value: got.value, pushed: true };
    return { value: await this.#limited(key, loader), pushed: false };
  }

  /**
   * A load begun before its entry's registration was answered (holds.ts): Recorded, the value may
   * be cached; Written, it may predate a write, so the key loads again (after the answer: safe);
   * refused or lost, the callers get a read of their own and nothing is cached.
   */
  async #afterHold(
    key: string,
    loader: (key: string) => unknown,
    hold: Promise<number | undefined>,
    value: unknown,
  ): Promise<{ value: unknown; fill: boolean }> {
    const r = await hold;
    if (r === HoldResult.Recorded) return { value, fill: true };
    if (r === HoldResult.Written) return { value: await this.#limited(key, loader), fill: true };
    return { value: await this.#o.callLoader(key, loader), fill: false };
  }

  /** Caches a loaded value if nothing made it untrustworthy while it loaded (consistency: see above). */
  #fill(key: string, value: unknown, flight: Flight): void {
    const hot = this.#o.hot.get(key);
    if (
      this.#o.closed() ||
      hot === undefined ||
      hot.generation !== flight.generation ||
      !hot.cache ||
      hot.cacheTtlMs <= 0 ||
      this.#flights.get(key) !== flight
    ) {
      return;
    }
    if (value === undefined) {
      this.undefinedValues++; // most likely a loader that forgot to return: never cached, never served stale
      return;
    }
    const { refreshAheadRatio, staleIfErrorMs } = this.#o.policy(key);
    const freshUntil = flight.startedAt + hot.cacheTtlMs;
    const refreshAt =
      refreshAheadRatio < 1
        ? flight.startedAt + hot.cacheTtlMs * refreshAheadRatio * (1 - REFRESH_JITTER * this.#o.jitter)
        : freshUntil;
    this.#o.cache.set(key, value, refreshAt, hot, freshUntil + staleIfErrorMs);
    hot.freshUntil = freshUntil;
    hot.retryAt = 0;
    this.#o.onFilled(key, value, hot);
  }

  /** Runs the loader when a slot is free, else queues it (bounded), else fails with HK_ERR_LOAD_LIMIT. */
  #limited(key: string, loader: (key: string) => unknown): Promise<unknown> {
    if (this.#active < this.#o.maxInFlight) return this.#run(key, loader);
    if (this.#queue.length >= this.#o.maxQueued) {
      this.rejected++;
      return Promise.reject(
        new HotKeyError(
          ErrorCode.LoadLimit,
          `load of "${key}" refused: ${this.#o.maxInFlight} loads in flight and ${this.#queue.length} queued`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.#queue.push(() => this.#run(key, loader).then(resolve, reject));
    });
  }

  /** A loader call for a hot key, for the savings reported to the hub. */
  tally(key: string): void {
    const n = this.#tally.get(key);
    if (n !== undefined) this.#tally.set(key, n + 1);
    else if (this.#tally.size < MAX_TALLIED) this.#tally.set(key, 1);
  }

  /** Loader calls for `key` since the last `resetTally`. */
  tallied(key: string): number {
    return this.#tally.get(key) ?? 0;
  }

  resetTally(): void {
    this.#tally.clear();
  }

  #run(key: string, loader: (key: string) => unknown): Promise<unknown> {
    this.loads++;
    this.tally(key);
    this.#active++;
    const result = this.#o.callLoader(key, loader);
    const release = () => {
      this.#active--;
      this.#queue.shift()?.();
    };
    result.then(release, release);
    return result;
  }
}
