/**
 * The hub's decisions without the network: apps, sessions, aggregation, broadcasts, invalidation
 * acks, Config/Members fan-out, periodic status. The socket adapter feeds it sessions; the HTTP API
 * reads and commands it. Talks to the rest of the cluster only through the Coordinator.
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { Ownership } from '@hotkey/sdk/ownership';
import {
  CloseCode,
  encode,
  MAX_FRAME_BYTES,
  MsgType,
  PROTOCOL_VERSION,
  type HotEntry,
  type Hello,
  type InvalidateRequest,
  type Member,
  type Report,
} from '@hotkey/sdk/protocol';
import { localThreshold, type Rule } from '@hotkey/sdk/rules';
import { Aggregator, reporterBit, type DemoteReason } from './aggregator.ts';
import { tokenMatches } from '../server/auth.ts';
import { Broadcaster } from './broadcaster.ts';
import { isValidAppName } from '../server/config.ts';
import type { Coordinator, HubEvent, HubStatus } from '../cluster/coordinator.ts';
import { InvalidationTracker } from './invalidations.ts';
import { LocalCoordinator } from '../cluster/local-coordinator.ts';
import { Metrics, type Gauges } from '../http/metrics.ts';
import type { Logger } from '../server/logger.ts';
import type { HubTunables } from '../server/options.ts';
import { closeReason, type Peer } from './peer.ts';
import { QpsHistory, type QpsPoint, type QpsSample } from './qps-history.ts';
import { Session, SessionState, type SessionHost } from '../server/session.ts';

/** A hot key as the API and status show it. */
export interface HotKeyRow {
  app: string;
  key: string;
  qps: number;
  threshold: number;
  /** ms since epoch of the promotion */
  since: number;
  /** distinct SDK instances reporting it: an estimate (the aggregator's reporter bits), not a count of rows */
  instances: number;
  /** id of the hub that owns (decides) the key */
  hub: string;
  /** ms the promotion lives without renewal (0 when another hub's status reported the row) */
  ttlMs: number;
}

/** One SDK connection, on this hub or (from its status) another. */
export interface InstanceRow {
  app: string;
  instance: string;
  host: string;
  sdk: string;
  lastReport: number;
  connectedAt: number;
  hub: string;
}

/** One app on this hub, in numbers (GET /api/apps). */
export interface AppSummary {
  /** distinct SDK instances connected */
  instanceCount: number;
  /** SDK connections (an instance may hold more than one) */
  connections: number;
  keysTracked: number;
  hotCount: number;
  /** the app's last broadcast seq */
  seq: number;
}

interface AppState {
  name: string;
  aggregator: Aggregator;
  broadcaster: Broadcaster;
  sessions: Set<Session>;
  sessionByPeer: Map<Peer, Session>;
  /** instance id -> how many sessions that SDK instance has open on this hub */
  sessionsByInstance: Map<string, number>;
  invalidations: InvalidationTracker;
  /** sessions connected now, shared by consecutive invalidations until one joins or leaves */
  waiters: Session[] | undefined;
  configTimer: NodeJS.Timeout | undefined;
  lastConfigAt: number;
}

export interface HubCoreOptions {
  id: string;
  coordinator: Coordinator;
  tunables: HubTunables;
  now: () => number;
  /** every event of this hub's decisions goes here, as fields (`{ evt: 'promote', app, key, qps }`) */
  logger: Logger;
  /** the hub's metrics @default a Metrics with no cap on app labels */
  metrics?: Metrics;
  /** the hot keys' recent QPS @default a QpsHistory with its defaults (5 min at 1 s, 2000 keys) */
  qpsHistory?: QpsHistory;
}

const STATUS_HOT_MAX = 100;
const STATUS_INSTANCES_MAX = 200;

function refuse(code: ErrorCode, closeCode: number, message: string): never {
  throw new ProtocolError(code, message, closeCode);
}

