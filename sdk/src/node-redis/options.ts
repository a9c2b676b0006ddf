/** The options of the node-redis `withHotKeys` (wrapper.ts); each default is documented here, its one home. */
import type { ReplicaOptions } from '../redis/replicas.ts';
import type { BreakerOptions } from '../redis/breaker.ts';
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
   * Redis server-assisted tracking of hot keys on connections of the adapter's own, so that
   * writes by clients without the SDK drop cached values within milliseconds
   * (redis/tracking.ts): `true`, `false` (a cached value then lives until `cacheTtlMs` or its
   * Redis TTL, whoever writes), or its options @default true
   */
  tracking?: boolean | TrackingOptions;
  /**
   * 'invalidate', or 'update' (value push of `SET`/`SETEX`/`PSETEX` of shared hot keys, as the
   * ioredis adapter does it: redis/update-writes.ts) @default 'invalidate'
   */
  writes?: 'invalidate' | 'update';
  /**
   * A circuit breaker per Redis node (breaker.ts; the standalone server, or each Cluster master):
   * after `failures` consecutive failures or timeouts, commands for the node fail fast with
   * HK_ERR_BREAKER_OPEN for `coolDownMs` (a hot key's load too: the client may then serve its last
   * value), then a probe closes it. `true`, `false` or its options
   * @default true ({ failures: 5, coolDownMs: 3000, timeoutMs: 1000 }, redis/breaker.ts)
   */
  breaker?: boolean | BreakerOptions;
  /**
   * Replica keys for read-hot keys of rules with `cache: false` (redis/replicas.ts), as in the
   * ioredis adapter: GETs spread over copies on other Cluster masters. `true`, `false` (off) or
   * its options @default true (on, copies live 2 s)
   */
  replicas?: boolean | ReplicaOptions;
}
