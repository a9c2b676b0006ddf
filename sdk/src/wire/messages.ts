/**
 * Every message of the protocol: its kind (`MsgType`, numbered, `as const`) and its shape. The
 * first frame of a connection is the client's Hello, carrying PROTOCOL_VERSION; the hub answers
 * Welcome or Error + close.
 *
 *   SDK -> hub : Hello, Report, InvalidateRequest, Applied, Resync, Lease, Push, Hold, Release
 *   hub -> SDK : Welcome, Config, Members, Promote, Invalidate, Demote, Snapshot, Ack, Grant, Fill, Value,
 *                Limit, Held, Drop, Error
 *   (the dashboard's /live messages: feed-protocol.ts)
 */
import type { HotEntry } from '../promotion.ts';
import type { Rule, RuleKind } from '../rules.ts';

export type { HotEntry };

/**
 * The newest version this code speaks. 2: leases (Lease, Grant) and fencing acks; a version-1 SDK
 * would serve values no lease bounds. 3: holders (Hold, Held, Release, Drop): an invalidation of a
 * key the hub did not promote reaches only the sessions that registered it, so a version-3 SDK
 * registers a key before serving it from a local surge. Negotiation and the oldest versions
 * spoken: versions.ts.
 */
export const PROTOCOL_VERSION = 3;
export const MsgType = {
  Hello: 1,
  Welcome: 2,
  Report: 3,
  Promote: 4,
  Invalidate: 5,
  Demote: 6,
  Snapshot: 7,
  Error: 8,
  Config: 9,
  Members: 10,
  InvalidateRequest: 11,
  Ack: 12,
  Applied: 13,
  Resync: 14,
  /** SDK -> hub: asks for a lease (every leaseMs / 4) */
  Lease: 15,
  /** hub -> SDK: answers Lease `id` with a lease of `ms` from when the SDK sent it */
  Grant: 16,
  /** hub -> one SDK: load a pushed key (`push: true` rule; `share` on the wire) and Push its value under ticket `ver` */
  Fill: 17,
  /** SDK -> hub: the value a Fill asked for, serialised by the SDK (opaque to the hub) */
  Push: 18,
  /** hub -> SDKs: a pushed key's value with its per-key version; every SDK injects it without loading */
  Value: 19,
  /** hub -> SDK: this instance's rate splits: its part of the rate limits of keys it uses */
  Limit: 22,
  /** SDK -> owner hub (3): record this session as a holder of `keys` before it serves them locally */
  Hold: 23,
  /** owner hub -> SDK (3): answers Hold `id`, one result per key */
  Held: 24,
  /** SDK -> owner hub (3): `keys` are no longer served here */
  Release: 25,
  /** owner hub -> holder (3): `keys` were written; drop them (and the registration ends) */
  Drop: 26,
  /** hub -> dashboard: the whole live state (replaces what the page had) */
  FeedSnapshot: 20,
  /** hub -> dashboard: what changed since the last feed frame */
  FeedDelta: 21,
} as const;
export type MsgType = (typeof MsgType)[keyof typeof MsgType];

export interface Member {
  id: string;
  /** ws:// URL SDKs use to reach this hub; empty when the hub does not know its public address */
  url: string;
}

export type ClientRole = 'sdk' | 'dashboard';

export interface Hello {
  t: typeof MsgType.Hello;
  /** the newest protocol version the client speaks */
  v: number;
  /** the oldest it speaks (absent: `v` only); at most `v` */
  vmin?: number;
  app: string;
  token?: string;
  instance: string;
  sdk: string;
  host?: string;
  role?: ClientRole;
}
export interface Welcome {
  t: typeof MsgType.Welcome;
  /** the version this session speaks, negotiated from the Hello (versions.ts) */
  v: number;
  hub: string;
  epoch: number;
  members: Member[];
  rules: Rule[];
  /** per-instance report threshold for each rule, same order as `rules` */
  local: number[];
  /** SDK instances of the app the hub sees */
  instances: number;
  /** seq of the last broadcast the hub sent to this app: the next one is seq + 1 */
  seq: number;
  /** version 3: the app's write clock now (Hold `since`) */
  w?: number;
}
export interface Config {
  t: typeof MsgType.Config;
  rules: Rule[];
  local: number[];
  instances: number;
}
export interface Members {
  t: typeof MsgType.Members;
  epoch: number;
  members: Member[];
}
/**
 * keys[i] was accessed counts[i] times on this instance since its last report of that key. For
 * keys hot here, `hits[i]` of those accesses were answered from the local cache and `loads[i]`
 * loader calls were made for the key (both absent when no reported key is hot here).
 */
