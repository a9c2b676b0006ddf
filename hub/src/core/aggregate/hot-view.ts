/**
 * The aggregator's hot keys as the rest of the hub reads them (the API, the feed, the QPS
 * history, the broadcasts): one row per hot key, its window brought up to `now` first.
 */
import type { Rule } from '@hotkey/sdk/rules';
import type { RuleTable } from '../decide/rule-table.ts';
import type { WindowSlab } from './window-slab.ts';

export interface HotKeyView {
  key: string;
  qps: number;
  threshold: number;
  /** ms when the key was promoted */
  since: number;
  /** ms the promotion lives without renewal */
  ttlMs: number;
  /** estimated distinct instances reporting the key in the current and previous window */
  instances: number;
  rule: Rule;
}

/** A row for each of `hotSlots`, unordered. */
export function hotViews(slots: WindowSlab, rules: RuleTable, hotSlots: Iterable<number>, now: number): HotKeyView[] {
  const out: HotKeyView[] = [];
  for (const slot of hotSlots) {
    slots.rotate(slot, now);
    const r = slots.ruleOf(slot);
    out.push({
      key: slots.keys[slot]!,
      qps: slots.qps(slot, now),
      threshold: rules.threshold[r]!,
      since: slots.hotSince[slot]!,
      ttlMs: Math.max(0, slots.hotUntil[slot]! - now),
      instances: slots.reporters(slot, now),
      rule: rules.rules[r]!,
    });
  }
  return out;
}
