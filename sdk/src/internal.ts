/**
 * `@hotkey/sdk/internal`: the SDK's building blocks, for the hub, the adapters' tests and tools
 * that need them. No stability promise: what a service calls is `@hotkey/sdk`.
 */
export { SDK_NAME } from './client/client.ts';
export { closeCodeOf } from './errors.ts';
export { MAX_KEY_LENGTH, PROTOCOL_VERSION } from './wire/protocol.ts';
export { DEFAULT_RULE, RuleSet, localThreshold, parseRules } from './rules.ts';
export { Ownership } from './ownership.ts';
export { hashString } from './hash.ts';
export { AccessWindow } from './counting/window.ts';
export type { AccessWindowOptions } from './counting/window.ts';
export { LocalCache } from './cache/local-cache.ts';
export type { LocalCacheOptions } from './cache/local-cache.ts';
export { adapterView } from './client/adapter-view.ts';
export type { AdapterView } from './client/adapter-view.ts';
