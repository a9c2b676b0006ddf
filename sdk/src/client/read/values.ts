/**
 * What this instance holds for its hot keys — the cached value, a load in flight, the value-push
 * state — and the three ways it lets go of them: a value no longer trusted (the key stays hot and
 * reloads), every value at once (a flush), or a key no longer hot here. A drop also forgets the
 * key's recent cold read (recent-reads.ts): it may predate the write. Hub broadcasts, local
 * writes and `dropLocal()` all come through here, so each drop empties the same three places.
 */
import type { HotSet } from '../../cache/hot-set.ts';
import type { LocalCache } from '../../cache/local-cache.ts';
import type { HotLoads } from './loads.ts';
import type { ValuePush } from './push.ts';
import type { RecentReads } from './recent-reads.ts';

export interface LocalValuesOptions {
  cache: LocalCache;
  hot: HotSet;
  loads: HotLoads;
  push: ValuePush;
  recent: RecentReads;
  /** the client's coarse reading of the monotonic clock */
  coarseNow: () => number;
}

export class LocalValues {
  readonly #o: LocalValuesOptions;

  constructor(options: LocalValuesOptions) {
    this.#o = options;
  }

  /** Forgets the cached value and any load in flight whose result can no longer be trusted. */
  drop(key: string): void {
    const o = this.#o;
    o.cache.delete(key);
    o.hot.invalidate(key);
    o.loads.drop(key);
    o.push.dropped(key, o.coarseNow());
    o.recent.drop(key);
  }

  /** Every cached value and every load in flight goes; hot keys stay hot and reload. */
  dropAll(): void {
    const o = this.#o;
    for (const key of [...o.hot.keys()]) {
      o.hot.invalidate(key);
      o.push.dropped(key, o.coarseNow());
    }
    o.cache.clear();
    o.loads.clear();
    o.recent.clear();
  }

  /** The key is no longer hot (or cached) here: its value, load and pushed state go. */
  forget(key: string): void {
    const o = this.#o;
    o.cache.delete(key);
    o.loads.drop(key);
    o.push.forget(key);
  }

  /** `HotKeyClient.dropLocal` past its argument checks: how many keys it applied to. */
  dropWhere(target: string | ((key: string, value: unknown) => boolean)): number {
    const o = this.#o;
    if (typeof target === 'string') {
      const held = o.cache.has(target) || o.loads.has(target);
      this.drop(target);
      return held ? 1 : 0;
    }
    const keys: string[] = [];
    for (const key of o.hot.keys()) {
      const state = o.hot.get(key);
      if (state?.promise !== undefined && target(key, state.value)) keys.push(key);
    }
    for (const key of keys) this.drop(key);
    return keys.length;
  }

  clear(): void {
    const o = this.#o;
    o.hot.clear();
    o.cache.clear();
    o.loads.clear();
    o.push.clear();
    o.recent.clear();
  }
}
