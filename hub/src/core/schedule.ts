/**
 * Pre-declared hot keys: rules with a `hotFrom` / `hotUntil` window (a sale from 20:00 to 20:30)
 * make their keys hot for that window, before any traffic.
 *
 * How each kind reaches every instance:
 * - an exact key is promoted by its owner hub at the window's start (the hub's tick, every
 *   100 ms), with its promotion lasting to the window's end; every SDK hears the Promote;
 * - a glob cannot be enumerated, so while the window is open the hub hands SDKs a per-instance
 *   threshold of 1 for that rule (Config, sent again at each window's start and end): an SDK
 *   reports a matching key on its first counted accesses (an urgent report, within ~20 ms), and
 *   the owner hub promotes any reported key of an open window at once.
 * Inside the window the key is never demoted for being cool; after it, the rule's usual detection
 * applies. The windows live in the rules, so they persist wherever rules do (Redis in a cluster,
 * memory alone) and survive hub restarts.
 *
 * Pure: time (ms since epoch) comes in as `now`.
 */
import { isGlob, predeclaredActive, type Rule } from '@hotkey/sdk/rules';

/** Exact keys whose pre-declared window covers `now`, with the rule index that declares them. */
export function activeExactKeys(rules: readonly Rule[], now: number): { key: string; rule: number }[] {
  const out: { key: string; rule: number }[] = [];
  rules.forEach((rule, i) => {
    if (!isGlob(rule.match) && predeclaredActive(rule, now)) out.push({ key: rule.match, rule: i });
  });
  return out;
}

/** The next window start or end after `now`, or Infinity: when the SDKs' thresholds change. */
export function nextTransition(rules: readonly Rule[], now: number): number {
  let next = Infinity;
  for (const rule of rules) {
    if (rule.hotFrom === undefined || rule.hotUntil === undefined) continue;
    if (rule.hotFrom > now) next = Math.min(next, rule.hotFrom);
    else if (rule.hotUntil > now) next = Math.min(next, rule.hotUntil);
  }
  return next;
}

/** Whether any rule has a pre-declared window that has not ended. */
export function hasPredeclared(rules: readonly Rule[], now: number): boolean {
  return rules.some((rule) => rule.hotUntil !== undefined && rule.hotUntil > now);
}
