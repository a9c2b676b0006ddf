/**
 * What local caching saves, per app: SDKs report, per key hot at them, the accesses answered from
 * their local cache (hits) and the loader calls they made (reads that reached the store) since
 * their last report (protocol.ts Report `hits` / `loads`). The owner hub sums them cluster-wide per
 * hot key and turns each period (ROLL_MS) into a rate: "served locally %" and loads/s per key,
 * reads spared per second for the app. Only keys hot here are kept (bounded by the hot set).
 */

/** how often the sums become rates */
export const ROLL_MS = 1000;

export interface KeySavings {
  /** share of the key's reads answered from local caches, 0–100 */
  localPct: number;
  /** loader calls per second for the key, cluster-wide */
  loadsPerSec: number;
}

export class Savings {
  readonly #sums = new Map<string, { hits: number; loads: number }>();
  #rates = new Map<string, KeySavings>();
  #periodStart: number;
  /** reads answered from local caches per second, over the last period, all hot keys */
  sparedPerSec = 0;

  constructor(now: number) {
    this.#periodStart = now;
  }

  /** A report's counts for a key hot here. */
  add(key: string, hits: number, loads: number): void {
    const sum = this.#sums.get(key);
    if (sum === undefined) this.#sums.set(key, { hits, loads });
    else {
      sum.hits += hits;
      sum.loads += loads;
    }
  }

  /** Turns the period's sums into rates once ROLL_MS passed; keys no longer hot go. */
  roll(now: number, isHot: (key: string) => boolean): void {
    const elapsed = now - this.#periodStart;
    if (elapsed < ROLL_MS) return;
    this.#periodStart = now;
    const rates = new Map<string, KeySavings>();
    let spared = 0;
    for (const [key, { hits, loads }] of this.#sums) {
      if (!isHot(key)) continue;
      const reads = hits + loads;
      rates.set(key, {
        localPct: reads === 0 ? 0 : (100 * hits) / reads,
        loadsPerSec: (loads * 1000) / elapsed,
      });
      spared += hits;
    }
    this.#sums.clear();
    this.#rates = rates;
    this.sparedPerSec = (spared * 1000) / elapsed;
  }

  /** The key's rates over the last period, if it was reported hot then. */
  of(key: string): KeySavings | undefined {
    return this.#rates.get(key);
  }
}
