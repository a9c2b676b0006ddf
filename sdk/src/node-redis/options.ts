/** The options of the node-redis `withHotKeys` (wrapper.ts); each default is documented here, its one home. */
import type { ReplicaOptions } from '../redis/replicas.ts';
import type { TrackingOptions } from '../redis/tracking.ts';

export interface WithHotKeysOptions {
  /** writes settle after the hub acknowledged the invalidation cluster-wide @default true */
  awaitInvalidation?: boolean;
  /** hears invalidations that failed after a write (no hub, timeout); the local copy is dropped regardless @default ignore */
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
   * The ioredis adapter's circuit breaker is not in this adapter (sdk/README, node-redis): only
   * `false` is accepted, so that one options object may serve both adapters.
   */
  breaker?: false;
  /**
   * Replica keys for read-hot keys of rules with `cache: false` (redis/replicas.ts), as in the
   * ioredis adapter: GETs spread over copies on other Cluster masters. `true`, `false` (off) or
   * its options @default true (on, copies live 2 s)
   */
  replicas?: boolean | ReplicaOptions;
}

/** ioredis adapter options this adapter does not have (wrapper.ts says why): given as anything but false, a TypeError. */
export const UNSUPPORTED_OPTIONS = ['breaker'] as const;
