/**
 * The read path past a cache hit: what `get()` does when the key is not hot, not cached, or not
 * vouched for by a current lease, and how long a hot key's value lives (refresh-ahead,
 * stale-if-error from its rule). The hit itself stays in `HotKeyClient.get`, a handful of field
 * reads small enough for V8 to inline into the caller's loop; everything else comes here.
 */
import type { HotState } from '../../cache/hot-set.ts';
import type { AccessWindow } from '../../counting/window.ts';
import { LOAD_DEFAULTS } from '../../rules.ts';
import type { AppConfig } from '../report/app-config.ts';
import { REFRESH_JITTER, type HotLoads, type LoadPolicy } from './loads.ts';
import type { ValuePush } from './push.ts';
import type { SurgeLocal } from './surge-local.ts';

export type Loader<T> = (key: string) => T | PromiseLike<T>;

export interface ReadPathOptions {
  window: AccessWindow;
  config: AppConfig;
  loads: HotLoads;
  push: ValuePush;
  /** this instance's share of REFRESH_JITTER, in [0, 1) */
  jitter: number;
  closed: () => boolean;
  /** local surges, unless turned off */
  surge: SurgeLocal | undefined;
}

export class ReadPath {
  readonly #o: ReadPathOptions;
  /** get() that called the loader because the key was not hot (or hot without caching, or unleased) */
  misses = 0;
  /** of those, hot keys whose hub's lease was not current */
  unleased = 0;
  /** loader calls that threw or rejected */
  loadErrors = 0;
  /**
   * true while `slow()` calls a loader whose value is not cached (the key not hot, not cached by
   * its rule, no current lease, the client closed): an adapter's loader then sends the caller's
   * plain read, not a load made to be cached (redis/read/hot-read.ts)
   */
  passing = false;

  constructor(options: ReadPathOptions) {
    this.#o = options;
  }

  /** get() past the hit path; a `hot` key's access is counted already, `clock` read by that get(). */
  slow<T>(key: string, loader: Loader<T>, hot: HotState | undefined, clock: number): Promise<T> {
    if (this.#o.closed()) return this.#pass(key, loader);
    if (hot === undefined) {
      const slot = this.#o.window.track(key);
      // a key surging here is served like a hot one from this access on (its load shared)
      const surged = this.#o.surge?.check(key, slot, clock);
      if (surged === undefined) {
        this.misses++;
        return this.#pass(key, loader);
      }
      hot = surged;
    }
    if (hot.until <= clock || !hot.cache || hot.lease.until <= clock) {
      // not hot any more, not cached by rule, or no current lease vouches for a cached value
      this.misses++;
      if (hot.until > clock && hot.cache) {
        this.unleased++;
        this.#o.loads.tally(key); // a read of a hot key that reaches the store
      }
      return this.#pass(key, loader);
    }
    this.#o.push.remember(key, loader);
    return this.#o.loads.get(key, loader, hot, clock);
  }

  /** Calls a loader whose value is not cached: `passing` while it runs. */
  #pass<T>(key: string, loader: Loader<T>): Promise<T> {
    return this.#call(key, loader, true);
  }

  /** Calls the loader (of a load to be cached: not `passing`); a synchronous throw becomes a rejection, and failures are counted. */
  callLoader<T>(key: string, loader: Loader<T>): Promise<T> {
    return this.#call(key, loader, false);
  }

  #call<T>(key: string, loader: Loader<T>, passing: boolean): Promise<T> {
    const outer = this.passing; // a loader may call get() itself
    this.passing = passing;
    try {
      const result = Promise.resolve(loader(key));
      result.then(undefined, () => this.loadErrors++);
      return result;
    } catch (err) {
      this.loadErrors++;
      return Promise.reject(err);
    } finally {
      this.passing = outer;
    }
  }

  /**
   * The key's rule's load fields (refresh-ahead, stale-if-error), defaults filled in. A shared
   * key's own refresh point sits 90 % of the way from the rule's to expiry (less the jitter: for
   * 0.8, at 0.88 to 0.98 of cacheTtlMs): the hub asks one instance to refresh at the rule's point
   * and pushes the value, so the others reload only if it is late.
   */
  policy(key: string): LoadPolicy {
    const rule = this.#o.config.ruleFor(key);
    const ratio = rule?.refreshAheadRatio ?? LOAD_DEFAULTS.refreshAheadRatio;
    return {
      refreshAheadRatio: rule?.push === true && ratio < 1 ? ratio + (1 - ratio) * 0.9 : ratio,
      staleIfErrorMs: rule?.staleIfErrorMs ?? LOAD_DEFAULTS.staleIfErrorMs,
    };
  }

  /** A pushed value's refresh point (ms after arrival) and stale-if-error time (push.ts). */
  lifetime(key: string, hot: HotState): { refreshMs: number; keepMs: number } {
    const { refreshAheadRatio, staleIfErrorMs } = this.policy(key);
    return {
      refreshMs: hot.cacheTtlMs * refreshAheadRatio * (refreshAheadRatio < 1 ? 1 - REFRESH_JITTER * this.#o.jitter : 1),
      keepMs: staleIfErrorMs,
    };
  }
}
