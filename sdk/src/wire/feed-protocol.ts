/**
 * The dashboard live-feed schema: what the hub sends a dashboard over `/live`, with its guards.
 * Same codec, message-type numbers and field guards as the SDK wire protocol (protocol.ts), kept
 * apart because only the hub and the dashboard speak it. Runtime-agnostic like protocol.ts.
 *
 *   dashboard -> hub (/live) : Hello (role 'dashboard', app '*')
 *   hub -> dashboard         : FeedSnapshot, then FeedDelta every few hundred ms; Error + close
 */
import {
  arr,
  assertKey,
  bool,
  decodeFrame,
  int,
  MAX_FENCED_IDS,
  MAX_NAME_LENGTH,
  MsgType,
  num,
  obj,
  optStr,
  packFrame,
  protocolError,
  str,
  type ErrorMsg,
} from './protocol.ts';

// ---- dashboard live feed: hub -> dashboard over `/live` ----
//
// The page sends Hello { role: 'dashboard', app: '*', token: <dashboard token or ''> } as its first
// frame (never a token in the URL). The hub answers FeedSnapshot, then a FeedDelta every few hundred
// ms carrying only what changed. Hot rows are bounded per frame (MAX_FEED_ROWS) so that 10 000 hot
// keys cost a few frames after connect and then only the rows whose QPS moved.

/** hot rows, events or instances in one feed frame */
export const MAX_FEED_ROWS = 10_000;
/** hubs in one feed frame */
export const MAX_FEED_HUBS = 1024;

/** One hot key as the dashboard shows it. (app, key) identifies the row. */
export interface FeedHotRow {
  app: string;
  key: string;
  /** cluster-wide accesses per second */
  qps: number;
  /** accesses within the rule's window that promote the key */
  threshold: number;
  /** the rule's window: `threshold * 1000 / windowMs` is the promoting rate per second */
  windowMs: number;
  /** ms since epoch the key has been hot */
  since: number;
  /** id of the hub that owns the key */
  hub: string;
  /** SDK instances that reported the key in the current window */
  instances: number;
  /** the deciding rule's kind when it is not 'read': the key is write-hot ('write') or counted both ways ('any') */
  kind?: 'write' | 'any';
  /** share of its reads the SDKs answered from their local caches, 0–100 (absent: not reported yet) */
  localPct?: number;
  /** loader calls per second for it across the SDKs: reads that reached the store */
  loadsPerSec?: number;
}
/** A promotion, demotion or invalidation (the hub's HubEvent on the wire). */
export interface FeedEvent {
  type: 'promote' | 'demote' | 'invalidate';
  app: string;
  key: string;
  qps: number;
  at: number;
  hub: string;
  /** promote: ms from the first report in the crossing window to the decision */
  latencyMs?: number;
  /** demote: 'cooled', 'expired' or 'manual' */
  reason?: string;
  manual?: boolean;
  /** invalidate (an SDK's, awaiting acks): ms from the request to the ack */
  ackMs?: number;
  /** invalidate: instances fenced (their lease lapsed) instead of confirming the drop */
  fenced?: string[];
  /** invalidate: false when the hub dropped it unacknowledged (its pending bound, shutdown) */
  acked?: boolean;
}
export interface FeedHub {
  id: string;
  url: string;
  startedAt: number;
  /** report records absorbed per second */
  ingestRate: number;
  connections: number;
  heapUsed: number;
  rss: number;
  redis: 'ok' | 'down' | 'none';
  /** how many hot keys the hub owns */
  hotCount: number;
  /** how many SDK instances are connected to the hub */
  instanceCount: number;
  updatedAt: number;
}
/** One SDK connection: an instance connected to several hubs appears once per hub. */
export interface FeedInstance {
  app: string;
  instance: string;
  host: string;
  sdk: string;
  hub: string;
  lastReport: number;
  connectedAt: number;
}
export interface FeedSnapshot {
  t: typeof MsgType.FeedSnapshot;
  /** id of the hub serving this feed */
  hub: string;
  /** hub wall-clock ms */
  at: number;
  apps: string[];
  /** top hot rows by QPS; the rest follow in deltas */
  hot: FeedHotRow[];
  /** hot keys in the cluster, including rows not sent yet */
  hotTotal: number;
  /** recent events, oldest first */
  events: FeedEvent[];
  hubs: FeedHub[];
  instances: FeedInstance[];
}
export interface FeedDelta {
  t: typeof MsgType.FeedDelta;
  at: number;
  /** rows that are new or whose values changed */
  hot: FeedHotRow[];
  /** rows that are no longer hot */
  gone: { app: string; key: string }[];
  hotTotal: number;
  /** events since the last frame, oldest first */
  events: FeedEvent[];
  /** present when the app list changed */
  apps?: string[];
  /** present when hub statuses were refreshed: replaces the list */
  hubs?: FeedHub[];
  /** present when instances were refreshed: replaces the list */
  instances?: FeedInstance[];
}
export type FeedMessage = FeedSnapshot | FeedDelta | ErrorMsg;

/** Encodes a feed frame with the same codec as every other frame. */
export function encodeFeed(message: FeedMessage): Uint8Array {
  return packFrame(message);
}

