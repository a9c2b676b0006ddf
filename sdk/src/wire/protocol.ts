/**
 * The hotkey wire protocol: every message, the codec and the guards. The SDK, the hub and the
 * dashboard import this module (the dashboard feed's schema lives beside it in feed-protocol.ts,
 * on the same codec); nothing else encodes or decodes frames. Runtime-agnostic (no `node:`
 * imports, `Uint8Array` in and out) so that the dashboard bundles it for the browser.
 *
 * Frames are binary WebSocket messages, each one msgpack map decodable on its own (no shared
 * record structures, no extension types: plain-msgpack.ts), with a numeric `t` naming the message type. A connection opens with the
 * client's Hello, carrying PROTOCOL_VERSION; the hub answers Welcome or Error + close.
 *
 *   SDK -> hub : Hello, Report, InvalidateRequest, Applied, Resync, Lease, Push
 *   hub -> SDK : Welcome, Config, Members, Promote, Invalidate, Demote, Snapshot, Ack, Grant, Fill, Value, Limit, Error
 *   (the dashboard's /live messages: feed-protocol.ts)
 */
import { Packr, type Options } from 'msgpackr';
import { ErrorCode, HotKeyError, ProtocolError } from '../errors.ts';
import { MAX_LIMIT, MAX_REPLICAS, parseRules, RULE_KINDS, type Rule, type RuleKind } from '../rules.ts';
import { findExtension } from './plain-msgpack.ts';

/** 2: leases (Lease, Grant) and fencing acks; a version-1 SDK would serve values no lease bounds */
export const PROTOCOL_VERSION = 2;
/** frames larger than this are refused with HK_ERR_FRAME_TOO_LARGE / close 4004 */
export const MAX_FRAME_BYTES = 1 << 20;
/** keys longer than this (UTF-16 code units) are refused with HK_ERR_KEY_TOO_LONG / close 4005 */
export const MAX_KEY_LENGTH = 1024;
/** bytes of one pushed value (Push, Value) at most: a frame must still fit in MAX_FRAME_BYTES */
export const MAX_VALUE_BYTES = MAX_FRAME_BYTES - 2 * MAX_KEY_LENGTH - 1024;
/** keys in one Limit frame */
export const MAX_LIMIT_KEYS = 65_536;
/** records in one Report frame */
export const MAX_REPORT_KEYS = 65_536;
/** a Report's counts (and hits, loads) are integers in [0, MAX_COUNT] */
export const MAX_COUNT = 0x7fffffff;
/** app, instance, host and hub names at most this long */
export const MAX_NAME_LENGTH = 256;
/**
 * The lease a hub grants when not configured otherwise (its `leaseMs` tunable), and the one an
 * SDK assumes to pace its first Lease requests. An SDK serves a hub's cached values only while its
 * lease from that hub is current; a hub acks an invalidation for an SDK that did not apply it only
 * once that SDK's lease surely lapsed — so this is the bound on write latency under a partition.
 */
export const DEFAULT_LEASE_MS = 2000;
/** fenced instance ids listed in one Ack at most (the rest are counted, not named) */
export const MAX_FENCED_IDS = 64;

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
  /** hub -> one SDK: load a shared key (`share: true` rule) and Push its value under ticket `ver` */
  Fill: 17,
  /** SDK -> hub: the value a Fill asked for, serialised by the SDK (opaque to the hub) */
  Push: 18,
  /** hub -> SDKs: a shared key's value with its per-key version; every SDK injects it without loading */
  Value: 19,
  /** hub -> SDK: this instance's shares of the rate limits of keys it uses */
  Limit: 22,
  /** hub -> dashboard: the whole live state (replaces what the page had) */
  FeedSnapshot: 20,
  /** hub -> dashboard: what changed since the last feed frame */
  FeedDelta: 21,
} as const;
export type MsgType = (typeof MsgType)[keyof typeof MsgType];

/**
 * WebSocket close codes the hub uses. 1009 is sent by ws itself for a frame over its hard limit
 * (`4 * MAX_FRAME_BYTES`); frames between the two limits get an Error frame and 4004.
 */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  MessageTooBig: 1009,
  InternalError: 1011, // a fault inside the hub (logged there): the client reconnects
  Protocol: 4000,
  Version: 4001,
  UnknownApp: 4002,
  Auth: 4003,
  FrameTooLarge: 4004,
  KeyTooLong: 4005,
  HelloTimeout: 4006,
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

