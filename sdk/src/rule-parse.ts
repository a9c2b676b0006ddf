/**
 * Rule validation: a rule as it arrives (a file, the REST API, Redis, a Welcome frame) checked
 * field by field, with its defaults filled in. Every fault is a ValidationError HK_ERR_RULES
 * naming the field (`rules[2].windowMs`), never a rule silently read another way.
 */
import { ErrorCode, ValidationError } from './errors.ts';
import {
  derivedThreshold,
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
  type ReplicaPolicy,
  type Rule,
  type RuleKind,
  type RuleMode,
} from './rule-schema.ts';

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
  'mode',
  'factor',
  'sigma',
  'minQps',
  'baselineWindows',
  'k',
  'sampleRate',
  'hotFrom',
  'hotUntil',
  'kind',
  'shards',
  'coalesce',
  'coalesceMs',
  'refreshAheadRatio',
  'staleIfErrorMs',
  'push',
  'share',
  'replicas',
  'limit',
]);
/** fields each mode reads; any other mode's field is an error (it would be silently ignored) */
const MODE_FIELDS: Record<RuleMode, readonly string[]> = {
  fixed: [],
  baseline: ['factor', 'sigma', 'minQps', 'baselineWindows'],
  topk: ['k', 'minQps'],
};
/** latest accepted pre-declared time: year 9999 */
const MAX_TIME = 253_402_300_799_999;

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
  const mode = raw.mode === undefined ? 'fixed' : raw.mode;
  if (typeof mode !== 'string' || !RULE_MODES.includes(mode as RuleMode))
    fail(`${field}.mode`, `must be one of ${RULE_MODES.map((m) => `'${m}'`).join(', ')}`);
  for (const m of RULE_MODES) {
    if (m === mode) continue;
    for (const name of MODE_FIELDS[m]) {
      if (raw[name] !== undefined && !MODE_FIELDS[mode as RuleMode].includes(name))
        fail(`${field}.${name}`, `is not used in mode '${mode}'`);
    }
  }
  if (mode === 'fixed' && raw.threshold === undefined) fail(`${field}.threshold`, 'is required');
  const rule: Rule = { match, threshold: 0, ...RULE_DEFAULTS };
  for (const [name, [min, max]] of Object.entries(INTEGER_FIELDS) as [
    keyof typeof INTEGER_FIELDS,
    readonly [number, number],
  ][]) {
    const value = raw[name];
    if (value === undefined || (name === 'threshold' && mode !== 'fixed')) continue;
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
  if (mode !== 'fixed') parseModeFields(raw, rule, mode as RuleMode, field);
  if (raw.replicas !== undefined) rule.replicas = parseReplicas(raw.replicas, `${field}.replicas`);
  if (raw.limit !== undefined) {
    const limit = raw.limit;
    if (typeof limit !== 'number' || !Number.isFinite(limit) || !(limit > 0) || limit > MAX_LIMIT)
      fail(`${field}.limit`, `must be a number in (0, ${MAX_LIMIT}] (accesses per second, cluster-wide)`);
    rule.limit = limit;
  }
  if (raw.sampleRate !== undefined) {
    const rate = raw.sampleRate;
    if (typeof rate !== 'number' || !(rate > 0 && rate <= 1)) fail(`${field}.sampleRate`, 'must be a number in (0, 1]');
    if (rate < 1) rule.sampleRate = rate;
  }
  parseWriteFields(raw, rule, field);
  if (raw.refreshAheadRatio !== undefined) {
    const ratio = raw.refreshAheadRatio;
    if (typeof ratio !== 'number' || !(ratio >= 0.1 && ratio <= 1))
      fail(`${field}.refreshAheadRatio`, 'must be a number in [0.1, 1] (1: no refresh-ahead)');
    rule.refreshAheadRatio = ratio;
  }
  if (raw.staleIfErrorMs !== undefined) {
    const ms = raw.staleIfErrorMs;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > MAX_STALE_IF_ERROR_MS)
      fail(`${field}.staleIfErrorMs`, `must be an integer between 0 and ${MAX_STALE_IF_ERROR_MS}`);
    rule.staleIfErrorMs = ms;
  }
  if (pushField(raw, field)) rule.push = true;
  if (raw.hotFrom !== undefined || raw.hotUntil !== undefined) {
    if (raw.hotFrom === undefined) fail(`${field}.hotFrom`, 'is required with hotUntil');
    if (raw.hotUntil === undefined) fail(`${field}.hotUntil`, 'is required with hotFrom');
    const from = parseTime(raw.hotFrom, `${field}.hotFrom`);
    const until = parseTime(raw.hotUntil, `${field}.hotUntil`);
    if (until <= from) fail(`${field}.hotUntil`, 'must be after hotFrom');
    checkPredeclaredMatch(match, `${field}.match`);
    rule.hotFrom = from;
    rule.hotUntil = until;
  }
  return rule;
}

