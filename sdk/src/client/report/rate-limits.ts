/**
 * Per-key rate limits (a rule's `limit`, accesses per second cluster-wide), enforced here with one
 * token bucket per limited key.
 *
 * The hub divides each key's limit among the instances that report the key (Limit frames, by what
 * each uses): its rate split. This instance refills its bucket at its split. Until a split
 * arrives — a key just seen, a hub not yet connected, a split past its `ttlMs` — the rate is
 * `limit / instances`, the instances of the app the hub last reported (the whole limit while no
 * hub was ever reached): an even split, which the hub's first split corrects within a report
 * interval or two.
 *
 * A bucket holds at most BURST_SECONDS of its rate (at least one token), so a split's change
 * takes effect at once and an idle instance cannot save up a burst that breaks the limit.
 * Bounded: at most `maxKeys` buckets (oldest dropped first: a dropped key restarts full) and as
 * many splits.
 */
import type { RuleSet } from '../../rules.ts';

/** a bucket holds this many seconds of its rate */
export const BURST_SECONDS = 0.1;

interface Bucket {
  /** the rule's cluster-wide limit; 0: the key has no limit */
  limit: number;
  tokens: number;
  at: number;
}
interface Split {
  rate: number;
  until: number;
}

export class RateLimits {
  /** accesses refused / admitted on limited keys */
  rejected = 0;
  admitted = 0;
  readonly #maxKeys: number;
  #rules: RuleSet | undefined;
  #instances = 1;
  readonly #buckets = new Map<string, Bucket>();
  readonly #splits = new Map<string, Split>();

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
  }

  /** Whether any rule limits keys (the ioredis wrapper skips every check otherwise). */
  get active(): boolean {
    return this.#rules !== undefined;
  }

  /** New rules or a new instance count: buckets re-read their rule on next use. */
  configure(rules: RuleSet, instances: number): void {
    this.#rules = rules.rules.some((r) => r.limit !== undefined) ? rules : undefined;
    this.#instances = Math.max(1, instances);
    this.#buckets.clear();
    if (this.#rules === undefined) this.#splits.clear();
  }

  /** The hub's rate splits for this instance (a Limit frame; its `rates`). */
  setSplits(keys: readonly string[], rates: readonly number[], ttlMs: number, now: number): void {
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (!this.#splits.has(key) && this.#splits.size >= this.#maxKeys) this.#dropOldest(this.#splits);
      this.#splits.delete(key); // re-insert: Map order is the age order dropOldest relies on
      this.#splits.set(key, { rate: rates[i]!, until: now + ttlMs });
    }
  }

  /** Splits of a hub that is gone: back to the even split until the next hub says otherwise. */
  clearSplits(): void {
    this.#splits.clear();
  }

  /** The rate this instance enforces for `key` now (Infinity: not limited). */
  rateOf(key: string, now: number): number {
    const limit = this.#limitOf(key);
    if (limit === 0) return Number.POSITIVE_INFINITY;
    const split = this.#splits.get(key);
    return split !== undefined && split.until > now ? split.rate : limit / this.#instances;
  }

  /** Takes a token for one access of `key`; false when its bucket is empty. */
  take(key: string, now: number): boolean {
    if (this.#rules === undefined) return true;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      const rule = this.#rules.ruleFor(key);
      const limit = rule?.limit ?? 0;
      if (this.#buckets.size >= this.#maxKeys) this.#dropOldest(this.#buckets);
      bucket = { limit, tokens: 0, at: now };
      bucket.tokens = limit === 0 ? 0 : burst(this.rateOf(key, now));
      this.#buckets.set(key, bucket);
    }
    if (bucket.limit === 0) return true;
    const rate = this.rateOf(key, now);
    bucket.tokens = Math.min(burst(rate), bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.admitted++;
      return true;
    }
    this.rejected++;
    return false;
  }

  #limitOf(key: string): number {
    const bucket = this.#buckets.get(key);
    if (bucket !== undefined) return bucket.limit;
    return this.#rules?.ruleFor(key)?.limit ?? 0;
  }

  #dropOldest(map: Map<string, unknown>): void {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
}

function burst(rate: number): number {
  return Math.max(1, rate * BURST_SECONDS);
}
