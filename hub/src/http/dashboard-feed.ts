/**
 * The dashboard's live feed on `/live`. A page opens a WebSocket and sends Hello (role
 * 'dashboard', app '*', token = dashboard token or ''); the hub answers FeedSnapshot, then every
 * `intervalMs` a FeedDelta with only what changed for that page: hot rows whose values moved,
 * rows that left, new events, and (less often) hub statuses, SDK instances and the app list.
 *
 * The hot set is gathered once per tick for every page (this hub's own rows plus the rows every
 * other hub shares in its status) and diffed per page against what that page was last sent, at
 * most `maxRowsPerFrame` rows per frame, hottest first, so 10 000 hot keys cost a few frames after
 * connect and then only the rows whose QPS moved. A page that reads too slowly is skipped while
 * its socket buffer is over `softBufferBytes` and dropped (close 4008) over `maxBufferBytes`:
 * a slow dashboard never holds memory in the hub.
 */
import { AuthError, CapacityError, closeCodeOf, ErrorCode, ProtocolError } from '@hotkey/sdk';
import { CloseCode, decodeClientMessage, errorFrame, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import {
  encodeFeed,
  MAX_FEED_HUBS,
  type FeedDelta,
  type FeedEvent,
  type FeedHotRow,
  type FeedHub,
  type FeedInstance,
} from '@hotkey/sdk/feed-protocol';
import { RULE_DEFAULTS, RuleSet, type Rule } from '@hotkey/sdk/rules';
import type { HubEvent } from '../core/coordinator.ts';
import { closeReason, type Peer } from '../core/peer.ts';
import { tokenMatches } from '../core/auth.ts';
import { DEFAULT_TUNABLES } from '../core/tunables.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { clusterHotRows, clusterInstanceRows, rowId, type ClusterSource } from './cluster-view.ts';

export const LIVE_PATH = '/live';

const MIB = 1024 * 1024;

/** What the feed reads from the hub (HubCore satisfies it). */
export interface FeedSource extends ClusterSource {
  activeApps(): string[];
  recentEvents(since: number): HubEvent[];
}

/**
 * @param [intervalMs=250] how often deltas go out
 * @param [maxRowsPerFrame=2000] hot rows (and removals) in one frame
 * @param [maxDashboards=32] live pages at once; more are refused with HK_ERR_OVER_CAPACITY, close 4009
 * @param [softBufferBytes=1 MiB] a page whose socket holds more unsent bytes skips deltas
 * @param [maxBufferBytes=8 MiB] ... and is dropped (HK_ERR_SLOW_CONSUMER, close 4008) above this;
 *   the hub passes its `maxBufferedBytes` tunable
 * @param [helloTimeoutMs=5000] a page must send Hello within this; the hub passes its `helloTimeoutMs` tunable
 * @param [maxEventsQueued=2000] events kept per page between frames (oldest dropped)
 * @param [maxInstances=5000] SDK connections listed
 * @param [snapshotEvents=500] recent events in the snapshot
 */
export interface DashboardFeedOptions {
  source: FeedSource;
  /** when set, Hello must carry it (or the admin token) */
  dashboardToken?: string;
  adminToken?: string;
  intervalMs?: number;
  maxRowsPerFrame?: number;
  maxDashboards?: number;
  softBufferBytes?: number;
  maxBufferBytes?: number;
  helloTimeoutMs?: number;
  maxEventsQueued?: number;
  maxInstances?: number;
  snapshotEvents?: number;
  now?: () => number;
  /** refusals and send failures @default silent */
  logger?: Logger;
}

/** The feed's defaults; the buffer and Hello limits are the hub's (DEFAULT_TUNABLES), so a feed built alone matches one built by startHub. */
export const DEFAULT_FEED_OPTIONS = {
  intervalMs: 250,
  maxRowsPerFrame: 2000,
  maxDashboards: 32,
  softBufferBytes: MIB,
  maxBufferBytes: DEFAULT_TUNABLES.maxBufferedBytes,
  helloTimeoutMs: DEFAULT_TUNABLES.helloTimeoutMs,
  maxEventsQueued: 2000,
  maxInstances: 5000,
  snapshotEvents: 500,
} as const;

/** What the socket adapter calls for one `/live` connection. */
export interface FeedConnection {
  onFrame(bytes: Uint8Array, isBinary: boolean): void;
  onClose(): void;
  readonly admitted: boolean;
}

/** key + byte budget of one frame: MAX_FRAME_BYTES is 1 MiB and keys can be 1 KiB each */
const FRAME_BYTE_BUDGET = 512 * 1024;
const ROW_OVERHEAD_BYTES = 96;
/** statuses and instances change slowly: refresh them every this many ticks */
const SLOW_EVERY_TICKS = 4;

/** true when the page should be sent the new values: QPS moved by > 2 % (or 1/s), or a field changed */
function changed(a: FeedHotRow, b: FeedHotRow): boolean {
  const dq = Math.abs(a.qps - b.qps);
  return (
    (dq > 1 && dq > 0.02 * Math.max(a.qps, b.qps)) ||
    a.threshold !== b.threshold ||
    a.windowMs !== b.windowMs ||
    a.since !== b.since ||
    a.hub !== b.hub ||
    a.instances !== b.instances ||
    a.kind !== b.kind ||
    Math.round(a.localPct ?? -1) !== Math.round(b.localPct ?? -1) ||
    Math.abs((a.loadsPerSec ?? -1) - (b.loadsPerSec ?? -1)) > Math.max(1, 0.02 * (b.loadsPerSec ?? 0))
  );
}

function toFeedEvent(e: HubEvent): FeedEvent {
  const out: FeedEvent = { type: e.type, app: e.app, key: e.key, qps: e.qps, at: e.at, hub: e.hub };
  if (e.latencyMs !== undefined) out.latencyMs = e.latencyMs;
  if (e.reason !== undefined) out.reason = e.reason;
  if (e.manual !== undefined) out.manual = e.manual;
  return out;
}

const SubscriberState = { AwaitingHello: 0, Live: 1, Closed: 2 } as const;
type SubscriberState = (typeof SubscriberState)[keyof typeof SubscriberState];

class Subscriber implements FeedConnection {
  state: SubscriberState = SubscriberState.AwaitingHello;
  /** what the page holds: the rows it was last sent, and the round each was sent in */
  readonly sent = new Map<string, { row: FeedHotRow; round: number }>();
  events: FeedEvent[] = [];
  droppedEvents = 0;
  /** events already in this page's snapshot: skipped from the next round */
  skipEvents = 0;
  appsSent = '';
  readonly #feed: DashboardFeed;
  readonly peer: Peer;
  readonly helloTimer: ReturnType<typeof setTimeout>;

  constructor(feed: DashboardFeed, peer: Peer, helloTimeoutMs: number) {
    this.#feed = feed;
    this.peer = peer;
    this.helloTimer = setTimeout(
      () =>
        this.fail(
          new ProtocolError(ErrorCode.HelloTimeout, `no Hello within ${helloTimeoutMs} ms`, CloseCode.HelloTimeout),
        ),
      helloTimeoutMs,
    );
    this.helloTimer.unref?.();
  }

  /** true once its Hello was accepted (the socket layer's pre-Hello limits stop applying) */
  get admitted(): boolean {
    return this.state === SubscriberState.Live;
  }

  onFrame(bytes: Uint8Array, isBinary: boolean): void {
    if (this.state !== SubscriberState.AwaitingHello) return; // a page has nothing more to say
    try {
      if (!isBinary) throw new ProtocolError(ErrorCode.Protocol, 'frames must be binary msgpack', CloseCode.Protocol);
      const msg = decodeClientMessage(bytes);
      if (msg.t !== MsgType.Hello || msg.role !== 'dashboard')
        throw new ProtocolError(
          ErrorCode.Protocol,
          'the first frame on /live must be Hello with role "dashboard"',
          CloseCode.Protocol,
        );
      if (msg.v !== PROTOCOL_VERSION)
        throw new ProtocolError(
          ErrorCode.Version,
          `protocol version ${msg.v} is not supported; this hub speaks ${PROTOCOL_VERSION}`,
          CloseCode.Version,
        );
      this.#feed.admit(this, msg.token);
    } catch (err) {
      this.fail(err);
    }
  }

  onClose(): void {
    if (this.state === SubscriberState.Closed) return;
    this.state = SubscriberState.Closed;
    clearTimeout(this.helloTimer);
    this.#feed.detach(this);
  }

  fail(err: unknown): void {
    if (this.state === SubscriberState.Closed) return;
    const closeCode = closeCodeOf(err) ?? CloseCode.Protocol;
    this.#feed.faulted(err, closeCode);
    try {
      this.peer.send(errorFrame(err));
      this.peer.close(closeCode, closeReason((err as Error).message));
    } catch {
      // the socket is already gone
    }
    this.onClose();
  }

  queueEvents(events: readonly FeedEvent[], max: number): void {
    if (this.state !== SubscriberState.Live || events.length === 0) return;
    this.events.push(...events);
    if (this.events.length > max) {
      this.droppedEvents += this.events.length - max;
      this.events.splice(0, this.events.length - max);
    }
  }
}

export class DashboardFeed {
  readonly #source: FeedSource;
  readonly #opts: Required<Omit<DashboardFeedOptions, 'dashboardToken' | 'adminToken' | 'source'>>;
  readonly #dashboardToken: string | undefined;
  readonly #adminToken: string | undefined;
  readonly #subscribers = new Set<Subscriber>();
  #pendingEvents: FeedEvent[] = [];
  #timer: ReturnType<typeof setInterval> | undefined;
  /** rounds sent so far: a row's `round` in `sent` says how long ago the page got it */
  #round = 0;
  /** compiled rules per app, rebuilt when the app's rule list changes (for each row's window) */
  readonly #ruleSets = new Map<string, { rules: readonly Rule[]; set: RuleSet }>();
  #closed = false;
  /** counters for /metrics and tests */
  readonly stats = { framesSent: 0, bytesSent: 0, slowDropped: 0, skippedTicks: 0, refused: 0 };

  constructor(options: DashboardFeedOptions) {
    this.#source = options.source;
    this.#dashboardToken = options.dashboardToken;
    this.#adminToken = options.adminToken;
    const d = DEFAULT_FEED_OPTIONS;
    this.#opts = {
      intervalMs: options.intervalMs ?? d.intervalMs,
      maxRowsPerFrame: options.maxRowsPerFrame ?? d.maxRowsPerFrame,
      maxDashboards: options.maxDashboards ?? d.maxDashboards,
      softBufferBytes: options.softBufferBytes ?? d.softBufferBytes,
      maxBufferBytes: options.maxBufferBytes ?? d.maxBufferBytes,
      helloTimeoutMs: options.helloTimeoutMs ?? d.helloTimeoutMs,
      maxEventsQueued: options.maxEventsQueued ?? d.maxEventsQueued,
      maxInstances: options.maxInstances ?? d.maxInstances,
      snapshotEvents: options.snapshotEvents ?? d.snapshotEvents,
      now: options.now ?? Date.now,
      logger: options.logger ?? silentLogger,
    };
    this.#source.coordinator.onEvent((event) => {
      if (this.#subscribers.size === 0) return;
      this.#pendingEvents.push(toFeedEvent(event));
      // bounded even if the timer stalls: pages only ever need the latest ones
      if (this.#pendingEvents.length > this.#opts.maxEventsQueued)
        this.#pendingEvents.splice(0, this.#pendingEvents.length - this.#opts.maxEventsQueued);
    });
  }

  get dashboards(): number {
    let n = 0;
    for (const s of this.#subscribers) if (s.state === SubscriberState.Live) n++;
    return n;
  }

  /** A new `/live` socket. */
  attach(peer: Peer): FeedConnection {
    const sub = new Subscriber(this, peer, this.#opts.helloTimeoutMs);
    if (this.#closed) {
      sub.fail(new ProtocolError(ErrorCode.Unavailable, 'hub is shutting down', CloseCode.GoingAway));
      return sub;
    }
    this.#subscribers.add(sub);
    return sub;
  }

  /** @internal a page's connection is being closed for `err` */
  faulted(err: unknown, closeCode: number): void {
    if (closeCode === CloseCode.GoingAway) return; // the hub is closing: not a refusal
    const code = (err as { code?: unknown }).code ?? ErrorCode.Protocol;
    this.#opts.logger.warn(
      { evt: 'refused', endpoint: LIVE_PATH, code, close: closeCode, reason: (err as Error)?.message },
      'dashboard connection refused',
    );
  }

  /** @internal called by a Subscriber on a valid Hello */
  admit(sub: Subscriber, token: string | undefined): void {
    if (this.#dashboardToken !== undefined) {
      const ok =
        tokenMatches(token || undefined, this.#dashboardToken) ||
        (this.#adminToken !== undefined && tokenMatches(token || undefined, this.#adminToken));
      if (!ok) {
        this.stats.refused++;
        throw new AuthError(token ? 'wrong dashboard token' : 'this hub requires the dashboard token', CloseCode.Auth);
      }
    }
    if (this.dashboards >= this.#opts.maxDashboards) {
      this.stats.refused++;
      throw new CapacityError(
        `this hub serves at most ${this.#opts.maxDashboards} live dashboards`,
        CloseCode.OverCapacity,
      );
    }
    clearTimeout(sub.helloTimer);
    sub.state = SubscriberState.Live;
    // events queued for the next round are already in the snapshot (recentEvents)
    sub.skipEvents = this.#pendingEvents.length;
    this.#sendSnapshot(sub);
    this.#timer ??= setInterval(() => this.tick(), this.#opts.intervalMs);
    this.#timer.unref?.();
  }

  /** @internal */
  detach(sub: Subscriber): void {
    this.#subscribers.delete(sub);
    if (this.dashboards === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      this.#pendingEvents = [];
    }
  }

  /** Closes every page (hub shutdown). */
  close(code: number = CloseCode.GoingAway, reason = 'hub shutting down'): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    for (const sub of [...this.#subscribers]) {
      try {
        sub.peer.close(code, closeReason(reason));
      } catch {
        // already closed
      }
      sub.onClose();
    }
  }

  // ---- what every page is shown ----

  /** the window of the rule that decides `key` (the rule defaults' when none matches) */
  #windowMs(app: string, key: string): number {
    return this.#ruleOf(app, key)?.windowMs ?? RULE_DEFAULTS.windowMs;
  }

  /** the rule that decides `key`, from a rule set compiled once per rules version */
  #ruleOf(app: string, key: string): Rule | undefined {
    const rules = this.#source.coordinator.rules(app);
    let cached = this.#ruleSets.get(app);
    if (cached === undefined || cached.rules !== rules) {
      if (this.#ruleSets.size > 10_000) this.#ruleSets.clear();
      cached = { rules, set: new RuleSet(rules) };
      this.#ruleSets.set(app, cached);
    }
    return cached.set.ruleFor(key);
  }

  /** every hot key of the cluster, hottest first: ours exactly, other hubs' from their statuses */
  #hotRows(): FeedHotRow[] {
    return clusterHotRows(this.#source).map((r) => {
      const rule = this.#ruleOf(r.app, r.key);
      const row: FeedHotRow = {
        app: r.app,
        key: r.key,
        qps: r.qps,
        threshold: r.threshold,
        windowMs: rule?.windowMs ?? RULE_DEFAULTS.windowMs,
        since: r.since,
        hub: r.hub,
        instances: r.instances,
        ...(r.localPct === undefined ? {} : { localPct: r.localPct }),
        ...(r.loadsPerSec === undefined ? {} : { loadsPerSec: r.loadsPerSec }),
      };
      if (rule?.kind === 'write' || rule?.kind === 'any') row.kind = rule.kind;
      return row;
    });
  }

  #hubs(rows: readonly FeedHotRow[]): FeedHub[] {
    const hotByHub = new Map<string, number>();
    for (const r of rows) hotByHub.set(r.hub, (hotByHub.get(r.hub) ?? 0) + 1);
    return this.#source.coordinator
      .statuses()
      .slice(0, MAX_FEED_HUBS)
      .map((s) => ({
        id: s.id,
        url: s.url,
        startedAt: s.startedAt,
        ingestRate: s.ingestRate,
        connections: s.connections,
        heapUsed: s.heapUsed,
        rss: s.rss,
        redis: s.redis,
        hotCount: hotByHub.get(s.id) ?? 0,
        instanceCount:
          s.id === this.#source.id
            ? this.#source.instanceRows(undefined, this.#opts.maxInstances).length
            : s.instanceRows.length,
        updatedAt: s.updatedAt,
      }));
  }

  #instances(): FeedInstance[] {
    return clusterInstanceRows(this.#source, undefined, this.#opts.maxInstances).map((i) => ({
      app: i.app,
      instance: i.instance,
      host: i.host,
      sdk: i.sdk,
      hub: i.hub,
      lastReport: i.lastReport,
      connectedAt: i.connectedAt,
    }));
  }

  #apps(): string[] {
    return [...new Set([...this.#source.coordinator.apps(), ...this.#source.activeApps()])].sort().slice(0, 10_000);
  }

  /**
   * What the page lacks or holds stale, within the frame's row and byte budget. Order: removals,
   * then rows the page does not have (hottest first), then changed rows least recently sent first,
   * so that when more rows change per round than fit in a frame every row still gets refreshed
   * in turn (hottest-first alone would starve the bottom of the table).
   */
  #diff(sub: Subscriber, rows: readonly FeedHotRow[]): { hot: FeedHotRow[]; gone: { app: string; key: string }[] } {
    const max = this.#opts.maxRowsPerFrame;
    const round = this.#round;
    let budget = FRAME_BYTE_BUDGET;
    const current = new Set<string>();
    const fresh: [string, FeedHotRow][] = [];
    const stale: [string, FeedHotRow, number][] = [];
    for (const row of rows) {
      const id = rowId(row.app, row.key);
      current.add(id);
      const before = sub.sent.get(id);
      if (before === undefined) fresh.push([id, row]);
      else if (changed(before.row, row)) stale.push([id, row, before.round]);
    }
    const gone: { app: string; key: string }[] = [];
    for (const [id, { row }] of sub.sent) {
      if (current.has(id)) continue;
      if (gone.length >= max || budget <= 0) break;
      gone.push({ app: row.app, key: row.key });
      sub.sent.delete(id);
      budget -= ROW_OVERHEAD_BYTES + 3 * (row.key.length + row.app.length);
    }
    stale.sort((a, b) => a[2] - b[2] || b[1].qps - a[1].qps);
    const hot: FeedHotRow[] = [];
    for (const [id, row] of [...fresh, ...stale]) {
      if (hot.length >= max || budget <= 0) break;
      hot.push(row);
      sub.sent.set(id, { row, round });
      budget -= ROW_OVERHEAD_BYTES + 3 * (row.key.length + row.app.length + row.hub.length);
    }
    return { hot, gone };
  }

  #send(sub: Subscriber, bytes: Uint8Array): void {
    try {
      sub.peer.send(bytes);
      this.stats.framesSent++;
      this.stats.bytesSent += bytes.byteLength;
    } catch (err) {
      this.#opts.logger.warn({ evt: 'feed_send_failed', err }, 'live feed send failed');
      sub.onClose();
    }
  }

  #sendSnapshot(sub: Subscriber): void {
    const rows = this.#hotRows();
    const { hot } = this.#diff(sub, rows);
    const apps = this.#apps();
    sub.appsSent = apps.join('\u0000');
    const events = this.#source.recentEvents(0).slice(-this.#opts.snapshotEvents).map(toFeedEvent);
    this.#send(
      sub,
      encodeFeed({
        t: MsgType.FeedSnapshot,
        hub: this.#source.id,
        at: this.#opts.now(),
        apps,
        hot,
        hotTotal: rows.length,
        events,
        hubs: this.#hubs(rows),
        instances: this.#instances(),
      }),
    );
  }

  /** One round of deltas to every live page (runs on the feed's timer; public for tests). */
  tick(): void {
    const round = this.#round++;
    const events = this.#pendingEvents;
    this.#pendingEvents = [];
    const live = [...this.#subscribers].filter((s) => s.state === SubscriberState.Live);
    if (live.length === 0) return;
    const rows = this.#hotRows();
    const slow = round % SLOW_EVERY_TICKS === 0;
    const hubs = slow ? this.#hubs(rows) : undefined;
    const instances = slow ? this.#instances() : undefined;
    const apps = slow ? this.#apps() : undefined;
    const appsKey = apps?.join('\u0000');
    for (const sub of live) {
      sub.queueEvents(sub.skipEvents > 0 ? events.slice(sub.skipEvents) : events, this.#opts.maxEventsQueued);
      sub.skipEvents = 0;
      const buffered = sub.peer.bufferedAmount;
      if (buffered > this.#opts.maxBufferBytes) {
        this.stats.slowDropped++;
        sub.fail(
          new ProtocolError(
            ErrorCode.SlowConsumer,
            `the page reads too slowly (${buffered} bytes unsent)`,
            CloseCode.SlowConsumer,
          ),
        );
        continue;
      }
      if (buffered > this.#opts.softBufferBytes) {
        // skip this round; the diff against `sent` catches the page up once it drains
        this.stats.skippedTicks++;
        continue;
      }
      const { hot, gone } = this.#diff(sub, rows);
      const delta: FeedDelta = {
        t: MsgType.FeedDelta,
        at: this.#opts.now(),
        hot,
        gone,
        hotTotal: rows.length,
        events: sub.events,
      };
      sub.events = [];
      if (hubs) delta.hubs = hubs;
      if (instances) delta.instances = instances;
      if (apps && appsKey !== sub.appsSent) {
        delta.apps = apps;
        sub.appsSent = appsKey!;
      }
      this.#send(sub, encodeFeed(delta));
    }
  }
}