export class HubCore implements SessionHost {
  readonly id: string;
  readonly metrics: Metrics;
  readonly startedAt: number;
  readonly coordinator: Coordinator;
  readonly tunables: HubTunables;
  /** recent QPS of the hot keys this hub owns (GET /api/apps/:app/keys/qps) */
  readonly qpsHistory: QpsHistory;
  url = '';
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #apps = new Map<string, AppState>();
  readonly #awaitingHello = new Set<Session>();
  #connections = 0;
  #recent: HubEvent[] = [];
  #epoch: number;
  #members: Member[];
  #lastStatusAt: number;
  #lastStatusRecords = 0;
  #ingestRate = 0;
  #closing = false;
  /** which keys this hub owns; undefined while it is the only member */
  #accept: ((key: string) => boolean) | undefined;
  #ownership: Ownership;

  constructor(options: HubCoreOptions) {
    this.id = options.id;
    this.coordinator = options.coordinator;
    this.tunables = options.tunables;
    this.#now = options.now;
    this.#logger = options.logger;
    this.metrics = options.metrics ?? new Metrics();
    this.startedAt = this.#now();
    this.#lastStatusAt = this.startedAt;
    const membership = this.coordinator.members();
    this.#epoch = membership.epoch;
    this.#members = membership.members;
    this.qpsHistory = options.qpsHistory ?? new QpsHistory();
    const initial = new Ownership(membership.members.map((member) => member.id));
    this.#ownership = initial;
    if (initial.ids.length > 1) this.#accept = (key) => initial.owner(key) === this.id;
    this.coordinator.onRules((app, rules) => this.#guard('rules change', () => this.#rulesChanged(app, rules)));
    this.coordinator.onMembers((epoch, members) => this.#guard('members change', () => this.#membersChanged(epoch, members)));
    this.coordinator.onEvent((event) => {
      this.#recent.push(event);
      if (this.#recent.length > this.tunables.recentEvents * 2) this.#recent = this.#recent.slice(-this.tunables.recentEvents);
    });
  }

  /** true when the hub is part of a multi-hub cluster (SDKs are sent 4010 on leave) */
  get clustered(): boolean {
    return !(this.coordinator instanceof LocalCoordinator);
  }

  // ---- sessions ----

  /** A new connection: starts its hello deadline. */
  attach(peer: Peer): Session {
    const session = new Session(peer, this, this.#now());
    this.metrics.connectionsAccepted++;
    if (this.#closing) {
      session.fail(new ProtocolError(ErrorCode.Unavailable, 'hub is shutting down', this.clustered ? CloseCode.Leaving : CloseCode.GoingAway));
      return session;
    }
    this.#awaitingHello.add(session);
    return session;
  }

  hello(session: Session, hello: Hello): void {
    if (hello.v !== PROTOCOL_VERSION) {
      refuse(ErrorCode.Version, CloseCode.Version, `protocol version ${hello.v} is not supported; this hub speaks version ${PROTOCOL_VERSION}`);
    }
    if (hello.role === 'dashboard') {
      // pages get the live feed on LIVE_PATH (http/dashboard-feed.ts), not on the SDK endpoint
      refuse(ErrorCode.Protocol, CloseCode.Protocol, 'dashboard feed not available');
    }
    const auth = isValidAppName(hello.app) ? this.coordinator.app(hello.app) : undefined;
    if (auth === undefined) refuse(ErrorCode.UnknownApp, CloseCode.UnknownApp, `unknown app "${hello.app.slice(0, 64)}"`);
    if (auth.token !== undefined && !tokenMatches(hello.token, auth.token)) {
      refuse(ErrorCode.Auth, CloseCode.Auth, hello.token === undefined ? `app "${hello.app}" requires a token` : `wrong token for app "${hello.app}"`);
    }
    const app = this.#app(hello.app);
    if (app === undefined) refuse(ErrorCode.UnknownApp, CloseCode.UnknownApp, `this hub keeps state for at most ${this.tunables.maxApps} apps`);
    if (app.sessions.size >= this.tunables.maxSessionsPerApp) {
      refuse(ErrorCode.OverCapacity, CloseCode.OverCapacity, `app "${hello.app}" has ${app.sessions.size} connections, the most this hub accepts`);
    }

    this.#awaitingHello.delete(session);
    session.state = SessionState.Open;
    session.app = hello.app;
    session.instance = hello.instance;
    session.host = hello.host ?? '';
    session.sdk = hello.sdk;
    session.reporter = reporterBit(hello.instance);
    session.appliedSeq = app.broadcaster.seq;
    app.sessions.add(session);
    app.sessionByPeer.set(session.peer, session);
    app.waiters = undefined;
    const instanceCountBefore = app.sessionsByInstance.size;
    app.sessionsByInstance.set(hello.instance, (app.sessionsByInstance.get(hello.instance) ?? 0) + 1);
    this.#connections++;

    const rules = app.aggregator.rules;
    const instanceCount = app.sessionsByInstance.size;
    app.broadcaster.peers.add(session.peer);
    app.broadcaster.sendTo(
      session.peer,
      encode({
        t: MsgType.Welcome,
        v: PROTOCOL_VERSION,
        hub: this.id,
        epoch: this.#epoch,
        members: this.#members,
        rules: [...rules],
        local: rules.map((r) => localThreshold(r, instanceCount, this.tunables.localThresholdFraction)),
        instances: instanceCount,
        seq: app.broadcaster.seq,
      }),
    );
    this.#sendSnapshot(app, session);
    if (app.sessionsByInstance.size !== instanceCountBefore) this.#scheduleConfig(app);
  }

  /** @param [bytes] the frame's size, for the report frame size histogram */
  report(session: Session, report: Report, bytes?: number): void {
    const app = this.#apps.get(session.app);
    if (app === undefined) return;
    const now = this.#now();
    session.lastReport = now;
    this.metrics.reports++;
    this.metrics.records += report.keys.length;
    if (bytes !== undefined) this.metrics.reportFrame(app.name, bytes);
    app.aggregator.ingest(report.keys, report.counts, session.reporter, now);
  }

  invalidate(session: Session, request: InvalidateRequest): void {
    const app = this.#apps.get(session.app);
    if (app === undefined) return;
    const seq = this.#broadcastInvalidate(app, request.key, false);
    app.waiters ??= [...app.sessions];
    const started = this.#now();
    app.invalidations.track(seq, app.waiters, started, (timedOut) => {
      if (timedOut) this.metrics.invalidationTimeouts++;
      this.metrics.invalidationAcked(app.name, this.#now() - started);
      if (!session.closed) app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Ack, id: request.id, seq }));
    });
  }

  applied(session: Session, seq: number): void {
    const app = this.#apps.get(session.app);
    if (app === undefined) return;
    if (seq > app.broadcaster.seq) {
      refuse(ErrorCode.Protocol, CloseCode.Protocol, `Applied seq ${seq} is ahead of the last broadcast seq ${app.broadcaster.seq}`);
    }
    if (seq > session.appliedSeq) {
      session.appliedSeq = seq;
      app.invalidations.settle();
    }
  }

  resync(session: Session): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#sendSnapshot(app, session);
  }

  closed(session: Session): void {
    this.#awaitingHello.delete(session);
    const app = this.#apps.get(session.app);
    if (app === undefined || !app.sessions.delete(session)) return;
    this.#connections--;
    app.sessionByPeer.delete(session.peer);
    app.broadcaster.peers.delete(session.peer);
    app.waiters = undefined;
    const sessionsLeft = (app.sessionsByInstance.get(session.instance) ?? 1) - 1;
    if (sessionsLeft > 0) app.sessionsByInstance.set(session.instance, sessionsLeft);
    else {
      app.sessionsByInstance.delete(session.instance);
      this.#scheduleConfig(app);
    }
    app.invalidations.settle();
  }

  faulted(session: Session, err: unknown): void {
    this.metrics.protocolErrors++;
    const who = { session: session.id, app: session.app || undefined, instance: session.instance || undefined };
    if (err instanceof ProtocolError) this.#logger.warn({ evt: 'refused', ...who, code: err.code, close: err.closeCode, reason: err.message }, 'connection refused');
    else this.#logger.error({ evt: 'session_error', ...who, err }, 'internal error in a session');
  }

  // ---- commands from the API ----

  /** Marks a key hot by hand. Returns false when the app is unknown or no rule matches the key. */
  promote(appName: string, key: string): boolean {
    const app = this.#app(appName);
    return app !== undefined && app.aggregator.promote(key, this.#now());
  }

  /** Broadcasts an invalidation without waiting for acks; returns the seq, or undefined for an unknown app. */
  invalidateKey(appName: string, key: string): number | undefined {
    const app = this.#app(appName);
    return app === undefined ? undefined : this.#broadcastInvalidate(app, key, true);
  }

  // ---- reads for the API and status ----

  get connections(): number {
    return this.#connections;
  }

  /** apps with state on this hub (connected SDKs or tracked keys) */
  activeApps(): string[] {
    return [...this.#apps.keys()];
  }

  appSummary(appName: string): AppSummary | undefined {
    const app = this.#apps.get(appName);
    if (app === undefined) return undefined;
    const stats = app.aggregator.stats;
    return { instanceCount: app.sessionsByInstance.size, connections: app.sessions.size, keysTracked: stats.keys, hotCount: stats.hot, seq: app.broadcaster.seq };
  }

  /** hot keys this hub owns, highest QPS first */
  hotKeys(appName?: string): HotKeyRow[] {
    const now = this.#now();
    const rows: HotKeyRow[] = [];
    for (const app of this.#apps.values()) {
      if (appName !== undefined && app.name !== appName) continue;
      for (const v of app.aggregator.hot(now)) {
        rows.push({ app: app.name, key: v.key, qps: v.qps, threshold: v.threshold, since: v.since, instances: v.instances, hub: this.id, ttlMs: v.ttlMs });
      }
    }
    return rows.sort((a, b) => b.qps - a.qps);
  }

  /** SDK connections to this hub, at most `limit` */
  instanceRows(appName?: string, limit = Infinity): InstanceRow[] {
    const rows: InstanceRow[] = [];
    for (const app of this.#apps.values()) {
      if (appName !== undefined && app.name !== appName) continue;
      for (const session of app.sessions) {
        if (rows.length >= limit) return rows;
        rows.push({ app: app.name, instance: session.instance, host: session.host, sdk: session.sdk, lastReport: session.lastReport, connectedAt: session.connectedAt, hub: this.id });
      }
    }
    return rows;
  }

  /** The member that owns (decides, and keeps the QPS history of) `key`; undefined with no members. */
  ownerOf(key: string): Member | undefined {
    const id = this.#ownership.owner(key);
    return id === undefined ? undefined : this.#members.find((m) => m.id === id);
  }

  /** The key's recent cluster QPS as this hub sampled it (empty unless it owned the key while hot). */
  qpsPoints(appName: string, key: string): QpsPoint[] {
    return this.qpsHistory.points(appName, key);
  }

  /** events seen by this hub (its own and, in a cluster, every other hub's), oldest first */
  recentEvents(since: number): HubEvent[] {
    const out = this.#recent.filter((e) => e.at >= since);
    return out.slice(-this.tunables.recentEvents);
  }

  gauges(): Gauges {
    let keysTracked = 0;
    let hotKeys = 0;
    let dropped = 0;
    let evicted = 0;
    let ignored = 0;
    for (const app of this.#apps.values()) {
      const stats = app.aggregator.stats;
      keysTracked += stats.keys;
      hotKeys += stats.hot;
      dropped += stats.dropped;
      evicted += stats.evicted;
      ignored += stats.ignored;
    }
    const mem = process.memoryUsage();
    return { connections: this.#connections, apps: this.#apps.size, keysTracked, hotKeys, dropped, evicted, ignored, heapUsed: mem.heapUsed, rss: mem.rss, ingestRate: this.#ingestRate, qpsHistoryKeys: this.qpsHistory.size };
  }

  // ---- time ----

  /** Demotions, expiries, hello deadlines, ack timeouts, status. Called every `tickMs`. */
  tick(): void {
    const now = this.#now();
    for (const session of this.#awaitingHello) {
      if (now - session.connectedAt >= this.tunables.helloTimeoutMs) session.helloTimedOut(this.tunables.helloTimeoutMs);
    }
    for (const app of this.#apps.values()) {
      this.#guard(`tick of app ${app.name}`, () => {
        app.aggregator.tick(now);
        app.invalidations.expire(now);
        if (app.sessions.size === 0 && app.aggregator.stats.keys === 0 && app.invalidations.pending === 0) this.#dropApp(app);
      });
    }
    if (this.qpsHistory.due(now)) this.#guard('qps history', () => this.#sampleHistory(now));
    if (now - this.#lastStatusAt >= this.tunables.statusIntervalMs) this.#guard('status', () => this.publishStatus(now));
  }

  publishStatus(now = this.#now()): void {
    const elapsed = Math.max(1, now - this.#lastStatusAt);
    this.#ingestRate = Math.round(((this.metrics.records - this.#lastStatusRecords) * 1000) / elapsed);
    this.#lastStatusRecords = this.metrics.records;
    this.#lastStatusAt = now;
    const mem = process.memoryUsage();
    const health = this.coordinator.health();
    const status: HubStatus = {
      id: this.id,
      url: this.url,
      startedAt: this.startedAt,
      ingestRate: this.#ingestRate,
      connections: this.#connections,
      heapUsed: mem.heapUsed,
      rss: mem.rss,
      redis: health.state === 'degraded' ? 'down' : this.clustered ? 'ok' : 'none',
      hotKeys: this.hotKeys()
        .slice(0, STATUS_HOT_MAX)
        .map(({ app, key, qps, since, instances, threshold }) => ({ app, key, qps, since, instances, threshold })),
      instanceRows: this.instanceRows(undefined, STATUS_INSTANCES_MAX).map(({ hub: _hub, ...row }) => row),
      updatedAt: now,
    };
    this.coordinator.publishStatus(status);
  }

  /** Closes every connection with `code` and acks pending invalidations. */
  shutdown(code: number, reason: string): void {
    this.#closing = true;
    for (const session of [...this.#awaitingHello]) this.#closePeer(session, code, reason);
    for (const app of this.#apps.values()) {
      if (app.configTimer !== undefined) clearTimeout(app.configTimer);
      app.invalidations.flush();
      for (const session of [...app.sessions]) this.#closePeer(session, code, reason);
    }
  }

  // ---- internals ----

  #sampleHistory(now: number): void {
    const hot: QpsSample[] = [];
    for (const app of this.#apps.values()) for (const v of app.aggregator.hot(now)) hot.push({ app: app.name, key: v.key, qps: v.qps });
    this.qpsHistory.sample(now, hot, (appName, key) => this.#coldQps(appName, key, now));
  }

  /** QPS of a key that is no longer hot: from its window while the aggregator still tracks it, else 0. */
  #coldQps(appName: string, key: string, now: number): number {
    return this.#apps.get(appName)?.aggregator.qps(key, now) ?? 0;
  }

  #closePeer(session: Session, code: number, reason: string): void {
    session.onClose();
    try {
      session.peer.close(code, closeReason(reason));
    } catch {
      // already closed
    }
  }

  #guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#logger.error({ evt: 'internal_error', what, err }, `${what} failed`);
    }
  }

  /** The app's state, created on first use; undefined for unknown apps or past `maxApps`. */
  #app(name: string): AppState | undefined {
    const existing = this.#apps.get(name);
    if (existing !== undefined) return existing;
    if (!isValidAppName(name) || this.coordinator.app(name) === undefined || this.#apps.size >= this.tunables.maxApps) return undefined;
    const broadcaster = new Broadcaster({
      maxBufferedBytes: this.tunables.maxBufferedBytes,
      onSlowConsumer: (peer) => {
        this.metrics.slowConsumers++;
        this.#logger.warn({ evt: 'slow_consumer', app: name, session: app.sessionByPeer.get(peer)?.id, close: CloseCode.SlowConsumer }, 'socket closed: send buffer full');
        this.#cutOff(app, peer);
      },
      onSendError: (peer, err) => {
        this.#logger.error({ evt: 'send_failed', app: name, err }, 'send failed, closing the socket');
        this.#cutOff(app, peer);
      },
    });
    const app: AppState = {
      name,
      broadcaster,
      aggregator: new Aggregator({
        rules: this.coordinator.rules(name),
        maxKeys: this.tunables.maxKeysPerApp,
        initialCapacity: 64,
        accept: this.#accept,
        listener: {
          promote: (key, rule, qps, latencyMs, manual) => this.#onPromote(app, key, rule, qps, latencyMs, manual),
          demote: (key, qps, reason) => this.#onDemote(app, key, qps, reason),
        },
      }),
      sessions: new Set(),
      sessionByPeer: new Map(),
      sessionsByInstance: new Map(),
      invalidations: new InvalidationTracker({ timeoutMs: this.tunables.invalidateAckTimeoutMs }),
      waiters: undefined,
      configTimer: undefined,
      lastConfigAt: 0,
    };
    this.#apps.set(name, app);
    return app;
  }

  /** The broadcaster gave up on a socket: the session leaves the app now, not when the close completes. */
  #cutOff(app: AppState, peer: Peer): void {
    const session = app.sessionByPeer.get(peer);
    if (session === undefined) return;
    session.state = SessionState.Closed;
    this.closed(session);
  }

  #dropApp(app: AppState): void {
    if (app.configTimer !== undefined) clearTimeout(app.configTimer);
    this.#apps.delete(app.name);
  }

  #onPromote(app: AppState, key: string, rule: Rule, qps: number, latencyMs: number | undefined, manual: boolean): void {
    const at = this.#now();
    const started = performance.now();
    app.broadcaster.broadcast({ t: MsgType.Promote, key, qps, hotMs: rule.hotMs, cacheTtlMs: rule.cacheTtlMs, cache: rule.cache, at });
    const fanoutMs = performance.now() - started;
    this.metrics.promotions++;
    this.metrics.promoted(app.name, fanoutMs, latencyMs);
    this.#logger.info({ evt: 'promote', app: app.name, key, qps, threshold: rule.threshold, rule: rule.match, latencyMs, fanoutMs: Math.round(fanoutMs * 1000) / 1000, sockets: app.broadcaster.peers.size, manual: manual || undefined }, 'key promoted');
    const event: HubEvent = { type: 'promote', app: app.name, key, qps, at, hub: this.id };
    if (latencyMs !== undefined) event.latencyMs = latencyMs;
    if (manual) event.manual = true;
    this.#publish(event);
  }

