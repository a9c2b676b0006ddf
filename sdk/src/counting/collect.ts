/**
 * What the access window (window.ts) hands the report scheduler at a flush: the keys due, their counts
 * since the previous flush scaled back to accesses, and their rule indexes.
 */
import type { RulePolicy } from './rule-policy.ts';
import type { CounterTable } from './counter-table.ts';

export interface Collected {
  keys: string[];
  counts: number[];
  /** rule index of each key, aligned with `keys` */
  rules: number[];
}

/** what a collect returns when nothing is due (shared, hence frozen) */
export const EMPTY: Collected = Object.freeze({
  keys: Object.freeze([]) as unknown as string[],
  counts: Object.freeze([]) as unknown as number[],
  rules: Object.freeze([]) as unknown as number[],
});

/**
 * Keys whose window total reached the local threshold of their rule and that were accessed
 * since the previous collect, with count = accesses since then (capped by the window total).
 * Resets every candidate's pending count, reported or not. Allocates only when something is
 * due: an idle flush returns the shared EMPTY.
 */
export function collectDue(t: CounterTable, policy: RulePolicy, thresholds: ArrayLike<number>): Collected {
  let out: Collected | undefined;
  for (let u = 0; u < t.usedCount; u++) {
    const slot = t.used[u]!;
    const pending = t.pending[slot]!;
    if (pending === 0) continue;
    t.pending[slot] = 0;
    const rule = t.ruleOf[slot]!;
    const total = t.totals[slot]!;
    const given = rule < 0 ? undefined : thresholds[rule];
    const threshold = given === undefined ? undefined : Math.max(1, given * policy.rateOf(rule));
    // Below the local threshold this flush's counts are dropped, not carried: a backlog sent
    // when the key finally crosses would land in the hub's *current* slice and stay there a
    // whole window past the accesses' real time, inflating the cluster sum (a key at 0.9 x
    // threshold got promoted). Dropping loses < local threshold per instance per window,
    // which is what the hub's local threshold is sized for.
    if (threshold === undefined || total < threshold) continue;
    out = appended(out, t.keys[slot]!, policy.scaled(Math.min(pending, total), rule), rule);
  }
  return out ?? EMPTY;
}

/** `out` (a fresh result, the first time) with one more key */
export function appended(out: Collected | undefined, key: string, count: number, rule: number): Collected {
  const to = out ?? { keys: [], counts: [], rules: [] };
  to.keys.push(key);
  to.counts.push(count);
  to.rules.push(rule);
  return to;
}
