/**
 * The `@hotkey/sdk/ioredis` entry: the ioredis adapter lives in `./ioredis/` (wrapper, command
 * table, key identity, replica keys); this module only re-exports it so importers keep one stable path.
 */
export { replicaStats, withHotKeys } from './ioredis/wrapper.ts';
export type { IoredisLike, WithHotKeysOptions } from './ioredis/wrapper.ts';
export type { TrackingOptions } from './redis/tracking/tracking.ts';
export { counter } from './ioredis/counter.ts';
export { ShardedCounter } from './redis/write/counters.ts';
export { hashSlot, keySlot, shardNames } from './redis/hash-slots.ts';
export type { CounterOptions, CounterStats, TakeOptions } from './redis/write/counters.ts';
export { flushWrites, hotKeyStats } from './ioredis/stats.ts';
export type { IoredisStats } from './ioredis/stats.ts';
export { BREAKER_DEFAULTS } from './redis/breaker/breaker.ts';
export type { BreakerOptions, BreakerState, BreakerStats } from './redis/breaker/breaker.ts';
export type { WriteHotStats } from './redis/write/write-hot.ts';
export { REPLICA_TTL_MS } from './redis/read/replicas.ts';
export type { ReplicaOptions, ReplicaStats } from './redis/read/replicas.ts';
