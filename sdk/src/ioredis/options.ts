/** The options of `withHotKeys` (wrapper.ts); each default is documented here, its one home. */
import type { BreakerOptions } from '../redis/breaker.ts';
import type { ReplicaOptions } from '../redis/replicas.ts';
import type { TrackingOptions } from '../redis/tracking.ts';

export interface WithHotKeysOptions {
  /**
   * writes settle after the hub acknowledged the invalidation cluster-wide, and reject with
   * HK_ERR_UNACKED (applied in Redis, not acknowledged; `cause` says why) when it cannot be;
   * `false`: they settle at once, without that guarantee @default true
   */
  awaitInvalidation?: boolean;
  /** hears invalidations that failed after a write (timeout, queue full, closed); the local copy is dropped regardless @default ignore */
  onInvalidateError?: (error: unknown, key: string) => void;
  /**
   * Redis server-assisted tracking of hot keys, so that writes by clients without the SDK drop
   * cached values within milliseconds (tracking.ts): `true`, `false` (a cached value then lives
   * until `cacheTtlMs` or its Redis TTL, whoever writes), or its options @default true
   */
  tracking?: boolean | TrackingOptions;
  /**
   * A circuit breaker per Redis node (breaker.ts): after `failures` consecutive failures or
   * timeouts, commands for the node fail fast with HK_ERR_BREAKER_OPEN for `coolDownMs` (a hot
   * key's load too: the client may then serve its last value), then a probe closes it.
   * `true`, `false` or its options @default true ({ failures: 5, coolDownMs: 3000, timeoutMs: 1000 })
   */
  breaker?: boolean | BreakerOptions;
  /**
   * Replica keys for read-hot keys of rules with `cache: false` (redis/replicas.ts): GETs spread over
   * copies on other Cluster masters, as many as the hub decides. `false` turns them off here
   * @default {} (on, copies live 2 s)
   */
  replicas?: false | ReplicaOptions;
  /**
   * What a write of a hot key whose rule shares values (`share: true`) sends every instance:
   * 'invalidate' (they drop it and reload) or 'update' (Redisson's UPDATE: a `SET`, `SETEX` or
   * `PSETEX` on its own — not in a pipeline or MULTI — is read back with its TTL through this
   * instance's tracking once Redis replied, and the invalidation carries that value: every
   * instance drops the old value and caches the new one in the same step, without a read of its
   * own; this instance vouches for it like a filler, update-writes.ts). Other writes, keys not
   * shared, values over `maxPushBytes`, tracking down: an invalidation, as with 'invalidate'.
   * @default 'invalidate'
   */
  writes?: 'invalidate' | 'update';
}
