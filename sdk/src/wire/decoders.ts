/**
 * Decoders of each side's messages: a frame is decoded (codec.ts), then every field a handler
 * reads is checked (guards.ts), so a handler never sees a malformed message. Anything else is a
 * ProtocolError with the close code it names.
 */
import { MAX_LIMIT, MAX_REPLICAS, parseRules, RULE_KINDS, type Rule, type RuleKind } from '../rules.ts';
import { decodeFrame, protocolError } from './codec.ts';
import { arr, assertKey, bin, bool, int, num, obj, optStr, str } from './guards.ts';
import {
  MAX_COUNT,
  MAX_FENCED_IDS,
  MAX_HOLD_KEYS,
  MAX_LIMIT_KEYS,
  MAX_NAME_LENGTH,
  MAX_REPORT_KEYS,
  MAX_VALUE_BYTES,
} from '../limits.ts';
import {
  HoldResult,
  MsgType,
  PushForm,
  type ClientMessage,
  type HotEntry,
  type Member,
  type Report,
  type ServerMessage,
} from './messages.ts';

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

/** The `keys` of a Hold, Release or Drop: 1 to MAX_HOLD_KEYS keys. */
function holdKeys(m: Record<string, unknown>): string[] {
  const keys = arr(m, 'keys', MAX_HOLD_KEYS);
  if (keys.length === 0) protocolError('"keys" must not be empty');
  for (let i = 0; i < keys.length; i++) assertKey(keys[i], `keys[${i}]`);
  return keys as string[];
}

/** An array of `n` integers, each in [min, max]. */
function ints(m: Record<string, unknown>, field: string, n: number, min: number, max: number): number[] {
  const values = arr(m, field, MAX_HOLD_KEYS);
  if (values.length !== n) protocolError(`"${field}" and "keys" differ in length`);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      protocolError(`${field}[${i}] must be an integer in [${min}, ${max}]`);
  }
  return values as number[];
}

/** The optional version-3 write clock `w` of Welcome and Grant. */
function clock(m: Record<string, unknown>): { w?: number } {
  return m.w === undefined ? {} : { w: int(m, 'w') };
}

