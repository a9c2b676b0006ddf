export { HotKeyClient, SDK_NAME } from './client/client.ts';
export type {
  AccessKind,
  ClientEvents,
  ClientOptions,
  ClientStats,
  ClientStatus,
  DemoteInfo,
  InvalidateInfo,
  InvalidateOptions,
  InvalidateResult,
  UpdateMark,
  PromoteInfo,
} from './client/client.ts';
export { DEFAULT_CLIENT_OPTIONS, DEFAULT_SURGE_LOCAL } from './options.ts';
export type { ClientLogger, ClientTlsOptions, SurgeLocalOptions } from './options.ts';
export {
  AuthError,
  CapacityError,
  closeCodeOf,
  ErrorCode,
  HotKeyError,
  ProtocolError,
  ValidationError,
} from './errors.ts';
export { CloseCode, DemoteReason, MAX_KEY_LENGTH, PROTOCOL_VERSION } from './wire/protocol.ts';
export type { HubDemoteReason, SdkDemoteReason } from './wire/protocol.ts';
export { DEFAULT_RULE, RuleSet, localThreshold, parseRules } from './rules.ts';
export type { Rule, RuleKind } from './rules.ts';
export { Ownership } from './ownership.ts';
export { hashString } from './hash.ts';
export { AccessWindow } from './counting/window.ts';
export type { AccessWindowOptions } from './counting/window.ts';
export { LocalCache } from './cache/local-cache.ts';
export type { LocalCacheOptions } from './cache/local-cache.ts';
export { withHotKeys } from './ioredis.ts';
export type { WithHotKeysOptions } from './ioredis.ts';
