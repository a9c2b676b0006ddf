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
import { ErrorCode, ValidationError } from '@hotkey/sdk';
import {
  DEFAULT_RULE,
  MAX_MATCH_LENGTH,
  RuleSet,
  checkPredeclaredMatch,
  isGlob,
  parseTime,
  predeclaredActive,
  type Rule,
} from '@hotkey/sdk/rules';

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

/** A pre-declared window as the API and the dashboard show it. */
export interface PredeclaredRow {
  match: string;
  /** ms since epoch */
  from: number;
  until: number;
  /** the window covers now */
  active: boolean;
}

export function predeclaredRows(rules: readonly Rule[], now: number): PredeclaredRow[] {
  const rows: PredeclaredRow[] = [];
  for (const rule of rules) {
    if (rule.hotFrom === undefined || rule.hotUntil === undefined) continue;
    rows.push({ match: rule.match, from: rule.hotFrom, until: rule.hotUntil, active: predeclaredActive(rule, now) });
  }
  return rows;
}

/**
 * The app's rules with the window of `body` = `{match, from, until}` (ISO 8601 with a zone, or ms)
 * set: on the rule whose `match` is the same, else on a new rule copying the detection fields of
 * the rule that covers `match` today (the default rule when none does), so once the window ends
 * the keys are detected by the same fields as outside it. An app without rules keeps its default rule explicitly.
 * Throws ValidationError (HK_ERR_RULES) naming `match`, `from` or `until`.
 */
export function predeclaredRules(current: readonly Rule[], body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    bad('body', 'must be {"match", "from", "until"}');
  const raw = body as Record<string, unknown>;
  for (const name of Object.keys(raw))
    if (name !== 'match' && name !== 'from' && name !== 'until') bad(name, 'unknown field');
  const match = raw.match;
  if (typeof match !== 'string' || match.length === 0)
    bad('match', 'must be a non-empty string (an exact key or a glob)');
  if (match.length > MAX_MATCH_LENGTH) bad('match', `must be at most ${MAX_MATCH_LENGTH} characters`);
  checkPredeclaredMatch(match, 'match');
  if (raw.from === undefined) bad('from', 'is required');
  if (raw.until === undefined) bad('until', 'is required');
  const from = parseTime(raw.from, 'from');
  const until = parseTime(raw.until, 'until');
  if (until <= from) bad('until', 'must be after from');
  const rules: Rule[] = current.length > 0 ? [...current] : [DEFAULT_RULE];
  const same = rules.findIndex((r) => r.match === match);
  if (same >= 0) {
    rules[same] = { ...rules[same]!, hotFrom: from, hotUntil: until };
    return rules;
  }
  const base = new RuleSet(rules).ruleFor(match) ?? DEFAULT_RULE;
  const { hotFrom: _from, hotUntil: _until, ...detection } = base;
  rules.push({ ...detection, match, hotFrom: from, hotUntil: until });
  return rules;
}

function bad(field: string, message: string): never {
  throw new ValidationError(ErrorCode.Rules, field, message);
}

/** The rules without the window on `match` (the rule stays), or undefined when it has none. */
export function withoutPredeclared(current: readonly Rule[], match: string): Rule[] | undefined {
  const i = current.findIndex((r) => r.match === match && r.hotFrom !== undefined);
  if (i < 0) return undefined;
  const { hotFrom: _from, hotUntil: _until, ...rest } = current[i]!;
  return current.map((r, j) => (j === i ? rest : r));
}