/** Decodes and validates a frame an SDK or dashboard sent to the hub. */
export function decodeClientMessage(bytes: Uint8Array): ClientMessage {
  const m = decodeFrame(bytes);
  switch (m.t) {
    case MsgType.Hello: {
      const role = m.role === undefined ? undefined : str(m, 'role');
      if (role !== undefined && role !== 'sdk' && role !== 'dashboard')
        protocolError('"role" must be "sdk" or "dashboard"');
      const v = int(m, 'v');
      const vmin = m.vmin === undefined ? undefined : int(m, 'vmin');
      if (vmin !== undefined && vmin > v) protocolError(`"vmin" ${vmin} is above "v" ${v}`);
      return {
        t: MsgType.Hello,
        v,
        ...(vmin === undefined ? {} : { vmin }),
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
      return m.d === undefined
        ? { t: MsgType.Applied, seq: int(m, 'seq') }
        : { t: MsgType.Applied, seq: int(m, 'seq'), d: int(m, 'd') };
    case MsgType.Hold: {
      const keys = holdKeys(m);
      return {
        t: MsgType.Hold,
        id: int(m, 'id'),
        keys,
        since: ints(m, 'since', keys.length, 0, Number.MAX_SAFE_INTEGER),
      };
    }
    case MsgType.Release:
      return { t: MsgType.Release, keys: holdKeys(m) };
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

type Fields = Record<string, unknown>;

function welcome(m: Fields): ServerMessage {
  return {
    t: MsgType.Welcome,
    v: int(m, 'v'),
    hub: str(m, 'hub'),
    epoch: int(m, 'epoch'),
    members: members(m),
    ...rules(m),
    instances: int(m, 'instances'),
    seq: int(m, 'seq'),
    ...clock(m),
  };
}

function promote(m: Fields): ServerMessage {
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

function invalidate(m: Fields): ServerMessage {
  const key = m.key;
  assertKey(key);
  return { t: MsgType.Invalidate, seq: int(m, 'seq'), key, ...flush(m), ...update(m, true) };
}

function demote(m: Fields): ServerMessage {
  const key = m.key;
  assertKey(key);
  return { t: MsgType.Demote, seq: int(m, 'seq'), key };
}

function hotEntry(x: unknown): HotEntry {
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
}

function snapshot(m: Fields): ServerMessage {
  const hot = arr(m, 'hot', 10_000_000).map(hotEntry);
  return { t: MsgType.Snapshot, seq: int(m, 'seq'), hot };
}

function ack(m: Fields): ServerMessage {
  const fenced =
    m.fenced === undefined
      ? []
      : arr(m, 'fenced', MAX_FENCED_IDS).map((x) => {
          if (typeof x !== 'string' || x.length > MAX_NAME_LENGTH) protocolError('"fenced" must hold instance ids');
          return x;
        });
  return { t: MsgType.Ack, id: int(m, 'id'), seq: int(m, 'seq'), fenced, ms: m.ms === undefined ? 0 : num(m, 'ms') };
}

function held(m: Fields): ServerMessage {
  const r = arr(m, 'r', MAX_HOLD_KEYS);
  for (let i = 0; i < r.length; i++)
    if (typeof r[i] !== 'number' || !Object.values(HoldResult).includes(r[i] as HoldResult))
      protocolError(`r[${i}] must be a hold result (0 to 4)`);
  return { t: MsgType.Held, id: int(m, 'id'), r: r as HoldResult[], w: int(m, 'w') };
}

function fill(m: Fields): ServerMessage {
  const key = m.key;
  assertKey(key);
  return { t: MsgType.Fill, key, ver: int(m, 'ver') };
}

function value(m: Fields): ServerMessage {
  const key = m.key;
  assertKey(key);
  return { t: MsgType.Value, key, ver: int(m, 'ver'), value: bin(m, 'value', MAX_VALUE_BYTES), ...form(m) };
}

function limit(m: Fields): ServerMessage {
  const keys = arr(m, 'keys', MAX_LIMIT_KEYS);
  const rates = arr(m, 'rates', MAX_LIMIT_KEYS);
  if (keys.length !== rates.length) protocolError('"keys" and "rates" differ in length');
  for (let i = 0; i < keys.length; i++) {
    assertKey(keys[i], `keys[${i}]`);
    const r = rates[i];
    if (typeof r !== 'number' || !(r >= 0 && r <= MAX_LIMIT)) protocolError(`rates[${i}] must be in [0, ${MAX_LIMIT}]`);
  }
  return { t: MsgType.Limit, keys: keys as string[], rates: rates as number[], ttlMs: int(m, 'ttlMs', 1, 3_600_000) };
}

/** Decodes and validates a frame the hub sent to an SDK: one decoder per message type. */
export function decodeServerMessage(bytes: Uint8Array): ServerMessage {
  const m = decodeFrame(bytes);
  switch (m.t) {
    case MsgType.Welcome:
      return welcome(m);
    case MsgType.Config:
      return { t: MsgType.Config, ...rules(m), instances: int(m, 'instances') };
    case MsgType.Members:
      return { t: MsgType.Members, epoch: int(m, 'epoch'), members: members(m) };
    case MsgType.Promote:
      return promote(m);
    case MsgType.Invalidate:
      return invalidate(m);
    case MsgType.Demote:
      return demote(m);
    case MsgType.Snapshot:
      return snapshot(m);
    case MsgType.Error:
      return { t: MsgType.Error, code: str(m, 'code'), message: str(m, 'message', 4096) };
    case MsgType.Ack:
      return ack(m);
    case MsgType.Grant:
      return { t: MsgType.Grant, id: int(m, 'id'), ms: int(m, 'ms', 0, 3_600_000), ...clock(m) };
    case MsgType.Held:
      return held(m);
    case MsgType.Drop:
      return { t: MsgType.Drop, d: int(m, 'd', 1), keys: holdKeys(m), w: int(m, 'w') };
    case MsgType.Fill:
      return fill(m);
    case MsgType.Value:
      return value(m);
    case MsgType.Limit:
      return limit(m);
    default:
      protocolError(`message type ${m.t} is not one a hub sends`);
  }
}