export interface Report {
  t: typeof MsgType.Report;
  keys: string[];
  counts: number[];
  hits?: number[];
  loads?: number[];
}
export interface Promote {
  t: typeof MsgType.Promote;
  seq: number;
  key: string;
  /** cluster-wide accesses per second when promoted */
  qps: number;
  hotMs: number;
  cacheTtlMs: number;
  cache: boolean;
  /** hub wall-clock time of the decision (ms since epoch) */
  at: number;
  /** which accesses made it hot: the rule's kind (absent: 'read', the frame before kinds) */
  kind?: RuleKind;
  /**
   * copies of the key that serve reads, the key itself included (absent: 1, no replica keys). A
   * hot key is promoted again with the new count when its QPS crosses a step.
   */
  replicas?: number;
}
export interface Invalidate {
  t: typeof MsgType.Invalidate;
  seq: number;
  key: string;
  /** `key` names a namespace (a Redis database, as the writer's ioredis wrapper names it) that was flushed: drop every cached value of it */
  flush?: true;
  /**
   * An update (a write that pushes its value, InvalidateRequest `value`): the key's new value
   * (packValue bytes) under version `ver` of the shared key. SDKs drop the old value and inject
   * this one in the same step, if `ver` is above the last version they took for the key.
   */
  value?: Uint8Array;
  ver?: number;
  /** `value` is an adapter's cache record (PushForm), not a plain value */
  form?: PushForm;
}
export interface Demote {
  t: typeof MsgType.Demote;
  seq: number;
  key: string;
}
/** The whole hot set this hub owns for the app, sent after Welcome and on Resync. */
export interface Snapshot {
  t: typeof MsgType.Snapshot;
  seq: number;
  hot: HotEntry[];
}
export interface ErrorMsg {
  t: typeof MsgType.Error;
  code: string;
  message: string;
}
export interface InvalidateRequest {
  t: typeof MsgType.InvalidateRequest;
  id: number;
  key: string;
  /** `key` names a flushed namespace (FLUSHDB, FLUSHALL, SWAPDB): the broadcast carries the flag, acks as for a key */
  flush?: true;
  /**
   * An update: the key's new value (packValue bytes), which the hub broadcasts with the
   * invalidation when the key is a hot pushed key (`push: true`) and the value is within its
   * `maxPushBytes` (else a plain invalidation, and an Error HK_ERR_PUSH_TOO_LARGE to the writer).
   * Acked as any invalidation. Not with `flush`.
   */
  value?: Uint8Array;
  /**
   * With `value`: the seq of this hub's broadcasts the writer had applied before it learnt the
   * value (before its write, or its read-back). The hub broadcasts the value only if no
   * invalidation or update of the key went out after that seq — such a write may have reached the
   * store after this one, so this value may be the older: a plain invalidation then.
   */
  since?: number;
  /** `value` is an adapter's cache record (PushForm), not a plain value */
  form?: PushForm;
  /**
   * Invalidates only the value this session pushed (it heard a write of the key, or lost the
   * tracking it vouched with): when another value or invalidation superseded it at the hub, there
   * is nothing left to drop and the hub acks at once without a broadcast.
   */
  pushed?: true;
}
/**
 * Answers InvalidateRequest `id` once every SDK session of the app that might serve the key has
 * applied the invalidation or is fenced: its lease (the hub's view of it) lapsed first. There is
 * no ack on a plain timeout.
 */
export interface Ack {
  t: typeof MsgType.Ack;
  id: number;
  seq: number;
  /** instance ids fenced by lease expiry instead of confirming (at most MAX_FENCED_IDS) */
  fenced: string[];
  /** ms from the request's arrival to the ack, on the hub's clock */
  ms: number;
}
/**
 * Asks for a lease. The SDK's lease ends `ms` (from the Grant) after it SENT this request, less
 * a margin; the hub's view ends `ms` after it RECEIVED it, so the SDK's view always ends first.
 */
export interface Lease {
  t: typeof MsgType.Lease;
  id: number;
}
/** Grants Lease `id` for `ms`. A hub grants nothing to a session that has not applied the oldest invalidation it waits on. */
export interface Grant {
  t: typeof MsgType.Grant;
  id: number;
  ms: number;
  /** version 3: the app's write clock when granted */
  w?: number;
}
/**
 * This instance's rate splits of rate-limited keys: `keys[i]` may be accessed `rates[i]` times per
 * second here, for `ttlMs` (then the SDK falls back to `limit / instances`). The hub sends a
 * split when it changes and renews it before it lapses.
 */
