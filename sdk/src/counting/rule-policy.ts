/**
 * What the access window (window.ts) counts for each rule, derived once from the rules and the
 * client's sample rate whenever either changes, so the counting path reads flags and arrays
 * instead of rules.
 *
 * Rates: a rule's `sampleRate` can only lower the client's (effective rate min(client, rule)).
 * Every reported count is scaled back by 1 / rate and every threshold by rate, so the hub sees
 * unbiased estimates in accesses. Kinds: a rule counts reads, writes or both (`kind`), kept as a
 * bit mask a slot copies at admission.
 */
import type { RuleKind, RuleSet } from '../rules.ts';

/** access kinds as bits: a rule's mask says which it counts */
export const READ = 1;
export const WRITE = 2;
const KIND_MASK: Record<RuleKind, number> = { read: READ, write: WRITE, any: READ | WRITE };

const MAX_U32 = 0xffffffff;

export class RulePolicy {
  /** the client's rate: share of all accesses counted */
  readonly sampleRate: number;
  /** some rule samples below the client rate: those slots' counted accesses are thinned */
  readonly thinning: boolean;
  /** some rule does not count reads: reads check the slot's kinds */
  readonly filtering: boolean;
  /** some rule counts writes: trackWrite counts at all */
  readonly writesCounted: boolean;
  /** per rule: effective sample rate; [rules.length] is for keys matching no rule */
  readonly #rate: Float64Array;
  /** per rule: the access kinds it counts (READ | WRITE) */
  readonly #kinds: Uint8Array;

  constructor(rules: RuleSet, sampleRate: number) {
    const list = rules.rules;
    this.sampleRate = sampleRate;
    this.#rate = new Float64Array(list.length + 1);
    this.#kinds = new Uint8Array(list.length + 1).fill(READ);
    let thinning = false;
    let filtering = false;
    let writesCounted = false;
    list.forEach((rule, i) => {
      const rate = Math.min(sampleRate, rule.sampleRate ?? 1);
      this.#rate[i] = rate;
      if (rate < sampleRate) thinning = true;
      const kinds = KIND_MASK[rule.kind ?? 'read'];
      this.#kinds[i] = kinds;
      if ((kinds & READ) === 0) filtering = true;
      if ((kinds & WRITE) !== 0) writesCounted = true;
    });
    this.#rate[list.length] = sampleRate;
    this.thinning = thinning;
    this.filtering = filtering;
    this.writesCounted = writesCounted;
  }

  /** access kinds a rule index counts (-1: no rule) */
  kindsOf(rule: number): number {
    return rule < 0 ? READ : this.#kinds[rule]!;
  }

  /** effective sample rate of a rule index (-1: no rule) */
  rateOf(rule: number): number {
    return rule < 0 ? this.sampleRate : this.#rate[rule]!;
  }

  /** share of a slot's counted accesses kept: rule rate / client rate */
  keepOf(rule: number): number {
    return this.rateOf(rule) / this.sampleRate;
  }

  /** a sampled count scaled back to accesses */
  scaled(count: number, rule: number): number {
    const rate = this.rateOf(rule);
    return rate === 1 ? count : Math.min(MAX_U32, Math.round(count / rate));
  }

  /** a rule's per-instance threshold in counted (sampled) accesses; 0 for none */
  thresholdOf(rule: number, thresholds: ArrayLike<number>): number {
    if (rule < 0) return 0;
    const t = thresholds[rule];
    if (t === undefined || !(t >= 1)) return 0;
    return Math.max(1, Math.min(Math.ceil(t * this.rateOf(rule)), MAX_U32));
  }
}
