/**
 * The `@hotkey/sdk/node-redis` entry: the node-redis adapter lives in `./node-redis/` (over the
 * client-agnostic core in `./redis/`); this module only re-exports it so importers keep one stable path.
 */
export { withHotKeys } from './node-redis/wrapper.ts';
export type { WithHotKeysOptions } from './node-redis/options.ts';
export type { TrackingOptions } from './redis/tracking.ts';
export { breakerStats } from './node-redis/breaker-stats.ts';
export { BREAKER_DEFAULTS } from './redis/breaker.ts';
export type { BreakerOptions, BreakerState, BreakerStats } from './redis/breaker.ts';
