/**
 * The decide step of the data path: which tracked keys are hot. The aggregator counts (window-slab.ts)
 * and asks this module at each crossing; the listener hears the transitions.
 *
 * Promotion: a fixed rule's key is promoted inside ingest the moment its window total reaches the
 * threshold (lowest latency; the aggregator's loop makes that one compare itself and calls
 * `admitHot` / `promote`); each later crossing renews its `hotMs` lifetime. 'baseline' and 'topk'
 * rules, and rules with a pre-declared window (`hotFrom` / `hotUntil`, schedule.ts), go through
 * `judge`: the rule's detector (detectors/baseline.ts, detectors/topk.ts) says whether the key is
 * anomalous, a slot's `level` keeps the window total it was promoted at, and an open pre-declared
 * window promotes any reported key of it; `tick` promotes the window's exact keys at its start.
 *
 * Demotion (`tick`, every ~100 ms, walks only the hot keys): below `threshold × demoteRatio`
 * (baseline / topk: `level × demoteRatio`, topk also out of the top ⌈1.5k⌉) for `demoteWindows`
 * whole windows ('cooled'), or not renewed within `hotMs` ('expired').
 *
 * Admission to the hot set, so that one reporter cannot fill every SDK's hot set: a key whose
 * window only one instance reported (one reporter bit) is promoted only if the reporting
 * connection's solo budget (`PromotionBudget`, a token bucket per connection) has a token; and the
 * hot set holds at most `maxHot` keys: at the cap a candidate must beat the weakest of a random
 * sample of hot keys (more reporters, then more QPS), which is demoted ('evicted') to make room.
 * Keys many instances report therefore always get in, and junk carried by one connection stays
 * within that connection's budget. A refused key stays tracked and is reconsidered on its next
 * crossing.
 */
import type { HubDemoteReason } from '@hotkey/sdk/protocol';
import type { Rule } from '@hotkey/sdk/rules';
import type { BaselineDetector } from './detectors/baseline.ts';
import { TopKDetector } from './detectors/topk.ts';
import { MODE_BASELINE, MODE_FIXED, MODE_TOPK, NONE, type RuleTable } from './rule-table.ts';
import { activeExactKeys } from './schedule.ts';
import type { WindowSlab } from '../aggregate/window-slab.ts';

export type DemoteReason = HubDemoteReason;

/** Called synchronously on transitions only (never per record). */
export interface AggregatorListener {
  promote(key: string, rule: Rule, qps: number, latencyMs: number | undefined, manual: boolean): void;
  demote(key: string, qps: number, reason: DemoteReason): void;
}

/** What one connection may still promote alone (a TokenBucket fits). */
export interface PromotionBudget {
  take(now: number): boolean;
}

export interface DeciderOptions {
  listener: AggregatorListener;
  /** hot keys at most */
  maxHot: number;
  /** hot slots sampled for the weakest at the cap */
  samples: number;
  random: () => number;
  /** the slot of a key a pre-declared window names, admitted if need be; -1: not tracked here */
  track: (key: string, now: number) => number;
}

export class Decider {
  readonly #slots: WindowSlab;
  readonly #rules: RuleTable;
  readonly #listener: AggregatorListener;
  readonly #maxHot: number;
  readonly #samples: number;
  readonly #random: () => number;
  readonly #track: (key: string, now: number) => number;
  readonly hotSlots = new Set<number>();
  /** the hot slots again, as an array for uniform sampling (slot -> index in WindowSlab.hotPos) */
  readonly #hotList: number[] = [];
  /** set while Aggregator.setRules recounts the topk detectors' hot keys */
  recounting = false;
  /** crossings not promoted: the only reporter's connection was out of solo budget */
  soloRefused = 0;
  /** crossings not promoted: the hot set was at `maxHot` and the key was not stronger than the weakest sampled */
  capRefused = 0;
  /** hot keys demoted to make room for a stronger one */
  displaced = 0;

  constructor(slots: WindowSlab, rules: RuleTable, options: DeciderOptions) {
    this.#slots = slots;
    this.#rules = rules;
    this.#listener = options.listener;
    this.#maxHot = options.maxHot;
    this.#samples = options.samples;
    this.#random = options.random;
    this.#track = options.track;
  }

