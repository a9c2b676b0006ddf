/**
 * The dashboard's live feed on `/live`. A page opens a WebSocket and sends Hello (role
 * 'dashboard', app '*', token = dashboard token or ''); the hub answers FeedSnapshot, then every
 * `intervalMs` a FeedDelta with only what changed for that page: hot rows whose values moved,
 * rows that left, new events, and (less often) hub statuses, SDK instances and the app list.
 *
 * The hot set is gathered once per tick for every page (feed-view.ts: this hub's own rows plus the
 * rows every other hub shares in its status) and diffed per page against what that page was last sent, at
 * most `maxRowsPerFrame` rows per frame, hottest first, so 10 000 hot keys cost a few frames after
 * connect and then only the rows whose QPS moved. A page that reads too slowly is skipped while
 * its socket buffer is over `softBufferBytes` and dropped (close 4008) over `maxBufferBytes`:
 * a slow dashboard never holds memory in the hub.
 */
import { AuthError, CapacityError, ErrorCode, ProtocolError } from '@hotkey/sdk';
import { closeCodeOf } from '@hotkey/sdk/errors';
import { CloseCode, decodeClientMessage, errorFrame, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { encodeFeed, type FeedDelta, type FeedEvent } from '@hotkey/sdk/feed-protocol';
import type { HubEvent } from '../core/coordinator.ts';
import { closeReason, type Peer } from '../core/peer.ts';
import { tokenMatches } from '../core/membership/auth.ts';
import { DEFAULT_TUNABLES } from '../core/tunables.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import type { ClusterSource } from './cluster-view.ts';
import type { HttpTokens } from './http-auth.ts';
import { diffRows, FeedView, toFeedEvent, type SentRow } from './feed-view.ts';

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
  /** with a dashboard token, Hello must carry it (or the admin token); read at every Hello (a reload may change them) */
  tokens?: Readonly<HttpTokens>;
  intervalMs?: number;
  maxRowsPerFrame?: number;
  maxDashboards?: number;
  softBufferBytes?: number;
  maxBufferBytes?: number;
  helloTimeoutMs?: number;
  maxEventsQueued?: number;
  maxInstances?: number;
  snapshotEvents?: number;
  /** wall clock in ms, for event times @default Date.now */
  wallNow?: () => number;
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

/** statuses and instances change slowly: refresh them every this many ticks */
const SLOW_EVERY_TICKS = 4;

const SubscriberState = { AwaitingHello: 0, Live: 1, Closed: 2 } as const;
type SubscriberState = (typeof SubscriberState)[keyof typeof SubscriberState];

class Subscriber implements FeedConnection {
  state: SubscriberState = SubscriberState.AwaitingHello;
  /** what the page holds: the rows it was last sent, and the round each was sent in */
  readonly sent = new Map<string, SentRow>();
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
  readonly #opts: Required<Omit<DashboardFeedOptions, 'tokens' | 'source'>>;
  readonly #tokens: Readonly<HttpTokens>;
  readonly #subscribers = new Set<Subscriber>();
  #pendingEvents: FeedEvent[] = [];
  #timer: ReturnType<typeof setInterval> | undefined;
  /** rounds sent so far: a row's `round` in `sent` says how long ago the page got it */
  #round = 0;
  readonly #view: FeedView;
  #closed = false;
  /** counters for /metrics and tests */
  readonly stats = { framesSent: 0, bytesSent: 0, slowDropped: 0, skippedTicks: 0, refused: 0 };

  constructor(options: DashboardFeedOptions) {
    this.#source = options.source;
    this.#tokens = options.tokens ?? { adminToken: undefined, dashboardToken: undefined };
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
      wallNow: options.wallNow ?? Date.now,
      logger: options.logger ?? silentLogger,
    };
    this.#view = new FeedView(this.#source, this.#opts.maxInstances);
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
    const { dashboardToken, adminToken } = this.#tokens;
    if (dashboardToken !== undefined) {
      const ok =
        tokenMatches(token || undefined, dashboardToken) ||
        (adminToken !== undefined && tokenMatches(token || undefined, adminToken));
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
    const rows = this.#view.hotRows();
    const { hot } = diffRows(sub.sent, rows, this.#opts.maxRowsPerFrame, this.#round);
    const apps = this.#view.apps();
    sub.appsSent = apps.join('\u0000');
    const events = this.#source.recentEvents(0).slice(-this.#opts.snapshotEvents).map(toFeedEvent);
    this.#send(
      sub,
      encodeFeed({
        t: MsgType.FeedSnapshot,
        hub: this.#source.id,
        at: this.#opts.wallNow(),
        apps,
        hot,
        hotTotal: rows.length,
        events,
        hubs: this.#view.hubs(rows),
        instances: this.#view.instances(),
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
    const rows = this.#view.hotRows();
    const slow = round % SLOW_EVERY_TICKS === 0;
    const hubs = slow ? this.#view.hubs(rows) : undefined;
    const instances = slow ? this.#view.instances() : undefined;
    const apps = slow ? this.#view.apps() : undefined;
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
      const { hot, gone } = diffRows(sub.sent, rows, this.#opts.maxRowsPerFrame, round);
      const delta: FeedDelta = {
        t: MsgType.FeedDelta,
        at: this.#opts.wallNow(),
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
