/**
 * An app's rules compiled for the ingest loop: one typed array per rule field (threshold, slice
 * and window lengths, hot lifetime, demotion level and delay, mode, pre-declared window), indexed
 * by the rule index a slot caches, plus each baseline / topk rule's detector. Matching a key to a
 * rule (RuleSet.match) happens once per key on admission; after that a record costs array reads.
 *
 * `hoist(now)` fills, once per ingest call, each rule's current slice, its place in the ring and
 * the reporter window: two float divisions and a float modulo per record would cost as much as
 * the rest of the loop.
 */
import { RuleSet, WINDOW_SLICES, type Rule } from '@hotkey/sdk/rules';
import { BaselineDetector } from './detectors/baseline.ts';
import { TopKDetector } from './detectors/topk.ts';
import { nextTransition } from './schedule.ts';

export const MODE_FIXED = 0;
export const MODE_BASELINE = 1;
export const MODE_TOPK = 2;

/**
 * A slot's `lowSince` while its key is not below its rule's demotion level: the demotion delay
 * (`demoteMs`) has not started.
 */
export const NONE = -1;
export type Detector = BaselineDetector | TopKDetector | undefined;

export class RuleTable {
  #set: RuleSet;
  threshold = new Float64Array(0);
  sliceMs = new Float64Array(0);
  windowMs = new Float64Array(0);
  hotMs = new Float64Array(0);
  demoteLevel = new Float64Array(0);
  demoteMs = new Float64Array(0);
  /** 0: fixed without a pre-declared window (the ingest loop's one-compare path); else decide.ts judges */
  special = new Uint8Array(0);
  mode = new Uint8Array(0);
  hotFrom = new Float64Array(0);
  hotUntil = new Float64Array(0);
  /** per rule for the `now` of the last `hoist`: current slice, its ring index, reporter window */
  sliceNow = new Float64Array(0);
  sliceIndex = new Int32Array(0);
  genNow = new Float64Array(0);
  #hoistedAt = NaN;
  detectors: Detector[] = [];
  #detectorKeys: string[] = [];
  readonly #reportFraction: number;
  /** next pre-declared window start or end (Infinity: none) */
  #nextTransition = Infinity;

  constructor(rules: readonly Rule[], now: number, maxKeys: number, reportFraction: number) {
    this.#reportFraction = reportFraction;
    this.#set = new RuleSet(rules);
    this.#compile(now, maxKeys);
  }

  /** rules in effect (DEFAULT_RULE when the app has none) */
  get rules(): readonly Rule[] {
    return this.#set.rules;
  }

  /** The index of the rule a key falls under, or -1. */
  match(key: string): number {
    return this.#set.match(key);
  }

  /** Replaces the rules; a detector whose rule is unchanged survives (its baselines with it). */
  replace(rules: readonly Rule[], now: number, maxKeys: number): void {
    this.#set = new RuleSet(rules);
    this.#compile(now, maxKeys);
  }

  /** Fills the per-rule slice and window numbers for `now` (cached while `now` repeats). */
  hoist(now: number): void {
    if (now === this.#hoistedAt) return;
    this.#hoistedAt = now;
    for (let r = 0; r < this.sliceMs.length; r++) {
      const slice = Math.floor(now / this.sliceMs[r]!);
      this.sliceNow[r] = slice;
      this.sliceIndex[r] = slice % WINDOW_SLICES;
      this.genNow[r] = Math.floor(now / this.windowMs[r]!);
    }
  }

  /**
   * True once per pre-declared window start or end reached by `now`: the SDKs' per-instance
   * thresholds changed (1 inside a window), so the caller sends the app a Config.
   */
  transitionDue(now: number): boolean {
    if (now < this.#nextTransition) return false;
    this.#nextTransition = nextTransition(this.#set.rules, now);
    return true;
  }

  #compile(now: number, maxKeys: number): void {
    const rules = this.#set.rules;
    const n = rules.length;
    const kept = new Map<string, Detector>();
    this.#detectorKeys.forEach((k, i) => kept.set(k, this.detectors[i]));
    this.detectors = [];
    this.#detectorKeys = [];
    this.special = new Uint8Array(n);
    this.mode = new Uint8Array(n);
    this.hotFrom = new Float64Array(n).fill(Infinity);
    this.hotUntil = new Float64Array(n).fill(-Infinity);
    this.#nextTransition = nextTransition(rules, now);
    this.threshold = new Float64Array(n);
    this.sliceMs = new Float64Array(n);
    this.windowMs = new Float64Array(n);
    this.hotMs = new Float64Array(n);
    this.demoteLevel = new Float64Array(n);
    this.demoteMs = new Float64Array(n);
    this.sliceNow = new Float64Array(n);
    this.sliceIndex = new Int32Array(n);
    this.genNow = new Float64Array(n);
    this.#hoistedAt = NaN;
    rules.forEach((rule, i) => {
      this.threshold[i] = rule.threshold;
      this.windowMs[i] = rule.windowMs;
      this.sliceMs[i] = rule.windowMs / WINDOW_SLICES;
      this.hotMs[i] = rule.hotMs;
      this.demoteLevel[i] = rule.threshold * rule.demoteRatio;
      this.demoteMs[i] = rule.windowMs * rule.demoteWindows;
      const mode = rule.mode === 'baseline' ? MODE_BASELINE : rule.mode === 'topk' ? MODE_TOPK : MODE_FIXED;
      this.mode[i] = mode;
      if (rule.hotFrom !== undefined && rule.hotUntil !== undefined) {
        this.hotFrom[i] = rule.hotFrom;
        this.hotUntil[i] = rule.hotUntil;
      }
      this.special[i] = mode !== MODE_FIXED || rule.hotFrom !== undefined ? 1 : 0;
      const { hotFrom: _from, hotUntil: _until, hotMs: _hotMs, cacheTtlMs: _ttl, cache: _cache, ...detection } = rule;
      const id = mode === MODE_FIXED ? '' : JSON.stringify(detection);
      let detector = kept.get(id);
      if (id !== '' && detector === undefined) {
        detector =
          mode === MODE_BASELINE
            ? new BaselineDetector(rule, now, { maxKeys, reportFraction: this.#reportFraction })
            : new TopKDetector(rule, now);
      }
      if (detector instanceof TopKDetector) detector.hot = 0; // recounted by the caller (Aggregator.setRules)
      kept.delete(id);
      this.detectors.push(detector);
      this.#detectorKeys.push(id);
    });
  }
}