export interface Limit {
  t: typeof MsgType.Limit;
  keys: string[];
  rates: number[];
  ttlMs: number;
}
/** The SDK has applied every broadcast up to `seq` (sent for invalidations), and (version 3) every Drop up to `d`. */
export interface Applied {
  t: typeof MsgType.Applied;
  seq: number;
  d?: number;
}

/**
 * Version 3. Asks the key's owner hub to record this session as a holder of each of `keys`
 * before it serves them from its local cache (a local surge, a kept first read). `since[i]`: the
 * write clock (`w`) this client had received when the read of the value it would serve was sent.
 */
export interface Hold {
  t: typeof MsgType.Hold;
  id: number;
  keys: string[];
  since: number[];
}

/** What a Held says of each key of its Hold (HoldResult). */
export const HoldResult = {
  /** recorded: the value read at `since` may be served */
  Recorded: 0,
  /** recorded, but written after `since`: that value must not be served (a load sent after this answer may) */
  Written: 1,
  /** refused: over this session's or this address's share of registrations */
  OverShare: 2,
  /** refused: this hub does not own the key */
  NotOwner: 3,
  /** refused: the app's directory is full */
  Full: 4,
} as const;
export type HoldResult = (typeof HoldResult)[keyof typeof HoldResult];

/** Answers Hold `id`: `r[i]` for its `keys[i]`; `w`: the app's write clock now. */
export interface Held {
  t: typeof MsgType.Held;
  id: number;
  r: HoldResult[];
  w: number;
}

/** `keys` are no longer served by this session (best effort: holding too much only costs Drops). */
export interface Release {
  t: typeof MsgType.Release;
  keys: string[];
}

/**
 * `keys`, held by this session, were written: drop their values, loads and kept reads, then send
 * Applied with `d`. The registrations end with it (a later surge registers again). `d` counts this
 * connection's Drops: 1, 2, 3 …; any other is a protocol fault.
 */
export interface Drop {
  t: typeof MsgType.Drop;
  d: number;
  keys: string[];
  /** the app's write clock after the write (a later registration of these keys reads under it) */
  w: number;
}
/** The SDK saw a sequence gap: the hub answers with a Snapshot. */
export interface Resync {
  t: typeof MsgType.Resync;
}

/**
 * Asks this SDK to load `key` and Push it with `ver`. The hub accepts the Push only from the
 * session it asked and only while the key's version is still `ver`: an invalidation (or another
 * accepted push) in between makes it a value read before the change, and it is discarded.
 */
export interface Fill {
  t: typeof MsgType.Fill;
  key: string;
  ver: number;
}
/** The value a Fill asked for; `value` is the SDK's msgpack of it (packValue), opaque to the hub. */
export interface Push {
  t: typeof MsgType.Push;
  key: string;
  ver: number;
  value: Uint8Array;
  /** `value` is an adapter's cache record (PushForm), not a plain value */
  form?: PushForm;
}
/**
 * A shared key's value for every SDK of the app. `ver` grows with every accepted push and every
 * invalidation of the key at its owner hub; an SDK never replaces a value with one of a lower or
 * equal version, and an Invalidate on the same connection always follows the Values it supersedes.
 */
export interface Value {
  t: typeof MsgType.Value;
  key: string;
  ver: number;
  value: Uint8Array;
  /** `value` is an adapter's cache record (PushForm), not a plain value */
  form?: PushForm;
}

/**
 * What a pushed value's bytes hold, when not the value itself (absent): 1, a cache record of the
 * ioredis wrapper (redis/read/shared-records.ts), which only SDKs with a wrapped client inject.
 * The hub forwards it untouched.
 */
export const PushForm = { Record: 1 } as const;
export type PushForm = (typeof PushForm)[keyof typeof PushForm];

export type ClientMessage = Hello | Report | InvalidateRequest | Applied | Resync | Lease | Push | Hold | Release;
export type ServerMessage =
  | Welcome
  | Config
  | Members
  | Promote
  | Invalidate
  | Demote
  | Snapshot
  | ErrorMsg
  | Ack
  | Grant
  | Fill
  | Value
  | Limit
  | Held
  | Drop;
export type Message = ClientMessage | ServerMessage;
