/**
 * The `@hotkey/sdk/ioredis` entry: the ioredis adapter lives in `./ioredis/` (wrapper, command
 * table, key identity); this module only re-exports it so importers keep one stable path.
 */
export { withHotKeys } from './ioredis/wrapper.ts';
export type { WithHotKeysOptions } from './ioredis/wrapper.ts';
export type { TrackingOptions } from './ioredis/tracking.ts';
