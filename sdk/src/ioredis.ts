/**
 * The `@hotkey/sdk/ioredis` entry: the ioredis adapter lives in `./ioredis/` (wrapper, command
 * table, key identity, replica keys); this module only re-exports it so importers keep one stable path.
 */
export { replicaStats, withHotKeys } from './ioredis/wrapper.ts';
export type { WithHotKeysOptions } from './ioredis/wrapper.ts';
export type { TrackingOptions } from './ioredis/tracking.ts';
export { keySlot } from './ioredis/slots.ts';
export { REPLICA_TTL_MS } from './ioredis/replicas.ts';
export type { ReplicaOptions, ReplicaStats } from './ioredis/replicas.ts';