/** `push`, or `share`, its deprecated name: either one, or both saying the same. */
function pushField(raw: Record<string, unknown>, field: string): boolean {
  const { push, share } = raw;
  if (push !== undefined && typeof push !== 'boolean') fail(`${field}.push`, 'must be a boolean');
  if (share !== undefined && typeof share !== 'boolean')
    fail(`${field}.share`, 'must be a boolean (share is the deprecated name of push)');
  if (push !== undefined && share !== undefined && push !== share)
    fail(`${field}.push`, `is ${push} but share, its deprecated name, is ${share}: give push only`);
  return push === true || share === true;
}

/**
 * Rules as they travel to other processes (Welcome and Config frames, the rules stored in Redis):
 * `push` under its former name `share`, which SDKs and hubs of the previous minor version read
 * (they refuse a rule with a field they do not know). Every reader of this version takes both.
 */
export function rulesForPeers(rules: readonly Rule[]): Rule[] {
  return rules.map((rule) => {
    if (rule.push === undefined) return rule;
    const { push, ...rest } = rule;
    return { ...rest, share: push };
  });
}

function parseWriteFields(raw: Record<string, unknown>, rule: Rule, field: string): void {
  if (raw.kind !== undefined) {
    if (typeof raw.kind !== 'string' || !RULE_KINDS.includes(raw.kind as RuleKind))
      fail(`${field}.kind`, `must be one of ${RULE_KINDS.map((k) => `'${k}'`).join(', ')}`);
    rule.kind = raw.kind as RuleKind;
  }
  // shards and coalescing act on promoted write-hot keys: under a read rule they would never apply
  const writeHot = rule.kind === 'write' || rule.kind === 'any';
  if (raw.shards !== undefined) {
    const shards = raw.shards;
    if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 2 || shards > MAX_SHARDS)
      fail(`${field}.shards`, `must be an integer between 2 and ${MAX_SHARDS}`);
    if (!writeHot) fail(`${field}.shards`, "needs kind 'write' or 'any'");
    rule.shards = shards;
  }
  if (raw.coalesce !== undefined) {
    if (typeof raw.coalesce !== 'boolean') fail(`${field}.coalesce`, 'must be a boolean');
    if (raw.coalesce && !writeHot) fail(`${field}.coalesce`, "needs kind 'write' or 'any'");
    if (raw.coalesce) rule.coalesce = true;
  }
  if (raw.coalesceMs !== undefined) {
    const ms = raw.coalesceMs;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > 10_000)
      fail(`${field}.coalesceMs`, 'must be an integer between 1 and 10000');
    if (rule.coalesce !== true) fail(`${field}.coalesceMs`, 'needs coalesce: true');
    rule.coalesceMs = ms;
  }
  if (rule.shards !== undefined && rule.coalesce === true)
    fail(`${field}.coalesce`, 'cannot be combined with shards (choose one way to spread the writes)');
}