export interface Member {
  id: string;
  /** ws:// URL SDKs use to reach this hub; empty when the hub does not know its public address */
  url: string;
}

export type ClientRole = 'sdk' | 'dashboard';

export interface Hello {
  t: typeof MsgType.Hello;
  v: number;
  app: string;
  token?: string;
  instance: string;
  sdk: string;
  host?: string;
  role?: ClientRole;
}
export interface Welcome {
  t: typeof MsgType.Welcome;
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
export interface HotEntry {
  key: string;
  /** ms the promotion still lives without renewal */
  ttlMs: number;
  cacheTtlMs: number;
  cache: boolean;
  qps: number;
  /** as Promote's `kind` (absent: 'read') */
  kind?: RuleKind;
  /** as Promote's `replicas` */
  replicas?: number;
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
   * invalidation when the key is a hot shared key (`share: true`) and the value is within its
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
}
/**
 * This instance's shares of rate-limited keys: `keys[i]` may be accessed `rates[i]` times per
 * second here, for `ttlMs` (then the SDK falls back to `limit / instances`). The hub sends a
 * share when it changes and renews it before it lapses.
 */
export interface Limit {
  t: typeof MsgType.Limit;
  keys: string[];
  rates: number[];
  ttlMs: number;
}
/** The SDK has applied every broadcast up to `seq` (sent for invalidations). */
export interface Applied {
  t: typeof MsgType.Applied;
  seq: number;
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
 * ioredis wrapper (ioredis/shared-records.ts), which only SDKs with a wrapped client inject.
 * The hub forwards it untouched.
 */
export const PushForm = { Record: 1 } as const;
export type PushForm = (typeof PushForm)[keyof typeof PushForm];

export type ClientMessage = Hello | Report | InvalidateRequest | Applied | Resync | Lease | Push;
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
  | Limit;
export type Message = ClientMessage | ServerMessage;

// useRecords: false keeps every frame self-describing (a fresh decoder reads any frame).
// skipValues: an absent optional field (`token: undefined`) is left out rather than written as
// msgpackr's ext-0 `undefined`, so every frame this codec writes is plain msgpack.
// (msgpackr documents skipValues; its typings lack it)
const packerOptions = {
  useRecords: false,
  moreTypes: false,
  mapsAsObjects: true,
  int64AsType: 'number',
  skipValues: [undefined],
} as const;
const packr = new Packr(packerOptions as Options);

export function encode(message: Message): Uint8Array {
  return packr.pack(message);
}

// Pushed values (Push, Value) are the SDK's own msgpack, carried as bin and opaque to the hub.
// moreTypes: Date, Set, RegExp, Error and typed arrays round-trip as themselves; plain objects
// come back as plain objects (client/push.ts decides which values may be pushed).
const valuePackr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true } as Options);

/** A value to push, as bytes (throws on what msgpack cannot hold, e.g. a symbol). */
export function packValue(value: unknown): Uint8Array {
  return valuePackr.pack(value);
}

/** A pushed value's bytes back to the value (throws on bytes that are not msgpack). */
export function unpackValue(bytes: Uint8Array): unknown {
  return valuePackr.unpack(bytes);
}

/** The one codec for any frame with a numeric `t` (feed-protocol.ts encodes with it too). */
export function packFrame(frame: { t: number }): Uint8Array {
  return packr.pack(frame);
}

/** Throws a ProtocolError HK_ERR_PROTOCOL: the socket closes with `CloseCode.Protocol`. */
export function protocolError(message: string): never {
  throw new ProtocolError(ErrorCode.Protocol, message, CloseCode.Protocol);
}