  /** A record of a baseline, topk or pre-declared rule (see the design note); true when it promoted the key. */
  judge(slot: number, r: number, count: number, total: number, now: number): boolean {
    const slots = this.#slots;
    const rules = this.#rules;
    const key = slots.keys[slot]!;
    const hot = slots.hot[slot] === 1;
    const mode = rules.mode[r]!;
    let promote = false;
    let renew = false;
    if (mode === MODE_BASELINE) {
      const level = (rules.detectors[r] as BaselineDetector).observe(key, count, now, hot);
      if (!hot) slots.level[slot] = level;
      renew = total >= slots.level[slot]!;
      promote = renew;
    } else if (mode === MODE_TOPK) {
      const detector = rules.detectors[r] as TopKDetector;
      detector.observe(key, count, now);
      if (total >= rules.threshold[r]!) {
        renew = hot && !detector.outranked(key);
        promote = !hot && detector.entersTop(key, now);
        if (promote) slots.level[slot] = rules.threshold[r]!;
      }
    } else {
      renew = promote = total >= rules.threshold[r]!;
    }
    if (now >= rules.hotFrom[r]! && now < rules.hotUntil[r]!) {
      // a pre-declared window is open: any reported access makes the key hot until its end
      slots.hotUntil[slot] = Math.max(now + rules.hotMs[r]!, rules.hotUntil[r]!);
      slots.lowSince[slot] = NONE;
      if (hot) return false;
      this.promote(slot, now, false);
      return true;
    }
    if (!renew && !promote) return false;
    if (hot) {
      if (renew) {
        slots.hotUntil[slot] = now + rules.hotMs[r]!;
        slots.lowSince[slot] = NONE;
      }
    } else if (promote) {
      slots.hotUntil[slot] = now + rules.hotMs[r]!;
      slots.lowSince[slot] = NONE;
      this.promote(slot, now, false);
      return true;
    }
    return false;
  }

  /** Demotes hot keys that cooled or expired; promotes the exact keys of pre-declared windows that opened. */
  tick(now: number): void {
    const slots = this.#slots;
    const rules = this.#rules;
    for (const detector of rules.detectors) if (detector instanceof TopKDetector) detector.refresh(now);
    this.#promoteDeclared(now);
    for (const slot of this.hotSlots) {
      slots.rotate(slot, now);
      const r = slots.ruleOf(slot);
      if (now >= slots.hotUntil[slot]!) {
        this.demote(slot, 'expired', now);
      } else if (rules.special[r] !== 0 && now >= rules.hotFrom[r]! && now < rules.hotUntil[r]!) {
        slots.lowSince[slot] = NONE; // pre-declared: never cool inside the window
      } else if (this.#isLow(slot, r)) {
        if (slots.lowSince[slot] === NONE) slots.lowSince[slot] = now;
        else if (now - slots.lowSince[slot]! >= rules.demoteMs[r]!) this.demote(slot, 'cooled', now);
      } else {
        slots.lowSince[slot] = NONE;
      }
    }
  }

