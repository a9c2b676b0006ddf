/**
 * Detection rules, shared by hub and SDK so that both match a key to the same rule.
 *
 * A rule's `match` is an exact key or a glob (`*` any run of characters, `?` one character).
 * The most specific rule wins: an exact key beats any glob; among globs the one with more literal
 * characters wins, then the one with fewer wildcards, then the earlier one. An app with no rules
 * gets `DEFAULT_RULE`, which matches every key; an app with rules detects only matching keys.
 * No `node:` imports: the dashboard bundles this file for in-page validation.
 */
import { ErrorCode, ValidationError } from './errors.ts';
import { compileGlob } from './glob.ts';

export interface Rule {
  /** exact key or glob (`item:*`) */
  match: string;
  /** cluster-wide accesses within `windowMs` that promote the key */
  threshold: number;
  /** sliding window length; counted in 10 slices @default 1000 */
  windowMs: number;
  /** how long a promotion lives without renewal @default 30000 */
  hotMs: number;
  /** how long an SDK keeps a hot key's value before reloading it @default 5000 */
  cacheTtlMs: number;
  /** keep hot values in the SDK's local cache (false: only mark hot) @default true */
  cache: boolean;
  /** demote once the window sum stays below `threshold * demoteRatio` ... @default 0.5 */
  demoteRatio: number;
  /** ... for this many whole windows in a row @default 3 */
  demoteWindows: number;
}

export const RULE_DEFAULTS: Omit<Rule, 'match' | 'threshold'> = {
  windowMs: 1000,
  hotMs: 30_000,
  cacheTtlMs: 5000,
  cache: true,
  demoteRatio: 0.5,
  demoteWindows: 3,
};

export const DEFAULT_RULE: Rule = { match: '*', threshold: 1000, ...RULE_DEFAULTS };

export const MAX_RULES = 1000;
export const MAX_MATCH_LENGTH = 1024;
/** slices per window: fine enough that a window slides smoothly, small enough to sum cheaply */
export const WINDOW_SLICES = 10;

const INTEGER_FIELDS = {
  threshold: [1, 1_000_000_000],
  windowMs: [100, 600_000],
  hotMs: [100, 86_400_000],
  cacheTtlMs: [0, 86_400_000],
  demoteWindows: [1, 100],
} as const;
const KNOWN_FIELDS = new Set([
  'match',
  'threshold',
  'windowMs',
  'hotMs',
  'cacheTtlMs',
  'cache',
  'demoteRatio',
  'demoteWindows',
]);

function fail(field: string, message: string): never {
  throw new ValidationError(ErrorCode.Rules, field, message);
}

/** Validates one rule and fills its defaults; throws `ValidationError` naming the bad field. */
export function parseRule(input: unknown, field = 'rule'): Rule {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) fail(field, 'must be an object');
  const raw = input as Record<string, unknown>;
  for (const name of Object.keys(raw)) {
    if (KNOWN_FIELDS.has(name)) continue;
    const meant = [...KNOWN_FIELDS].find((known) => known.toLowerCase() === name.toLowerCase());
    fail(`${field}.${name}`, meant === undefined ? 'unknown field' : `unknown field (did you mean "${meant}"?)`);
  }
  const match = raw.match;
  if (typeof match !== 'string' || match.length === 0) fail(`${field}.match`, 'must be a non-empty string');
  if (match.length > MAX_MATCH_LENGTH) fail(`${field}.match`, `must be at most ${MAX_MATCH_LENGTH} characters`);
  if (raw.threshold === undefined) fail(`${field}.threshold`, 'is required');
  const rule: Rule = { match, threshold: 0, ...RULE_DEFAULTS };
  for (const [name, [min, max]] of Object.entries(INTEGER_FIELDS) as [
    keyof typeof INTEGER_FIELDS,
    readonly [number, number],
  ][]) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value)) fail(`${field}.${name}`, 'must be an integer');
    if (value < min || value > max) fail(`${field}.${name}`, `must be between ${min} and ${max}`);
    rule[name] = value;
  }
  if (raw.cache !== undefined) {
    if (typeof raw.cache !== 'boolean') fail(`${field}.cache`, 'must be a boolean');
    rule.cache = raw.cache;
  }
  if (raw.demoteRatio !== undefined) {
    const ratio = raw.demoteRatio;
    if (typeof ratio !== 'number' || !(ratio > 0 && ratio <= 1))
      fail(`${field}.demoteRatio`, 'must be a number in (0, 1]');
    rule.demoteRatio = ratio;
  }
  return rule;
}

/** Validates a rule list (duplicate `match` values are an error: which one would win is unclear). */
export function parseRules(input: unknown, field = 'rules'): Rule[] {
  if (!Array.isArray(input)) fail(field, 'must be an array');
  if (input.length > MAX_RULES) fail(field, `must have at most ${MAX_RULES} rules`);
  const seen = new Set<string>();
  return input.map((item, i) => {
    const rule = parseRule(item, `${field}[${i}]`);
    if (seen.has(rule.match)) fail(`${field}[${i}].match`, `duplicates an earlier rule's match "${rule.match}"`);
    seen.add(rule.match);
    return rule;
  });
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
 * @param [fraction=0.2] share of the threshold the whole cluster may leave unreported
 */
export function localThreshold(rule: Rule, instances: number, fraction = 0.2): number {
  return Math.max(1, Math.floor((rule.threshold * fraction) / Math.max(1, instances)));
}