function parseReplicas(raw: unknown, field: string): ReplicaPolicy | false {
  if (raw === false) return false;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    fail(field, 'must be false or an object { perNodeQps, factor, max }');
  const o = raw as Record<string, unknown>;
  for (const name of Object.keys(o))
    if (!(name in REPLICA_DEFAULTS)) fail(`${field}.${name}`, 'unknown field (perNodeQps, factor, max)');
  const number = (name: keyof ReplicaPolicy, min: number, max: number, integer: boolean): number => {
    const value = o[name];
    if (value === undefined) return REPLICA_DEFAULTS[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)))
      fail(`${field}.${name}`, integer ? 'must be an integer' : 'must be a number');
    if (value < min || value > max) fail(`${field}.${name}`, `must be between ${min} and ${max}`);
    return value;
  };
  return {
    perNodeQps: number('perNodeQps', 1, 1_000_000_000, false),
    factor: number('factor', 0.1, 100, false),
    max: number('max', 1, MAX_REPLICAS, true),
  };
}

function parseModeFields(raw: Record<string, unknown>, rule: Rule, mode: RuleMode, field: string): void {
  const number = (name: string, min: number, max: number, fallback: number | undefined, integer = false): number => {
    const value = raw[name];
    if (value === undefined) {
      if (fallback === undefined) fail(`${field}.${name}`, `is required in mode '${mode}'`);
      return fallback;
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)))
      fail(`${field}.${name}`, integer ? 'must be an integer' : 'must be a number');
    if (value < min || value > max) fail(`${field}.${name}`, `must be between ${min} and ${max}`);
    return value;
  };
  rule.mode = mode;
  const minQps = number('minQps', 0.01, 1_000_000_000, MODE_DEFAULTS.minQps);
  rule.minQps = minQps;
  if (mode === 'baseline') {
    rule.factor = number('factor', 1.01, 1_000_000, MODE_DEFAULTS.factor);
    rule.sigma = number('sigma', 0, 1000, MODE_DEFAULTS.sigma);
    rule.baselineWindows = number('baselineWindows', 2, 10_000, MODE_DEFAULTS.baselineWindows, true);
  } else {
    rule.k = number('k', 1, MAX_TOPK, undefined, true);
  }
  // the floor in the window's units: what SDKs size their report threshold from
  const derived = derivedThreshold(minQps, rule.windowMs);
  // a rule the hub wrote back carries its derived threshold: accept exactly that, nothing else
  if (raw.threshold !== undefined && raw.threshold !== derived) {
    fail(`${field}.threshold`, `is derived in mode '${mode}' (ceil(minQps × windowMs / 1000) = ${derived}); omit it`);
  }
  rule.threshold = derived;
}

/** ms since epoch from an integer or an ISO 8601 string with a time zone; fails naming `field`. */
export function parseTime(value: unknown, field: string): number {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) fail(field, 'must be an integer (ms since epoch) or an ISO 8601 date');
    ms = value;
  } else if (typeof value === 'string') {
    // a date without a zone would be read in the hub's local time: refuse the ambiguity
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) {
      fail(field, 'must be an ISO 8601 date with a time zone (2026-11-30T20:00:00Z) or ms since epoch');
    }
    ms = Date.parse(value);
    // Date.parse rolls 02-30 over into March: check the calendar fields themselves
    const [y, mo, d, h, mi, sec] = value.split(/[-T:.Z+]/).map(Number) as number[];
    const days = new Date(Date.UTC(y!, mo!, 0)).getUTCDate();
    if (Number.isNaN(ms) || mo! < 1 || mo! > 12 || d! < 1 || d! > days || h! > 23 || mi! > 59 || (sec ?? 0) > 59)
      fail(field, 'is not a valid date');
  } else fail(field, 'must be an ISO 8601 date or ms since epoch');
  if (ms < 0 || ms > MAX_TIME) fail(field, 'is out of range');
  return ms;
}

/** A pre-declared match must name something: a glob of wildcards only would make every key hot. */
export function checkPredeclaredMatch(match: string, field: string): void {
  if (match.replace(/[*?]/g, '').length === 0) fail(field, 'a pre-declared glob needs at least one literal character');
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
