/**
 * The `@hotkey/sdk/node-redis` entry: the node-redis adapter lives in `./node-redis/` (over the
 * client-agnostic core in `./redis/`); this module only re-exports it so importers keep one stable path.
 * It also re-exports HotKeyClient and its errors, so a node-redis service imports from here alone and
 * never loads the root entry, which re-exports the ioredis adapter (code on the service's heap).
 */
export { HotKeyClient } from './client/client.ts';
export type {
  ClientEvents,
  ClientOptions,
  ClientStats,
  ClientStatus,
  InvalidateOptions,
  InvalidateResult,
} from './client/client.ts';
export { ErrorCode, HotKeyError } from './errors.ts';
export { withHotKeys } from './node-redis/wrapper.ts';
export { replicaStats } from './node-redis/stats.ts';
export { REPLICA_TTL_MS } from './redis/read/replicas.ts';
export type { ReplicaOptions, ReplicaStats } from './redis/read/replicas.ts';
export type { WithHotKeysOptions } from './node-redis/wrapper.ts';
export type { TrackingOptions } from './redis/tracking/tracking.ts';
export { counter } from './node-redis/counter.ts';
export { ShardedCounter } from './redis/write/counters.ts';
export { hashSlot, keySlot, shardNames } from './redis/hash-slots.ts';
export type { CounterOptions, CounterStats, TakeOptions } from './redis/write/counters.ts';
export { flushWrites, hotKeyStats } from './node-redis/stats.ts';
export type { NodeRedisStats } from './node-redis/stats.ts';
export type { WriteHotStats } from './redis/write/write-hot.ts';
export { breakerStats } from './node-redis/breaker-stats.ts';
export { BREAKER_DEFAULTS } from './redis/breaker/breaker.ts';
export type { BreakerOptions, BreakerState, BreakerStats } from './redis/breaker/breaker.ts';
