/**
 * What a detection rule is: its fields, their defaults and their bounds. Shared by hub, SDK and
 * dashboard (which bundles it: no `node:` imports); validation is rule-parse.ts, matching a key
 * to its rule is rules.ts.
 */

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
   * instance are merged for up to `coalesceMs` into one INCRBY (redis/write/coalescer.ts) @default false
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
   * same way. Values the SDK cannot push (type, maxPushBytes) are loaded per instance. `share` is
   * its deprecated name, read until the next minor version (and the name it travels under to
   * other processes meanwhile: `rulesForPeers`) @default false
   */
  push?: boolean;
  /**
   * The former name of `push`, read until the next minor version; a parsed rule carries `push`,
   * and `rulesForPeers` spells it `share` for processes of the previous minor version.
   * @deprecated use `push`
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

/** One copy per 35 000 reads/s of the key with 50 % headroom, at most 8: `ceil(qps × 1.5 / 35000)` copies. */
export const REPLICA_DEFAULTS: Readonly<ReplicaPolicy> = Object.freeze({ perNodeQps: 35_000, factor: 1.5, max: 8 });
/** most copies a rule may ask for (replica names are probed per copy) */
export const MAX_REPLICAS = 64;
/** highest `limit` a rule may set (accesses per second) */
export const MAX_LIMIT = 1_000_000_000;

export type RuleKind = 'read' | 'write' | 'any';
export const RULE_KINDS: readonly RuleKind[] = ['read', 'write', 'any'];
/** defaults of the write-hot fields, used when a rule asks for them (a hot counter's INCRs merge for 100 ms) */
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

/** The floor of a baseline / topk rule in accesses per window. */
export function derivedThreshold(minQps: number, windowMs: number): number {
  return Math.min(1_000_000_000, Math.max(1, Math.ceil((minQps * windowMs) / 1000 - 1e-9)));
}