/** msgpack bytes to a plain object with a numeric `t`, or a ProtocolError. */
export function decodeFrame(bytes: Uint8Array): Record<string, unknown> & { t: number } {
  if (bytes.byteLength > MAX_FRAME_BYTES) {
    throw new ProtocolError(
      ErrorCode.FrameTooLarge,
      `frame of ${bytes.byteLength} bytes exceeds ${MAX_FRAME_BYTES}`,
      CloseCode.FrameTooLarge,
    );
  }
  // msgpackr would build Dates, Sets, typed arrays, BigInts … from ext tokens: refuse them unbuilt
  const ext = findExtension(bytes);
  if (ext >= 0)
    protocolError(
      `msgpack extension types are not part of the protocol (byte 0x${bytes[ext]!.toString(16)} at offset ${ext})`,
    );
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch (err) {
    protocolError(`frame is not valid msgpack (${(err as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || ArrayBuffer.isView(value)) {
    protocolError('frame is not a msgpack map');
  }
  const t = (value as { t?: unknown }).t;
  if (typeof t !== 'number') protocolError('frame has no numeric "t"');
  return value as Record<string, unknown> & { t: number };
}

// ---- field guards (feed-protocol.ts checks its frames with them too) ----

export function str(m: Record<string, unknown>, field: string, max = MAX_NAME_LENGTH): string {
  const v = m[field];
  if (typeof v !== 'string') protocolError(`"${field}" must be a string`);
  if (v.length > max) protocolError(`"${field}" is longer than ${max}`);
  return v;
}
export function optStr(m: Record<string, unknown>, field: string): string | undefined {
  return m[field] === undefined ? undefined : str(m, field);
}
export function int(m: Record<string, unknown>, field: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const v = m[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    protocolError(`"${field}" must be an integer in [${min}, ${max}]`);
  return v;
}
export function num(m: Record<string, unknown>, field: string): number {
  const v = m[field];
  if (typeof v !== 'number' || !Number.isFinite(v)) protocolError(`"${field}" must be a finite number`);
  return v;
}
export function bool(m: Record<string, unknown>, field: string): boolean {
  const v = m[field];
  if (typeof v !== 'boolean') protocolError(`"${field}" must be a boolean`);
  return v;
}
export function arr(m: Record<string, unknown>, field: string, max: number): unknown[] {
  const v = m[field];
  if (!Array.isArray(v)) protocolError(`"${field}" must be an array`);
  if (v.length > max) protocolError(`"${field}" has more than ${max} items`);
  return v;
}
export function bin(m: Record<string, unknown>, field: string, max: number): Uint8Array {
  const v = m[field];
  if (!(v instanceof Uint8Array)) protocolError(`"${field}" must be msgpack bin`);
  if (v.byteLength > max) protocolError(`"${field}" is larger than ${max} bytes`);
  return v;
}
export function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) protocolError(`${what} must be a map`);
  return v as Record<string, unknown>;
}

/** Throws HK_ERR_KEY_TOO_LONG (close 4005) for an empty key or one over MAX_KEY_LENGTH. */
export function assertKey(key: unknown, what = 'key'): asserts key is string {
  if (typeof key !== 'string') protocolError(`${what} must be a string`);
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new ProtocolError(
      ErrorCode.KeyTooLong,
      `${what} must be 1 to ${MAX_KEY_LENGTH} characters, got ${key.length}`,
      CloseCode.KeyTooLong,
    );
  }
}

function members(m: Record<string, unknown>): Member[] {
  return arr(m, 'members', 1024).map((x) => {
    const o = obj(x, 'member');
    return { id: str(o, 'id'), url: str(o, 'url', 2048) };
  });
}
function rules(m: Record<string, unknown>): { rules: Rule[]; local: number[] } {
  let parsed: Rule[];
  try {
    parsed = parseRules(m.rules);
  } catch (err) {
    protocolError(`bad rules (${(err as Error).message})`);
  }
  const local = arr(m, 'local', parsed.length).map((x) => {
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 1)
      protocolError('"local" thresholds must be positive integers');
    return x;
  });
  if (local.length !== parsed.length) protocolError('"local" must have one threshold per rule');
  return { rules: parsed, local };
}

// ---- message guards: decode, then check every field a handler reads ----

/** The optional `form` of a pushed value: absent, or a known PushForm. */
function form(m: Record<string, unknown>): { form?: PushForm } {
  if (m.form === undefined) return {};
  if (m.form !== PushForm.Record) protocolError('"form" must be 1 (a cache record)');
  return { form: m.form };
}

/** The optional update value of InvalidateRequest / Invalidate (not with a flush). */
function update(
  m: Record<string, unknown>,
  withVer: boolean,
): { value?: Uint8Array; ver?: number; since?: number; form?: PushForm } {
  if (m.value === undefined) {
    if (m.form !== undefined || m.ver !== undefined || m.since !== undefined)
      protocolError('"form", "ver" and "since" come only with "value"');
    return {};
  }
  if (m.flush !== undefined && m.flush !== false) protocolError('a flush carries no "value"');
  const value = bin(m, 'value', MAX_VALUE_BYTES);
  return withVer ? { value, ver: int(m, 'ver'), ...form(m) } : { value, since: int(m, 'since'), ...form(m) };
}

/** The optional `flush` flag of InvalidateRequest / Invalidate: absent, or `true` (false reads as absent). */
function flush(m: Record<string, unknown>): { flush?: true } {
  if (m.flush === undefined || m.flush === false) return {};
  if (m.flush !== true) protocolError('"flush" must be a boolean');
  return { flush: true };
}

/** The optional `kind` of Promote / HotEntry: absent, or a rule kind. */
function kind(m: Record<string, unknown>): { kind?: RuleKind } {
  if (m.kind === undefined) return {};
  if (!RULE_KINDS.includes(m.kind as RuleKind)) protocolError('"kind" must be "read", "write" or "any"');
  return { kind: m.kind as RuleKind };
}

/** An array of `n` non-negative integer counts (the optional savings arrays of a Report). */
function counters(m: Record<string, unknown>, field: string, n: number): number[] {
  const values = arr(m, field, MAX_REPORT_KEYS);
  if (values.length !== n) protocolError(`"${field}" and "keys" differ in length`);
  for (let i = 0; i < n; i++) {
    const c = values[i];
    if (typeof c !== 'number' || !(c >= 0 && c <= MAX_COUNT) || Math.floor(c) !== c)
      protocolError(`${field}[${i}] must be a non-negative integer`);
  }
  return values as number[];
}

/** The optional `replicas` of Promote / HotEntry: absent, or an integer in [1, MAX_REPLICAS]. */
function replicas(m: Record<string, unknown>): { replicas?: number } {
  if (m.replicas === undefined) return {};
  return { replicas: int(m, 'replicas', 1, MAX_REPLICAS) };
}

/** Decodes and validates a frame an SDK or dashboard sent to the hub. */
export function decodeClientMessage(bytes: Uint8Array): ClientMessage {
  const m = decodeFrame(bytes);
  switch (m.t) {
    case MsgType.Hello: {
      const role = m.role === undefined ? undefined : str(m, 'role');
      if (role !== undefined && role !== 'sdk' && role !== 'dashboard')
        protocolError('"role" must be "sdk" or "dashboard"');
      return {
        t: MsgType.Hello,
        v: int(m, 'v'),
        app: str(m, 'app'),
        token: optStr(m, 'token'),
        instance: str(m, 'instance'),
        sdk: str(m, 'sdk'),
        host: optStr(m, 'host'),
        role,
      };
    }
    case MsgType.Report: {
      const keys = arr(m, 'keys', MAX_REPORT_KEYS);
      const counts = arr(m, 'counts', MAX_REPORT_KEYS);
      if (keys.length !== counts.length) protocolError('"keys" and "counts" differ in length');
      for (let i = 0; i < keys.length; i++) {
        assertKey(keys[i], `keys[${i}]`);
        const c = counts[i];
        if (typeof c !== 'number' || !(c >= 0 && c <= MAX_COUNT) || Math.floor(c) !== c)
          protocolError(`counts[${i}] must be a non-negative integer`);
      }
      const report: Report = { t: MsgType.Report, keys: keys as string[], counts: counts as number[] };
      if (m.hits !== undefined || m.loads !== undefined) {
        report.hits = counters(m, 'hits', keys.length);
        report.loads = counters(m, 'loads', keys.length);
      }
      return report;
    }
    case MsgType.InvalidateRequest: {
      const key = m.key;
      assertKey(key);
      const pushed = m.pushed === undefined || m.pushed === false ? {} : { pushed: bool(m, 'pushed') as true };
      return { t: MsgType.InvalidateRequest, id: int(m, 'id'), key, ...flush(m), ...update(m, false), ...pushed };
    }
    case MsgType.Applied:
      return { t: MsgType.Applied, seq: int(m, 'seq') };
    case MsgType.Resync:
      return { t: MsgType.Resync };
    case MsgType.Lease:
      return { t: MsgType.Lease, id: int(m, 'id') };
    case MsgType.Push: {
      const key = m.key;
      assertKey(key);
      return { t: MsgType.Push, key, ver: int(m, 'ver'), value: bin(m, 'value', MAX_VALUE_BYTES), ...form(m) };
    }
    default:
      protocolError(`message type ${m.t} is not one a client may send`);
  }
}

/** Decodes and validates a frame the hub sent to an SDK. */
export function decodeServerMessage(bytes: Uint8Array): ServerMessage {
  const m = decodeFrame(bytes);
  switch (m.t) {
    case MsgType.Welcome:
      return {
        t: MsgType.Welcome,
        v: int(m, 'v'),
        hub: str(m, 'hub'),
        epoch: int(m, 'epoch'),
        members: members(m),
        ...rules(m),
        instances: int(m, 'instances'),
        seq: int(m, 'seq'),
      };
    case MsgType.Config:
      return { t: MsgType.Config, ...rules(m), instances: int(m, 'instances') };
    case MsgType.Members:
      return { t: MsgType.Members, epoch: int(m, 'epoch'), members: members(m) };
    case MsgType.Promote: {
      const key = m.key;
      assertKey(key);
      return {
        t: MsgType.Promote,
        seq: int(m, 'seq'),
        key,
        qps: num(m, 'qps'),
        hotMs: int(m, 'hotMs'),
        cacheTtlMs: int(m, 'cacheTtlMs'),
        cache: bool(m, 'cache'),
        at: num(m, 'at'),
        ...kind(m),
        ...replicas(m),
      };
    }
    case MsgType.Invalidate: {
      const key = m.key;
      assertKey(key);
      return { t: MsgType.Invalidate, seq: int(m, 'seq'), key, ...flush(m), ...update(m, true) };
    }
    case MsgType.Demote: {
      const key = m.key;
      assertKey(key);
      return { t: MsgType.Demote, seq: int(m, 'seq'), key };
    }
    case MsgType.Snapshot: {
      const hot = arr(m, 'hot', 10_000_000).map((x): HotEntry => {
        const o = obj(x, 'hot entry');
        const key = o.key;
        assertKey(key);
        return {
          key,
          ttlMs: int(o, 'ttlMs'),
          cacheTtlMs: int(o, 'cacheTtlMs'),
          cache: bool(o, 'cache'),
          qps: num(o, 'qps'),
          ...kind(o),
          ...replicas(o),
        };
      });
      return { t: MsgType.Snapshot, seq: int(m, 'seq'), hot };
    }
    case MsgType.Error:
      return { t: MsgType.Error, code: str(m, 'code'), message: str(m, 'message', 4096) };
    case MsgType.Ack: {
      const fenced =
        m.fenced === undefined
          ? []
          : arr(m, 'fenced', MAX_FENCED_IDS).map((x) => {
              if (typeof x !== 'string' || x.length > MAX_NAME_LENGTH) protocolError('"fenced" must hold instance ids');
              return x;
            });
      return {
        t: MsgType.Ack,
        id: int(m, 'id'),
        seq: int(m, 'seq'),
        fenced,
        ms: m.ms === undefined ? 0 : num(m, 'ms'),
      };
    }
    case MsgType.Grant:
      return { t: MsgType.Grant, id: int(m, 'id'), ms: int(m, 'ms', 0, 3_600_000) };
    case MsgType.Fill: {
      const key = m.key;
      assertKey(key);
      return { t: MsgType.Fill, key, ver: int(m, 'ver') };
    }
    case MsgType.Value: {
      const key = m.key;
      assertKey(key);
      return { t: MsgType.Value, key, ver: int(m, 'ver'), value: bin(m, 'value', MAX_VALUE_BYTES), ...form(m) };
    }
    case MsgType.Limit: {
      const keys = arr(m, 'keys', MAX_LIMIT_KEYS);
      const rates = arr(m, 'rates', MAX_LIMIT_KEYS);
      if (keys.length !== rates.length) protocolError('"keys" and "rates" differ in length');
      for (let i = 0; i < keys.length; i++) {
        assertKey(keys[i], `keys[${i}]`);
        const r = rates[i];
        if (typeof r !== 'number' || !(r >= 0 && r <= MAX_LIMIT))
          protocolError(`rates[${i}] must be in [0, ${MAX_LIMIT}]`);
      }
      return {
        t: MsgType.Limit,
        keys: keys as string[],
        rates: rates as number[],
        ttlMs: int(m, 'ttlMs', 1, 3_600_000),
      };
    }
    default:
      protocolError(`message type ${m.t} is not one a hub sends`);
  }
}

/** An Error frame carrying a HotKeyError's code (any other error goes as HK_ERR_PROTOCOL). */
export function errorFrame(err: unknown): Uint8Array {
  const code = err instanceof HotKeyError ? err.code : ErrorCode.Protocol;
  const message = err instanceof Error ? err.message : String(err);
  return encode({ t: MsgType.Error, code, message: message.slice(0, 4096) });
}