  /** Below the demotion level: fixed `threshold × demoteRatio`, else the promotion level × demoteRatio (topk: also out of the top ⌈1.5k⌉). */
  #isLow(slot: number, r: number): boolean {
    const slots = this.#slots;
    const rules = this.#rules;
    const mode = rules.mode[r]!;
    if (mode === MODE_FIXED) return slots.totalOf(slot) < rules.demoteLevel[r]!;
    const ratio = rules.rules[r]!.demoteRatio;
    if (slots.totalOf(slot) < slots.level[slot]! * ratio) return true;
    return mode === MODE_TOPK && (rules.detectors[r] as TopKDetector).outranked(slots.keys[slot]!);
  }

  /** Exact keys of an open pre-declared window become hot at its start, before any traffic. */
  #promoteDeclared(now: number): void {
    const slots = this.#slots;
    for (const { key, rule } of activeExactKeys(this.#rules.rules, now)) {
      let slot = slots.index.get(key);
      if (slot !== undefined && slots.hot[slot] === 1) continue;
      if (slot === undefined) {
        slot = this.#track(key, now);
        if (slot < 0) continue;
      }
      if (slots.ruleOf(slot) !== rule) continue; // a more specific rule decides this key
      slots.rotate(slot, now);
      slots.hotUntil[slot] = Math.max(now + this.#rules.hotMs[rule]!, this.#rules.hotUntil[rule]!);
      slots.lowSince[slot] = NONE;
      this.promote(slot, now, false);
    }
  }

  /** Marks the slot hot for its rule's `hotMs` by hand (dashboard / API). */
  promoteByHand(slot: number, now: number): void {
    const slots = this.#slots;
    slots.rotate(slot, now);
    slots.hotUntil[slot] = now + this.#rules.hotMs[slots.ruleOf(slot)]!;
    slots.lowSince[slot] = NONE;
    this.promote(slot, now, true);
  }

  /** Makes the slot hot (or renews it) and tells the listener. */
  promote(slot: number, now: number, manual: boolean): void {
    const slots = this.#slots;
    const rules = this.#rules;
    const wasHot = slots.hot[slot] === 1;
    slots.hot[slot] = 1;
    const r = slots.ruleOf(slot);
    if (!wasHot) {
      this.#addHot(slot);
      slots.hotSince[slot] = now;
      const detector = rules.detectors[r];
      if (detector instanceof TopKDetector) detector.hot++;
      if (rules.mode[r] !== MODE_FIXED && !(slots.level[slot]! > 0 && slots.level[slot]! < Infinity))
        slots.level[slot] = rules.threshold[r]!;
    }
    const latency = manual ? undefined : slots.accumulatedFor(slot, now);
    let rule = rules.rules[r]!;
    // inside a pre-declared window the SDKs keep the key to the window's end
    if (slots.hotUntil[slot]! - now > rule.hotMs) rule = { ...rule, hotMs: Math.ceil(slots.hotUntil[slot]! - now) };
    this.#listener.promote(slots.keys[slot]!, rule, slots.qps(slot, now), latency, manual);
  }

  demote(slot: number, reason: DemoteReason, now: number): void {
    const slots = this.#slots;
    this.hotGone(slot);
    slots.level[slot] = 0;
    slots.hot[slot] = 0;
    this.removeHot(slot);
    slots.lowSince[slot] = NONE;
    this.#listener.demote(slots.keys[slot]!, slots.qps(slot, now), reason);
  }

  /** A hot slot stops being hot without a demotion event (ownership moved, rules dropped it). */
  hotGone(slot: number): void {
    if (this.recounting) return;
    const detector = this.#rules.detectors[this.#slots.ruleOf(slot)];
    if (detector instanceof TopKDetector) detector.hot = Math.max(0, detector.hot - 1);
  }

  #addHot(slot: number): void {
    if (this.hotSlots.has(slot)) return;
    this.hotSlots.add(slot);
    this.#slots.hotPos[slot] = this.#hotList.length;
    this.#hotList.push(slot);
  }

  removeHot(slot: number): void {
    if (!this.hotSlots.delete(slot)) return;
    const hotPos = this.#slots.hotPos;
    const i = hotPos[slot]!;
    const last = this.#hotList.pop()!;
    if (last !== slot) {
      this.#hotList[i] = last;
      hotPos[last] = i;
    }
  }

  /** May the crossing key in `slot` become hot? See the design note at the top. */
  admitHot(slot: number, solo: PromotionBudget | undefined, now: number): boolean {
    const reporters = this.#slots.reporterBitCount(slot);
    let victim = -1;
    if (this.hotSlots.size >= this.#maxHot) {
      victim = this.#weakestHot(now);
      if (victim < 0 || !this.#stronger(slot, reporters, victim, now)) {
        this.capRefused++;
        return false;
      }
    }
    if (reporters <= 1 && solo !== undefined && !solo.take(now)) {
      this.soloRefused++;
      return false;
    }
    if (victim >= 0) {
      this.displaced++;
      this.demote(victim, 'evicted', now);
    }
    return true;
  }

  #stronger(slot: number, reporters: number, victim: number, now: number): boolean {
    const victimReporters = this.#slots.reporterBitCount(victim);
    if (reporters !== victimReporters) return reporters > victimReporters;
    return this.#slots.qps(slot, now) > this.#slots.qps(victim, now);
  }

  /** The weakest (fewest reporters, then lowest QPS) of a random sample of hot slots. */
  #weakestHot(now: number): number {
    const n = this.#hotList.length;
    if (n === 0) return -1;
    let best = -1;
    let bestReporters = Infinity;
    let bestQps = Infinity;
    for (let k = 0; k < this.#samples; k++) {
      const slot = this.#hotList[Math.floor(this.#random() * n)]!;
      this.#slots.rollReporterWindow(slot, now);
      const reporters = this.#slots.reporterBitCount(slot);
      const qps = this.#slots.qps(slot, now);
      if (reporters < bestReporters || (reporters === bestReporters && qps < bestQps)) {
        best = slot;
        bestReporters = reporters;
        bestQps = qps;
      }
    }
    return best;
  }
}
