/**
 * Which keys the access window (window.ts) gives an exact counter: TinyLFU admission with
 * Redis-style sampled LFU eviction.
 *
 * Every access of a key without a counter goes to a count-min sketch (count-min-sketch.ts),
 * aged once per window. A key earns a counter when its estimate stands out from the sketch's
 * noise floor (its mean counter) by the admission level, so a flood of one-off keys mostly
 * stays in the sketch. When the slots are full, the newcomer must beat the smallest total among
 * a few sampled slots (keys matching no rule go first), which it then replaces: a hot key
 * survives a flood while memory stays fixed.
 * References: Einziger et al., "TinyLFU: A highly efficient cache admission policy" (2017);
 * Redis `maxmemory-policy allkeys-lfu` (sampled eviction, `maxmemory-samples`).
 */
import type { CountMinSketch } from './count-min-sketch.ts';
import type { Sampler } from './sampler.ts';
import type { CounterTable } from './counter-table.ts';

export class Admission {
  readonly #sketch: CountMinSketch;
  readonly #t: CounterTable;
  readonly #level: number;
  readonly #samples: number;
  readonly #sampler: Sampler;
  readonly #slices: number;
  #slicesSinceDecay = 0;
  /**
   * Whether a key is admitted on its first access above the noise floor (a rule's per-instance
   * threshold of 1: see AccessWindow.setThresholds); undefined while no rule is at 1
   */
  firstAccess: ((key: string) => boolean) | undefined;
  admitted = 0;
  /** candidates that lost their slot to a newcomer */
  evicted = 0;
  /** newcomers refused because every sampled slot counted more */
  rejected = 0;

  constructor(sketch: CountMinSketch, table: CounterTable, level: number, samples: number, sampler: Sampler) {
    this.#sketch = sketch;
    this.#t = table;
    this.#level = level;
    this.#samples = samples;
    this.#sampler = sampler;
    this.#slices = table.slices;
  }

  /**
   * Counts one access of a key without a counter in the sketch; true when the key gets a
   * counter now (a slot is free for it: a victim, if it took one, is released).
   */
  admit(key: string): boolean {
    const estimate = this.#sketch.increment(key);
    // Under a flood of distinct keys every counter fills with noise; only an estimate that
    // stands out from that noise earns an exact counter.
    const floor = this.#sketch.noiseFloor;
    if (estimate < this.#level + floor && !(estimate >= 1 + floor && this.firstAccess?.(key) === true)) return false;
    const t = this.#t;
    if (!t.hasRoom) {
      const victim = this.#victim();
      if (t.ruleOf[victim]! >= 0 && t.totals[victim]! >= estimate) {
        this.rejected++;
        return false;
      }
      t.release(victim);
      this.evicted++;
    }
    this.admitted++;
    return true;
  }

  /** Sketch estimate of a key's recent accesses (an upper bound). */
  estimate(key: string): number {
    return this.#sketch.estimate(key);
  }

  /**
   * The window advanced `steps` slices; the sketch halves once per window so old counts fade
   * and 16-bit counters never stick at their ceiling (two idle windows clear it). Returns
   * whether a window's worth has passed since the last ageing.
   */
  age(steps: number): boolean {
    this.#slicesSinceDecay += steps;
    if (this.#slicesSinceDecay < this.#slices) return false;
    if (this.#slicesSinceDecay >= 2 * this.#slices) {
      this.#sketch.clear();
      this.#slicesSinceDecay = 0;
    } else {
      this.#sketch.halve();
      this.#slicesSinceDecay -= this.#slices;
    }
    return true;
  }

  /** The sampled slot with the smallest total; slots of keys matching no rule go first. */
  #victim(): number {
    const t = this.#t;
    let best = 0;
    let bestScore = Infinity;
    for (let i = 0; i < this.#samples; i++) {
      const slot = this.#sampler.u32() % t.capacity;
      const score = t.ruleOf[slot]! < 0 ? -1 : t.totals[slot]!;
      if (score < bestScore) {
        bestScore = score;
        best = slot;
      }
    }
    return best;
  }
}
