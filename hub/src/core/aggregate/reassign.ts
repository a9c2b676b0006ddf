/**
 * What becomes of the aggregator's tracked keys (aggregator.ts) when what they are judged by
 * changes: new rules give each key its new rule (or drop it), and a new share of the cluster's
 * keys forgets the ones another hub now owns.
 */
import type { Rule } from '@hotkey/sdk/rules';
import type { Decider } from '../decide/decide.ts';
import { BaselineDetector } from '../decide/detectors/baseline.ts';
import { TopKDetector } from '../decide/detectors/topk.ts';
import { MODE_FIXED, type RuleTable } from '../decide/rule-table.ts';
import type { WindowSlab } from './window-slab.ts';

/**
 * Replaces the rules. Keys now matching no rule are dropped (demoted with reason 'rules' when
 * hot); keys whose rule's window length changed restart their window; hot keys stay hot, their
 * level seeded for a detecting rule and counted by a top-K one.
 */
export function reassignRules(
  slots: WindowSlab,
  table: RuleTable,
  decider: Decider,
  rules: readonly Rule[],
  now: number,
): void {
  const oldWindow = table.windowMs;
  table.replace(rules, now, slots.maxKeys);
  decider.recounting = true;
  for (const [key, slot] of [...slots.index]) {
    const r = table.match(key);
    if (r < 0) {
      if (slots.hot[slot] === 1) decider.demote(slot, 'rules', now);
      slots.release(slot);
      continue;
    }
    const changedWindow = oldWindow[slots.ruleOf(slot)] !== table.windowMs[r];
    slots.setRule(slot, r, now, changedWindow);
    if (slots.hot[slot] === 1) {
      if (table.mode[r] !== MODE_FIXED && !(slots.level[slot]! > 0)) slots.level[slot] = table.threshold[r]!;
      const detector = table.detectors[r];
      if (detector instanceof TopKDetector) detector.hot++;
    }
  }
  decider.recounting = false;
}

/**
 * This hub may now track only the keys `accept` takes (none: every key). The others are
 * forgotten without demotion events: their new owner decides now, and SDKs resynchronise on the
 * new member epoch. Returns how many were forgotten.
 */
export function reassignOwnership(
  slots: WindowSlab,
  table: RuleTable,
  decider: Decider,
  accept: ((key: string) => boolean) | undefined,
  now: number,
): number {
  // keys this hub did not watch may arrive now: their baselines need a fresh warm-up
  for (const detector of table.detectors) if (detector instanceof BaselineDetector) detector.restartWarmup(now);
  if (accept === undefined) return 0;
  let removed = 0;
  for (const [key, slot] of [...slots.index]) {
    if (accept(key)) continue;
    if (slots.hot[slot] === 1) decider.hotGone(slot);
    decider.removeHot(slot);
    slots.release(slot);
    removed++;
  }
  return removed;
}