  #onDemote(app: AppState, key: string, qps: number, reason: DemoteReason): void {
    app.broadcaster.broadcast({ t: MsgType.Demote, key });
    this.metrics.demotions++;
    this.#logger.info({ evt: 'demote', app: app.name, key, qps, reason }, 'key demoted');
    this.#publish({ type: 'demote', app: app.name, key, qps, at: this.#now(), hub: this.id, reason });
  }

  #broadcastInvalidate(app: AppState, key: string, manual: boolean): number {
    const seq = app.broadcaster.broadcast({ t: MsgType.Invalidate, key });
    this.metrics.invalidations++;
    const event: HubEvent = { type: 'invalidate', app: app.name, key, qps: 0, at: this.#now(), hub: this.id };
    if (manual) event.manual = true;
    this.#publish(event);
    return seq;
  }

  #publish(event: HubEvent): void {
    try {
      this.coordinator.publishEvent(event);
    } catch (err) {
      this.#logger.error({ evt: 'publish_failed', type: event.type, app: event.app, err }, 'publishing an event failed');
    }
  }

  /**
   * The hot set in one frame. A frame must stay under MAX_FRAME_BYTES (the SDK refuses larger ones),
   * so a huge hot set is cut to its highest-QPS keys: a key left out is merely served by the loader
   * until its next Promote, which is safe.
   */
  #sendSnapshot(app: AppState, session: Session): void {
    const now = this.#now();
    const views = app.aggregator.hot(now).sort((a, b) => b.qps - a.qps);
    const hot: HotEntry[] = [];
    let bytes = 64;
    for (const v of views) {
      bytes += 3 * v.key.length + 80; // worst-case UTF-8 key + field names and numbers
      if (bytes > MAX_FRAME_BYTES) break;
      hot.push({ key: v.key, ttlMs: Math.ceil(v.ttlMs), cacheTtlMs: v.rule.cacheTtlMs, cache: v.rule.cache, qps: v.qps });
    }
    app.broadcaster.sendTo(session.peer, encode({ t: MsgType.Snapshot, seq: app.broadcaster.seq, hot }));
  }

  /** Config to every SDK of the app, at most once per `configDebounceMs`. */
  #scheduleConfig(app: AppState): void {
    if (app.configTimer !== undefined || this.#closing) return;
    const delay = Math.max(0, app.lastConfigAt + this.tunables.configDebounceMs - this.#now());
    app.configTimer = setTimeout(() => {
      app.configTimer = undefined;
      app.lastConfigAt = this.#now();
      this.#guard(`config of app ${app.name}`, () => this.#sendConfig(app));
    }, delay);
    app.configTimer.unref();
  }

  #sendConfig(app: AppState): void {
    const rules = app.aggregator.rules;
    const instanceCount = app.sessionsByInstance.size;
    app.broadcaster.sendAll({
      t: MsgType.Config,
      rules: [...rules],
      local: rules.map((r) => localThreshold(r, instanceCount, this.tunables.localThresholdFraction)),
      instances: instanceCount,
    });
  }

  #rulesChanged(appName: string, rules: Rule[]): void {
    this.#logger.info({ evt: 'rules', app: appName, rules: rules.length, matches: rules.map((r) => r.match) }, 'rules changed');
    const app = this.#apps.get(appName);
    if (app === undefined) return;
    app.aggregator.setRules(rules, this.#now());
    this.#scheduleConfig(app);
  }

  #membersChanged(epoch: number, members: Member[]): void {
    this.#logger.info({ evt: 'members', epoch, members: members.map((m) => m.id), joined: members.filter((m) => !this.#members.some((o) => o.id === m.id)).map((m) => m.id), left: this.#members.filter((o) => !members.some((m) => m.id === o.id)).map((o) => o.id) }, 'cluster members changed');
    this.#epoch = epoch;
    this.#members = members;
    const ownership = new Ownership(members.map((m) => m.id));
    this.#ownership = ownership;
    const bytes = encode({ t: MsgType.Members, epoch, members });
    // keys owned by another hub are that hub's to decide; SDKs resync on the new epoch
    this.#accept = ownership.ids.length > 1 ? (key) => ownership.owner(key) === this.id : undefined;
    for (const app of this.#apps.values()) {
      app.aggregator.setAccept(this.#accept);
      for (const peer of app.broadcaster.peers) app.broadcaster.sendTo(peer, bytes);
    }
  }
}
