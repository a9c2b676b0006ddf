/**
 * The options of `withHotKeys`, one set for every adapter (ioredis, iovalkey, node-redis): the
 * interface, its defaults (`WITH_HOT_KEYS_DEFAULTS`, each also named by `@default` on its field)
 * and the one resolver both adapters call before they hook anything, so that a bad option is a
 * TypeError naming the field and a missing one means the same default whichever client is wrapped.
 * Shaped as ioredis's `DEFAULT_REDIS_OPTIONS` beside its `RedisOptions`.
 */
import { breakerSettings, type BreakerOptions } from './breaker/breaker.ts';
import { replicaOptions, type ReplicaOptions } from './read/replicas.ts';
import type { TrackingOptions } from './tracking/tracking.ts';

export interface WithHotKeysOptions {
  /**
   * writes settle (promise and callback) after the hub acknowledged the invalidation cluster-wide,
   * and reject with HK_ERR_UNACKED (applied in Redis, not acknowledged; `cause` says why) when it
   * cannot be; `false`: they settle at once, without that guarantee @default true
   */
  awaitInvalidation?: boolean;
  /** hears invalidations that failed after a write (timeout, queue full, closed); the local copy is dropped regardless @default ignore */
  onInvalidateError?: (error: unknown, key: string) => void;
  /**
   * Redis server-assisted tracking of hot keys, on connections of the adapter's own, so that
   * writes by clients without the SDK drop cached values within milliseconds (redis/tracking/tracking.ts):
   * `true`, `false` (a cached value then lives until `cacheTtlMs` or its Redis TTL, whoever
   * writes), or its options @default true
   */
  tracking?: boolean | TrackingOptions;
  /**
   * A circuit breaker per Redis node (redis/breaker/breaker.ts; the standalone server, or each Cluster
   * master): after `failures` consecutive failures or timeouts, commands for the node fail fast
   * with HK_ERR_BREAKER_OPEN for `coolDownMs` (a hot key's load too: the client may then serve
   * its last value), then a probe closes it. `true`, `false` or its options
   * @default true ({ failures: 5, coolDownMs: 3000, timeoutMs: 1000 })
   */
  breaker?: boolean | BreakerOptions;
  /**
   * Replica keys for read-hot keys of rules with `cache: false` (redis/read/replicas.ts): GETs spread
   * over copies on other Cluster masters, as many as the hub decides. `true`, `false` (off) or its
   * options @default true (on, copies live 2 s)
   */
  replicas?: boolean | ReplicaOptions;
  /**
   * What a write of a hot key whose rule pushes values (`push: true`) sends every instance:
   * 'invalidate' (they drop it and reload) or 'update' (Redisson's UPDATE: a `SET`, `SETEX` or
   * `PSETEX` on its own — not in a pipeline or MULTI — is read back with its TTL through this
   * instance's tracking once Redis replied, and the invalidation carries that value: every
   * instance drops the old value and caches the new one in the same step, without a read of its
   * own; this instance vouches for it like a filler, redis/write/update-writes.ts). Other writes, keys
   * not shared, values over `maxPushBytes`, tracking down: an invalidation, as with 'invalidate'.
   * @default 'invalidate'
   */
  writes?: 'invalidate' | 'update';
}

/** What an option left out means: the one home of `withHotKeys`'s defaults. */
export const WITH_HOT_KEYS_DEFAULTS = {
  awaitInvalidation: true,
  onInvalidateError: (): void => {},
  tracking: true,
  breaker: true,
  replicas: true,
  writes: 'invalidate',
} as const satisfies Required<WithHotKeysOptions>;

/** `WithHotKeysOptions` checked, with every default applied; an adapter reads only this. */
export interface ResolvedWrapOptions {
  readonly awaitInvalidation: boolean;
  readonly onInvalidateError: (error: unknown, key: string) => void;
  /** undefined: tracking off */
  readonly tracking: TrackingOptions | undefined;
  /** undefined: no breaker */
  readonly breaker: Required<BreakerOptions> | undefined;
  /** undefined: replica keys off */
  readonly replicas: ReplicaOptions | undefined;
  readonly writes: 'invalidate' | 'update';
}

/**
 * `options` as the adapters read them, checked before anything is hooked, listens or connects: a
 * TypeError names a bad field (the breaker's and replicas' fields by their own checks).
 */
export function resolveWrapOptions(options: WithHotKeysOptions | undefined): ResolvedWrapOptions {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) throw new TypeError('withHotKeys: options must be an object');
  const d = WITH_HOT_KEYS_DEFAULTS;
  const writes = options.writes ?? d.writes;
  if (writes !== 'invalidate' && writes !== 'update')
    throw new TypeError(`withHotKeys: writes must be 'invalidate' or 'update', got ${String(writes)}`);
  const breaker = breakerSettings(options.breaker ?? d.breaker);
  const replicas = replicaOptions(options.replicas ?? d.replicas);
  const tracking = options.tracking ?? d.tracking;
  return {
    awaitInvalidation: options.awaitInvalidation ?? d.awaitInvalidation,
    onInvalidateError: options.onInvalidateError ?? d.onInvalidateError,
    tracking: tracking === false ? undefined : tracking === true ? {} : tracking,
    breaker,
    replicas,
    writes,
  };
}