function optNum(m: Record<string, unknown>, field: string): number | undefined {
  return m[field] === undefined ? undefined : num(m, field);
}
function feedKey(o: Record<string, unknown>): string {
  const key = o.key;
  assertKey(key);
  return key;
}
function feedHotRow(x: unknown): FeedHotRow {
  const o = obj(x, 'hot row');
  return {
    app: str(o, 'app'),
    key: feedKey(o),
    qps: num(o, 'qps'),
    threshold: num(o, 'threshold'),
    windowMs: int(o, 'windowMs', 1),
    since: num(o, 'since'),
    hub: str(o, 'hub'),
    instances: int(o, 'instances'),
    ...feedKind(o),
    ...(o.localPct === undefined ? {} : { localPct: num(o, 'localPct') }),
    ...(o.loadsPerSec === undefined ? {} : { loadsPerSec: num(o, 'loadsPerSec') }),
  };
}
function feedKind(o: Record<string, unknown>): { kind?: 'write' | 'any' } {
  if (o.kind === undefined) return {};
  if (o.kind !== 'write' && o.kind !== 'any') protocolError('hot row "kind" must be "write" or "any"');
  return { kind: o.kind };
}
const FEED_EVENT_TYPES: ReadonlySet<string> = new Set(['promote', 'demote', 'invalidate']);
function feedEvent(x: unknown): FeedEvent {
  const o = obj(x, 'event');
  const type = str(o, 'type');
  if (!FEED_EVENT_TYPES.has(type)) protocolError('event "type" must be promote, demote or invalidate');
  const event: FeedEvent = {
    type: type as FeedEvent['type'],
    app: str(o, 'app'),
    key: feedKey(o),
    qps: num(o, 'qps'),
    at: num(o, 'at'),
    hub: str(o, 'hub'),
  };
  const latencyMs = optNum(o, 'latencyMs');
  if (latencyMs !== undefined) event.latencyMs = latencyMs;
  const reason = optStr(o, 'reason');
  if (reason !== undefined) event.reason = reason;
  if (o.manual !== undefined) event.manual = bool(o, 'manual');
  const ackMs = optNum(o, 'ackMs');
  if (ackMs !== undefined) event.ackMs = ackMs;
  if (o.fenced !== undefined)
    event.fenced = arr(o, 'fenced', MAX_FENCED_IDS).map((x) =>
      typeof x === 'string' ? x.slice(0, MAX_NAME_LENGTH) : protocolError('"fenced" must hold instance ids'),
    );
  if (o.acked !== undefined) event.acked = bool(o, 'acked');
  return event;
}
function feedHub(x: unknown): FeedHub {
  const o = obj(x, 'hub');
  const redis = str(o, 'redis');
  if (redis !== 'ok' && redis !== 'down' && redis !== 'none') protocolError('hub "redis" must be ok, down or none');
  return {
    id: str(o, 'id'),
    url: str(o, 'url', 2048),
    startedAt: num(o, 'startedAt'),
    ingestRate: num(o, 'ingestRate'),
    connections: int(o, 'connections'),
    heapUsed: num(o, 'heapUsed'),
    rss: num(o, 'rss'),
    redis,
    hotCount: int(o, 'hotCount'),
    instanceCount: int(o, 'instanceCount'),
    updatedAt: num(o, 'updatedAt'),
  };
}
function feedInstance(x: unknown): FeedInstance {
  const o = obj(x, 'instance');
  return {
    app: str(o, 'app'),
    instance: str(o, 'instance'),
    host: str(o, 'host'),
    sdk: str(o, 'sdk'),
    hub: str(o, 'hub'),
    lastReport: num(o, 'lastReport'),
    connectedAt: num(o, 'connectedAt'),
  };
}
function feedApps(m: Record<string, unknown>): string[] {
  return arr(m, 'apps', MAX_FEED_ROWS).map((x, i) => {
    if (typeof x !== 'string' || x.length > MAX_NAME_LENGTH)
      protocolError(`apps[${i}] must be a string of at most ${MAX_NAME_LENGTH} characters`);
    return x;
  });
}

/** Decodes and validates a frame the hub sent to a dashboard. */
export function decodeFeedMessage(bytes: Uint8Array): FeedMessage {
  const m = decodeFrame(bytes);
  switch (m.t) {
    case MsgType.FeedSnapshot:
      return {
        t: MsgType.FeedSnapshot,
        hub: str(m, 'hub'),
        at: num(m, 'at'),
        apps: feedApps(m),
        hot: arr(m, 'hot', MAX_FEED_ROWS).map(feedHotRow),
        hotTotal: int(m, 'hotTotal'),
        events: arr(m, 'events', MAX_FEED_ROWS).map(feedEvent),
        hubs: arr(m, 'hubs', MAX_FEED_HUBS).map(feedHub),
        instances: arr(m, 'instances', MAX_FEED_ROWS).map(feedInstance),
      };
    case MsgType.FeedDelta: {
      const delta: FeedDelta = {
        t: MsgType.FeedDelta,
        at: num(m, 'at'),
        hot: arr(m, 'hot', MAX_FEED_ROWS).map(feedHotRow),
        gone: arr(m, 'gone', MAX_FEED_ROWS).map((x) => {
          const o = obj(x, 'gone row');
          return { app: str(o, 'app'), key: feedKey(o) };
        }),
        hotTotal: int(m, 'hotTotal'),
        events: arr(m, 'events', MAX_FEED_ROWS).map(feedEvent),
      };
      if (m.apps !== undefined) delta.apps = feedApps(m);
      if (m.hubs !== undefined) delta.hubs = arr(m, 'hubs', MAX_FEED_HUBS).map(feedHub);
      if (m.instances !== undefined) delta.instances = arr(m, 'instances', MAX_FEED_ROWS).map(feedInstance);
      return delta;
    }
    case MsgType.Error:
      return { t: MsgType.Error, code: str(m, 'code'), message: str(m, 'message', 4096) };
    default:
      protocolError(`message type ${m.t} is not a dashboard feed message`);
  }
}
