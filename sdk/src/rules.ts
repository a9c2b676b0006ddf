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
  /**
   * How the hub decides (absent: 'fixed', the window total against `threshold`). 'baseline':
   * against the key's own EWMA baseline (`factor`, `sigma`, `minQps`, `baselineWindows`);
   * 'topk': the `k` keys with the highest rate (`k`, `minQps`). In both, `threshold` is derived:
   * `ceil(minQps * windowMs / 1000)`, the floor below which nothing is promoted (and the level the
   * SDKs' per-instance report threshold is sized from).
   */
  mode?: RuleMode;
  /** baseline: promote when the window exceeds baseline mean × factor @default 3 */
  factor?: number;
  /** baseline: … or when it exceeds mean + sigma × σ (0: off) @default 0 */
  sigma?: number;
  /** baseline / topk: floor in accesses per second; nothing below it is promoted @default 10 */
  minQps?: number;
  /** baseline: EWMA span in windows (α = 2 / (n + 1)); also the warm-up after a hub starts @default 30 */
  baselineWindows?: number;
  /** topk: how many keys are hot; a hot key leaves once out of the top ⌈1.5 k⌉ @default required */
  k?: number;
  /** SDK: count this share of the accesses of matching keys, scaled by 1 / sampleRate @default 1 */
  sampleRate?: number;
  /** pre-declared: matching keys are hot from this time (ms since epoch; ISO 8601 accepted) … */
  hotFrom?: number;
  /** … until this time (exclusive); both or neither */
  hotUntil?: number;
  /**
   * Which accesses make a key hot: 'read' (get(), reads through the ioredis wrapper), 'write'
   * (writes through the wrapper, `track(key, 'write')`) or 'any' (both). Only the selected
   * accesses are counted for matching keys, and the promotion carries the kind. @default 'read'
   */
  kind?: RuleKind;
  /**
   * ioredis wrapper, write-hot counters: while the key is promoted (kind 'write' or 'any'), its
   * INCR / INCRBY / DECR / DECRBY go to this many shard keys on different cluster masters, GET
   * returns their sum, and demotion folds them back (ioredis/counters.ts). 2–1024 @default off
   */
  shards?: number;
  /**
   * ioredis wrapper: while the key is promoted (kind 'write' or 'any'), INCR / INCRBY on one
   * instance are merged for up to `coalesceMs` into one INCRBY (ioredis/coalescer.ts) @default false
   */
  coalesce?: boolean;
  /** merge window of `coalesce`, 1–10000 @default 100 (WRITE_DEFAULTS.coalesceMs) */
  coalesceMs?: number;
  /**
   * SDK: a cached value is reloaded in the background once this share of `cacheTtlMs` has passed
   * (less a per-instance jitter of up to 10 %), while readers keep the current value; 1 turns
   * refresh-ahead off @default 0.8 (LOAD_DEFAULTS)
   */
  refreshAheadRatio?: number;
  /**
   * SDK: when a reload fails (rejects, throws, times out, or the load limiter refuses it), the
   * last value is served this long past its `cacheTtlMs`; 0 turns stale-if-error off @default 3000 (LOAD_DEFAULTS)
   */
  staleIfErrorMs?: number;
  /**
   * Value push: at promotion the owner hub asks one SDK instance to load the value and broadcasts
   * it (versioned) to the others, which inject it without calling their loader; refreshes go the
   * same way. Values the SDK cannot push (type, maxPushBytes) are loaded per instance @default false
   */
  share?: boolean;
  /**
   * Replica keys for a read-hot key that is not cached locally (`cache: false`): the hub sizes the
   * copies from the key's cluster QPS (`replicaCount`), the ioredis wrapper spreads GETs over
   * them. `false` turns them off; absent: REPLICA_DEFAULTS. Ignored when `cache` is true.
   */
  replicas?: ReplicaPolicy | false;
  /**
   * Cluster-wide accesses per second allowed for each matching key: the hub divides it among the
   * instances that use the key, each enforces its share (`hk.allow`, the wrapper's HK_ERR_RATE_LIMITED).
   */
  limit?: number;
}

/** How many copies of a read-hot uncached key serve reads: `min(max, ceil(qps × factor / perNodeQps))`. */
export interface ReplicaPolicy {
  /** reads per second one Redis node should serve of one key @default 35000 */
  perNodeQps: number;
  /** headroom over the measured QPS @default 1.5 */
  factor: number;
  /** copies at most, the key itself included (1: no replicas) @default 8 */
  max: number;
}

/** The replica sizing of seed 000: `ceil(qps / 35000 × 1.5)` copies. */
export const REPLICA_DEFAULTS: Readonly<ReplicaPolicy> = Object.freeze({ perNodeQps: 35_000, factor: 1.5, max: 8 });
/** most copies a rule may ask for (replica names are probed per copy) */
export const MAX_REPLICAS = 64;
/** highest `limit` a rule may set (accesses per second) */
export const MAX_LIMIT = 1_000_000_000;

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

export type RuleKind = 'read' | 'write' | 'any';
export const RULE_KINDS: readonly RuleKind[] = ['read', 'write', 'any'];
/** defaults of the write-hot fields, used when a rule asks for them (seed 000 merges INCRs for 100 ms) */
export const WRITE_DEFAULTS = { coalesceMs: 100 } as const;
export const MAX_SHARDS = 1024;

export type RuleMode = 'fixed' | 'baseline' | 'topk';
export const RULE_MODES: readonly RuleMode[] = ['fixed', 'baseline', 'topk'];
/** defaults of the mode fields, filled in when the rule's mode uses them */
export const MODE_DEFAULTS = { factor: 3, sigma: 0, minQps: 10, baselineWindows: 30 } as const;
export const MAX_TOPK = 10_000;

export const RULE_DEFAULTS: Omit<Rule, 'match' | 'threshold'> = {
  windowMs: 1000,
  hotMs: 30_000,
  cacheTtlMs: 5000,
  cache: true,
  demoteRatio: 0.5,
  demoteWindows: 3,
  kind: 'read',
};

/** Defaults of the SDK load fields, applied where a rule leaves them out (the rule keeps them absent). */
export const LOAD_DEFAULTS = { refreshAheadRatio: 0.8, staleIfErrorMs: 3000 } as const;
export const MAX_STALE_IF_ERROR_MS = 3_600_000;

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
  if (raw.share !== undefined) {
    if (typeof raw.share !== 'boolean') fail(`${field}.share`, 'must be a boolean');
    if (raw.share) rule.share = true;
  }
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

/** The floor of a baseline / topk rule in accesses per window. */
export function derivedThreshold(minQps: number, windowMs: number): number {
  return Math.min(1_000_000_000, Math.max(1, Math.ceil((minQps * windowMs) / 1000 - 1e-9)));
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

/** Whether a pre-declared rule's window covers `now` (ms since epoch). */
export function predeclaredActive(rule: Rule, now: number): boolean {
  return rule.hotFrom !== undefined && rule.hotUntil !== undefined && now >= rule.hotFrom && now < rule.hotUntil;
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
