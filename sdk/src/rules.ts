/**
 * Detection rules, shared by hub and SDK so that both match a key to the same rule. This module
 * is the entry (`@hotkey/sdk/rules`): it matches keys to rules and derives per-key numbers from a
 * rule, and re-exports the rule's schema (rule-schema.ts) and its validation (rule-parse.ts).
 *
 * A rule's `match` is an exact key or a glob (`*` any run of characters, `?` one character).
 * The most specific rule wins: an exact key beats any glob; among globs the one with more literal
 * characters wins, then the one with fewer wildcards, then the earlier one. An app with no rules
 * gets `DEFAULT_RULE`, which matches every key; an app with rules detects only matching keys.
 * No `node:` imports: the dashboard bundles this file for in-page validation.
 */
import { compileGlob } from './glob.ts';
import { DEFAULT_RULE, REPLICA_DEFAULTS, type Rule } from './rule-schema.ts';

export {
  DEFAULT_RULE,
  derivedThreshold,
  LOAD_DEFAULTS,
  MAX_LIMIT,
  MAX_MATCH_LENGTH,
  MAX_REPLICAS,
  MAX_RULES,
  MAX_SHARDS,
  MAX_STALE_IF_ERROR_MS,
  MAX_TOPK,
  MODE_DEFAULTS,
  REPLICA_DEFAULTS,
  RULE_DEFAULTS,
  RULE_KINDS,
  RULE_MODES,
  WINDOW_SLICES,
  WRITE_DEFAULTS,
  type ReplicaPolicy,
  type Rule,
  type RuleKind,
  type RuleMode,
} from './rule-schema.ts';
export { checkPredeclaredMatch, parseRule, parseRules, parseTime, rulesForPeers } from './rule-parse.ts';

/**
 * The copies that serve reads of a key of `rule` at `qps` (the key itself counts as one; 1 means
 * no replica keys): only for rules that do not cache locally and do not turn replicas off.
 */
export function replicaCount(rule: Rule, qps: number): number {
  if (rule.cache || rule.replicas === false) return 1;
  const p = rule.replicas ?? REPLICA_DEFAULTS;
  if (!(qps > 0)) return 1;
  return Math.max(1, Math.min(p.max, Math.ceil((qps * p.factor) / p.perNodeQps)));
}

/** Whether a pre-declared rule's window covers `now` (ms since epoch). */
export function predeclaredActive(rule: Rule, now: number): boolean {
  return rule.hotFrom !== undefined && rule.hotUntil !== undefined && now >= rule.hotFrom && now < rule.hotUntil;
}

export function isGlob(match: string): boolean {
  return match.includes('*') || match.includes('?');
}

interface CompiledGlob {
  index: number;
  literals: number;
  wildcards: number;
  test: (key: string) => boolean;
}

/**
 * An app's rules compiled for matching. `match(key)` returns the index into `rules` of the most
 * specific rule, or -1 when none matches. Callers cache the result per key: a glob test per access
 * would dominate the hot path.
 */
export class RuleSet {
  readonly rules: readonly Rule[];
  readonly #exact = new Map<string, number>();
  readonly #globs: CompiledGlob[] = [];

  constructor(rules: readonly Rule[]) {
    this.rules = rules.length > 0 ? rules : [DEFAULT_RULE];
    this.rules.forEach((rule, index) => {
      if (!isGlob(rule.match)) {
        if (!this.#exact.has(rule.match)) this.#exact.set(rule.match, index);
        return;
      }
      const wildcards = rule.match.length - rule.match.replace(/[*?]/g, '').length;
      const literals = rule.match.length - wildcards;
      let test: (key: string) => boolean;
      if (rule.match === '*') test = () => true;
      else if (wildcards === 1 && rule.match.endsWith('*')) {
        const prefix = rule.match.slice(0, -1);
        test = (key) => key.startsWith(prefix);
      } else {
        const glob = compileGlob(rule.match);
        test = (key) => glob.test(key);
      }
      this.#globs.push({ index, literals, wildcards, test });
    });
    this.#globs.sort((a, b) => b.literals - a.literals || a.wildcards - b.wildcards || a.index - b.index);
  }

  match(key: string): number {
    const exact = this.#exact.get(key);
    if (exact !== undefined) return exact;
    for (const glob of this.#globs) if (glob.test(key)) return glob.index;
    return -1;
  }

  ruleFor(key: string): Rule | undefined {
    const index = this.match(key);
    return index < 0 ? undefined : this.rules[index];
  }
}

/**
 * The per-instance report threshold for a rule: an instance reports a key once its own count in
 * the window reaches it. With `instances` SDKs each missing at most `local - 1` accesses, the
 * cluster loses less than `threshold * fraction`, so a key at `(1 + fraction) * threshold` in
 * aggregate is always promoted however thinly it is spread.
 * A rule with a `limit` reports every access (threshold 1): the hub divides the limit by what
 * each instance uses.
 * @param [fraction=0.2] share of the threshold the whole cluster may leave unreported
 */
export function localThreshold(rule: Rule, instances: number, fraction = 0.2, now?: number): number {
  // inside a pre-declared window every access is reported at once: the hub promotes on the first
  if (now !== undefined && predeclaredActive(rule, now)) return 1;
  // a limit is divided by the instances that use the key: each reports every access it sees
  if (rule.limit !== undefined) return 1;
  return Math.max(1, Math.floor((rule.threshold * fraction) / Math.max(1, instances)));
}
