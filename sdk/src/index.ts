/**
 * `@hotkey/sdk`: what a service calls. The client and its options, the ioredis wrapper, the
 * errors it may see and the codes its events carry. Building blocks live in
 * `@hotkey/sdk/internal`; the rules in `@hotkey/sdk/rules`, the wire protocol in
 * `@hotkey/sdk/protocol`, the node-redis adapter in `@hotkey/sdk/node-redis`.
 */
export { HotKeyClient } from './client/client.ts';
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
export { AuthError, CapacityError, ErrorCode, HotKeyError, ProtocolError, ValidationError } from './errors.ts';
export { CloseCode, DemoteReason } from './wire/protocol.ts';
export type { HubDemoteReason, SdkDemoteReason } from './wire/protocol.ts';
export type { Rule, RuleKind } from './rules.ts';
export { withHotKeys } from './ioredis.ts';
export type { WithHotKeysOptions } from './ioredis.ts';

// Deprecated: their only published home was this entry; they live in `@hotkey/sdk/internal`
// now and leave this one at the next minor version.
/** @deprecated import from `@hotkey/sdk/internal` */
export { SDK_NAME } from './client/client.ts';
/** @deprecated import from `@hotkey/sdk/internal` */
export { hashString } from './hash.ts';
/** @deprecated import from `@hotkey/sdk/internal` */
export { AccessWindow } from './counting/window.ts';
/** @deprecated import from `@hotkey/sdk/internal` */
export { LocalCache } from './cache/local-cache.ts';
