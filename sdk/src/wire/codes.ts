/**
 * The closed sets of values the protocol carries besides message kinds: WebSocket close codes
 * (and which of them forbid a reconnect) and the reasons a key stops being hot.
 */
/**
 * WebSocket close codes the hub uses. 1009 is sent by ws itself for a frame over its hard limit
 * (`4 * MAX_FRAME_BYTES`); frames between the two limits get an Error frame and 4004.
 */
export const CloseCode = {
  /** a normal close: the client closed or dropped a connection it does not need (no Welcome, a duplicate) */
  Normal: 1000,
  /** the hub stops while alone (SIGTERM, no cluster), or a live feed page as the hub stops: the client reconnects */
  GoingAway: 1001,
  /** a frame over four times MAX_FRAME_BYTES: ws closes the socket before reading it */
  MessageTooBig: 1009,
  /** a fault inside the hub (logged there): the client reconnects */
  InternalError: 1011,
  /** HK_ERR_PROTOCOL: a frame that breaks the wire protocol */
  Protocol: 4000,
  /** HK_ERR_VERSION: no protocol version both sides speak; the client does not retry */
  Version: 4001,
  /** HK_ERR_UNKNOWN_APP: an app name no hub accepts; the client does not retry */
  UnknownApp: 4002,
  /** HK_ERR_AUTH: a missing or wrong token, or an app not in the config; the client does not retry */
  Auth: 4003,
  /** HK_ERR_FRAME_TOO_LARGE: a frame over the size bound, or too many bytes before Hello */
  FrameTooLarge: 4004,
  /** HK_ERR_KEY_TOO_LONG: an empty key, or one over the length bound */
  KeyTooLong: 4005,
  /** HK_ERR_HELLO_TIMEOUT: no Hello within the hub's hello timeout */
  HelloTimeout: 4006,
  /** HK_ERR_SLOW_CONSUMER: the socket's send buffer stayed over the hub's bound */
  SlowConsumer: 4008,
  /** the hub is at its connection limit for the app (or for dashboards): retry later, with backoff */
  OverCapacity: 4009,
  /** the hub leaves the cluster (SIGTERM): reconnect elsewhere, its keys move */
  Leaving: 4010,
  /** the hub keeps state for its most apps (open mode): retry later, with backoff; idle apps leave after a grace period */
  AppLimit: 4011,
  /** the connection sent more than its budget allows (e.g. queued invalidations): reconnect with backoff, send less */
  RateLimited: 4012,
} as const;

/**
 * Why a key stops being hot: one set for the hub and the SDK. The hub decides 'cooled' (its window
 * stayed under the demotion level), 'expired' (no renewal within the rule's hotMs), 'manual' (an
 * operator demoted it) and 'rules' (a rule change left it unmatched); the dashboard feed carries
 * them, and 'evicted' (the app's hot set was at the hub's cap and a stronger key took the place). An SDK's 'demote' event says 'demote' (the hub's Demote frame), 'expired' (the promotion
 * ran out here), 'stale' (cut off from its hub past maxStaleMs), 'snapshot' (absent from a resync
 * snapshot) or 'evicted' (over maxHotKeys).
 */
export const DemoteReason = {
  Cooled: 'cooled',
  Expired: 'expired',
  Manual: 'manual',
  Rules: 'rules',
  Demote: 'demote',
  Stale: 'stale',
  Snapshot: 'snapshot',
  Evicted: 'evicted',
} as const;
export type DemoteReason = (typeof DemoteReason)[keyof typeof DemoteReason];
/** the reasons a hub decides */
export type HubDemoteReason =
  | typeof DemoteReason.Cooled
  | typeof DemoteReason.Expired
  | typeof DemoteReason.Manual
  | typeof DemoteReason.Rules
  | typeof DemoteReason.Evicted;
/** the reasons an SDK's 'demote' event carries */
export type SdkDemoteReason =
  | typeof DemoteReason.Demote
  | typeof DemoteReason.Expired
  | typeof DemoteReason.Stale
  | typeof DemoteReason.Snapshot
  | typeof DemoteReason.Evicted;

/** Close codes after which a client must not reconnect: retrying cannot succeed. */
export const FATAL_CLOSE_CODES: ReadonlySet<number> = new Set([
  CloseCode.Version,
  CloseCode.UnknownApp,
  CloseCode.Auth,
]);
