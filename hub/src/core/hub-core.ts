/**
 * The hub without the network, and the façade the server and the HTTP API use: the session
 * protocol (Hello, reports, resync), the tick, Members fan-out, periodic status, the API's reads
 * and commands. Per-app state, admission and Config fan-out live in apps.ts; the frames it sends
 * in frames.ts; promotions and demotions become broadcasts and events in announce.ts;
 * invalidations and their acks in invalidation-router.ts; the gauges in hub-metrics.ts. Talks
 * to the rest of the cluster only through the Coordinator.
 */
import { ErrorCode, ProtocolError, closeCodeOf } from '@hotkey/sdk';
import { Ownership } from '@hotkey/sdk/ownership';
import {
  CloseCode,
  describeRange,
  negotiateVersion,
  offeredRange,
  OLDEST_CLIENT_VERSION,
  PROTOCOL_VERSION,
  type Hello,
  type InvalidateRequest,
  type Member,
  type Push,
  type Report,
} from '@hotkey/sdk/protocol';
import type { Coordinator, HubEvent, HubStatus } from './coordinator.ts';
import type { Logger } from './logger.ts';
import { reporterBit } from './reporters.ts';
import { admitVersion, isLegacy, refuseFromLegacy } from './legacy-sessions.ts';
import { limitFrames, membersFrame, snapshotFrame, welcomeFrame } from './frames.ts';
import { Announcer } from './announce.ts';
import { Apps, type AppState, type AppSummary, type HotKeyRow, type InstanceRow } from './apps.ts';
import { HubMetrics, protectionCounters, readGauges, type Gauges, type ProtectionCounters } from './hub-metrics.ts';
import { Intake } from './intake.ts';
import { InvalidationBudget } from './invalidation-budget.ts';
import { InvalidationRouter } from './invalidation-router.ts';
import { OwnershipFence } from './ownership-fence.ts';
import { closeReason, type BulkWriter, type Peer } from './peer.ts';
import { QpsHistory, type QpsPoint, type QpsSample } from './qps-history.ts';
import type { ReportFrame } from './report-frame.ts';
import { Session, SessionState, type SessionHost } from './session.ts';
import { TokenBucket } from './token-bucket.ts';
import type { HubTunables } from './tunables.ts';
import { KeyPrivacy } from './key-privacy.ts';

export interface HubCoreOptions {
  id: string;
  coordinator: Coordinator;
  tunables: HubTunables;
  now: () => number;
  /** every event of this hub's decisions goes here, as fields (`{ evt: 'promote', app, key, qps }`) */
  logger: Logger;
  /** the hot keys' recent QPS @default a QpsHistory with its defaults (5 min at 1 s, 2000 keys) */
  qpsHistory?: QpsHistory;
  /** monotonic clock in ms for leases (a wall clock jumping forward would end them early) @default performance.now */
  clock?: () => number;
  /** writes big fan-outs with other threads' help (the socket adapter's FanoutThreads) @default none */
  bulk?: BulkWriter;
  /** how keys are shown outside the core (key-privacy.ts) @default every key plain */
  keyPrivacy?: KeyPrivacy;
}

const STATUS_HOT_MAX = 100;
const STATUS_INSTANCES_MAX = 200;

export class HubCore implements SessionHost {
  readonly id: string;
  readonly metrics = new HubMetrics();
  readonly startedAt: number;
  readonly coordinator: Coordinator;
  readonly tunables: HubTunables;
  /** recent QPS of the hot keys this hub owns (GET /api/apps/:app/keys/qps) */
  readonly qpsHistory: QpsHistory;
  /** the fair scheduler of every SDK connection's frames (intake.ts) */
  readonly intake: Intake;
  /** per-connection InvalidateRequest budgets (invalidation-budget.ts) */
  readonly invalidationBudget: InvalidationBudget;
  /** how keys are shown outside the core: events, logs, the API and the feed (key-privacy.ts) */
  readonly keyPrivacy: KeyPrivacy;
  url = '';
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #apps: Apps;
  readonly #announcer: Announcer;
  readonly #invalidations: InvalidationRouter;
  readonly #awaitingHello = new Set<Session>();
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
  /** acks held across owner changes, hot keys let go of (ownership-fence.ts) */
  readonly #fence: OwnershipFence;

  constructor(options: HubCoreOptions) {
    this.id = options.id;
    this.coordinator = options.coordinator;
    this.tunables = options.tunables;
    this.#now = options.now;
    const clock = options.clock ?? (() => performance.now());
    this.#logger = options.logger;
    this.startedAt = this.#now();
    this.#lastStatusAt = this.startedAt;
    const membership = this.coordinator.members();
    this.#epoch = membership.epoch;
    this.#members = membership.members;
    this.qpsHistory = options.qpsHistory ?? new QpsHistory();
    const initial = new Ownership(membership.members.map((member) => member.id));
    this.#ownership = initial;
    if (initial.ids.length > 1) this.#accept = (key) => initial.owner(key) === this.id;
    this.keyPrivacy = options.keyPrivacy ?? new KeyPrivacy();
    this.#announcer = new Announcer({
      privacy: this.keyPrivacy,
      hubId: this.id,
      coordinator: this.coordinator,
      metrics: this.metrics,
      logger: this.#logger,
      now: this.#now,
    });
    this.#apps = new Apps({
      coordinator: this.coordinator,
      tunables: this.tunables,
      metrics: this.metrics,
      now: this.#now,
      clock,
      // SDKs may hold leases granted by this hub's previous life: wait one out before any ack
      ackNotBefore: clock() + this.tunables.leaseMs,
      logger: this.#logger,
      accept: this.#accept,
      bulk: options.bulk,
      onPromote: (app, key, rule, qps, latencyMs, manual) =>
        this.#announcer.promoted(app, key, rule, qps, latencyMs, manual),
      onDemote: (app, key, qps, reason) => this.#announcer.demoted(app, key, qps, reason),
    });
    this.#fence = new OwnershipFence({ selfId: this.id, leaseMs: this.tunables.leaseMs, clock, initial });
    this.#invalidations = new InvalidationRouter({
      hubId: this.id,
      notBefore: (key, flush) => (flush ? this.#fence.notBeforeAny() : this.#fence.notBefore(key)),
      metrics: this.metrics,
      now: this.#now,
      clock,
      leaseMs: this.tunables.leaseMs,
      publish: (event) => this.#announcer.publish(event),
      maxPushBytes: this.tunables.maxPushBytes,
    });
    const t = this.tunables;
    this.intake = new Intake({
      turnMs: t.intakeTurnMs,
      quantumMs: t.intakeQuantumMs,
      maxQueuedBytes: t.maxQueuedBytesPerConnection,
      maxTotalQueuedBytes: t.maxQueuedBytes,
    });
    this.invalidationBudget = new InvalidationBudget({
      rate: t.invalidateRate,
      burst: t.invalidateBurst,
      maxQueued: t.maxQueuedInvalidations,
      now: this.#now,
      route: (from, request) => {
        const session = from as Session;
        const app = this.#apps.get(session.app);
        if (app !== undefined && !session.closed) this.#invalidations.request(app, session, request);
      },
    });
    this.coordinator.onRules((app, rules) =>
      this.#guard('rules change', () => {
        this.#logger.info(
          { evt: 'rules', app, rules: rules.length, matches: rules.map((r) => r.match) },
          'rules changed',
        );
        this.#apps.rulesChanged(app, rules);
      }),
    );
    this.coordinator.onMembers((epoch, members) =>
      this.#guard('members change', () => this.#membersChanged(epoch, members)),
    );
    this.coordinator.onEvent((event) => {
      this.#recent.push(event);
      if (this.#recent.length > this.tunables.recentEvents * 2)
        this.#recent = this.#recent.slice(-this.tunables.recentEvents);
    });
  }

  /** true when the hub is part of a multi-hub cluster (SDKs are sent 4010 on leave) */
  get clustered(): boolean {
    return this.coordinator.standalone !== true;
  }

  // ---- sessions ----

  /** A new connection: starts its hello deadline. */
  attach(peer: Peer): Session {
    const session = new Session(peer, this, this.#now());
    this.metrics.connectionsAccepted++;
    if (this.#closing) {
      session.fail(
        new ProtocolError(
          ErrorCode.Unavailable,
          'hub is shutting down',
          this.clustered ? CloseCode.Leaving : CloseCode.GoingAway,
        ),
      );
      return session;
    }
    this.#awaitingHello.add(session);
    return session;
  }

  hello(session: Session, hello: Hello): void {
    const version = negotiateVersion(hello, OLDEST_CLIENT_VERSION, PROTOCOL_VERSION);
    if (version === undefined) {
      const [lo, hi] = offeredRange(hello);
      throw new ProtocolError(
        ErrorCode.Version,
        `protocol ${describeRange(lo, hi)} is not supported; this hub speaks ${describeRange(OLDEST_CLIENT_VERSION, PROTOCOL_VERSION)}`,
        CloseCode.Version,
      );
    }
    if (hello.role === 'dashboard') {
      // pages get the live feed on LIVE_PATH (http/dashboard-feed.ts), not on the SDK endpoint
      throw new ProtocolError(ErrorCode.Protocol, 'dashboard feed not available', CloseCode.Protocol);
    }
    const app = this.#apps.admit(hello);

    this.#awaitingHello.delete(session);
    session.state = SessionState.Open;
    session.app = hello.app;
    session.instance = hello.instance;
    session.host = hello.host ?? '';
    session.sdk = hello.sdk;
    session.reporter = reporterBit(hello.instance);
    session.appliedSeq = app.broadcaster.seq;
    admitVersion(session, version);
    session.soloBudget = new TokenBucket(
      this.tunables.soloPromotionRate,
      this.tunables.soloPromotionBurst,
      this.#now(),
    );
    session.keyShare = app.aggregator.openShare();
    this.#apps.join(app, session);
    app.broadcaster.sendTo(
      session.peer,
      welcomeFrame(
        {
          hub: this.id,
          epoch: this.#epoch,
          members: this.#members,
          rules: [...app.aggregator.rules],
          local: this.#apps.localThresholds(app),
          instances: app.sessionsByInstance.size,
          seq: app.broadcaster.seq,
        },
        version,
      ),
    );
    this.#sendSnapshot(app, session);
  }

  /**
   * Ingests `report.keys[from..]`, at most `max` records (the fair intake's step); returns the index
   * it stopped at. @param [bytes] the frame's size, for the report frame size histogram (first step only)
   */
  report(session: Session, report: Report, from: number, max: number, bytes?: number): number {
    const app = this.#apps.get(session.app);
    if (app === undefined) return report.keys.length;
    const now = this.#now();
    const to = Math.min(report.keys.length, from + max);
    this.#countReport(app, session, from, to, now, bytes);
    app.aggregator.ingest(
      report.keys,
      report.counts,
      session.reporter,
      now,
      session.soloBudget,
      from,
      to,
      session.keyShare,
    );
    const { hits, loads } = report;
    if (hits !== undefined && loads !== undefined) {
      for (let i = from; i < to; i++)
        if (hits[i]! > 0 || loads[i]! > 0) this.#savings(app, report.keys[i]!, hits[i]!, loads[i]!);
    }
    if (app.limits.active) app.limits.observe(session, report.keys, report.counts, from, to, now);
    return to;
  }

  /**
   * As `report`, for a Report frame read in place (report-frame.ts), from its cursor's record on;
   * moves the cursor to where it stopped. Keys become strings only where needed: an admission,
   * a record carrying savings, or every key while the app has rate limits.
   */
  reportFrame(session: Session, frame: ReportFrame, max: number, bytes?: number): number {
    const app = this.#apps.get(session.app);
    if (app === undefined) {
      frame.index = frame.length;
      return frame.length;
    }
    const now = this.#now();
    const from = frame.index;
    const to = Math.min(frame.length, from + max);
    this.#countReport(app, session, from, to, now, bytes);
    const limits = app.limits.active;
    const start = frame.savings || limits ? frame.save() : undefined;
    app.aggregator.ingestFrame(frame, session.reporter, now, session.soloBudget, to, session.keyShare);
    if (start === undefined) return to;
    // a second walk over the step for what needs the keys as strings
    frame.restore(start);
    const keys: string[] = [];
    const counts: number[] = [];
    while (frame.index < to) {
      frame.next();
      if (frame.hits > 0 || frame.loads > 0) this.#savings(app, frame.key(), frame.hits, frame.loads);
      if (limits) {
        keys.push(frame.key());
        counts.push(frame.count);
      }
    }
    if (limits) app.limits.observe(session, keys, counts, 0, keys.length, now);
    return to;
  }

  #countReport(
    app: AppState,
    session: Session,
    from: number,
    to: number,
    now: number,
    bytes: number | undefined,
  ): void {
    session.lastReport = now;
    if (from === 0) {
      this.metrics.reports++;
      if (bytes !== undefined) this.metrics.reportFrame(app.name, bytes);
    }
    this.metrics.records += to - from;
  }

  /** A record's savings: only keys hot at the SDK carry them; only keys hot here are kept (bounded). */
  #savings(app: AppState, key: string, hits: number, loads: number): void {
    if (!app.aggregator.isHot(key)) return;
    app.savings.add(key, hits, loads);
    this.metrics.localHits += hits;
    this.metrics.loaderCalls += loads;
  }

  invalidate(session: Session, request: InvalidateRequest): void {
    if (this.#apps.get(session.app) !== undefined) this.invalidationBudget.request(session, request);
  }

  applied(session: Session, seq: number): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.applied(app, session, seq);
  }

  resync(session: Session): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#sendSnapshot(app, session);
  }

  lease(session: Session, id: number): void {
    refuseFromLegacy(session, 'Lease');
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.lease(app, session, id);
  }

  push(session: Session, push: Push): void {
    refuseFromLegacy(session, 'Push');
    this.#apps.get(session.app)?.shares.push(session, push, this.#now());
  }

  closed(session: Session): void {
    this.#awaitingHello.delete(session);
    this.invalidationBudget.closed(session);
    this.#apps.leave(session);
    const app = this.#apps.get(session.app);
    if (app === undefined) return;
    if (session.keyShare !== undefined) app.aggregator.closeShare(session.keyShare);
    // values it pushed lose the one instance that hears Redis writes of them: invalidated first,
    // so a Fill sent next (left) is answered under the new version
    for (const key of app.shares.orphaned(session)) {
      this.metrics.orphanInvalidations++;
      this.#invalidations.broadcast(app, key, false);
    }
    app.shares.left(session, this.#now());
  }

  faulted(session: Session, err: unknown): void {
    this.metrics.protocolErrors++;
    const close = closeCodeOf(err);
    const who = { session: session.id, app: session.app || undefined, instance: session.instance || undefined };
    if (close !== undefined)
      this.#logger.warn(
        { evt: 'refused', ...who, code: (err as { code?: string }).code, close, reason: (err as Error).message },
        'connection refused',
      );
    else this.#logger.error({ evt: 'session_error', ...who, err }, 'internal error in a session');
  }

  // ---- commands from the API ----

  /** Marks a key hot by hand. Returns false when the app is unknown or no rule matches the key. */
  promote(appName: string, key: string): boolean {
    const app = this.#apps.open(appName);
    return app !== undefined && app.aggregator.promote(key, this.#now());
  }

  /** Broadcasts an invalidation without waiting for acks; returns the seq, or undefined for an unknown app. */
  invalidateKey(appName: string, key: string): number | undefined {
    const app = this.#apps.open(appName);
    return app === undefined ? undefined : this.#invalidations.broadcast(app, key, true);
  }

  // ---- reads for the API and status ----

  get connections(): number {
    return this.#apps.connections;
  }

  /** apps with state on this hub (connected SDKs or tracked keys) */
  activeApps(): string[] {
    return this.#apps.names();
  }

  appSummary(appName: string): AppSummary | undefined {
    return this.#apps.summary(appName);
  }

  /** hot keys this hub owns, highest QPS first */
  hotKeys(appName?: string): HotKeyRow[] {
    return this.#apps.hotKeys(this.id, this.#now(), appName);
  }

  /** SDK connections to this hub, at most `limit` */
  instanceRows(appName?: string, limit = Infinity): InstanceRow[] {
    return this.#apps.instanceRows(this.id, appName, limit);
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

  /** What the flood protections did: promotion admission, fair intake, invalidation budgets, Resyncs. */
  protection(): ProtectionCounters {
    return protectionCounters(this.#apps.values(), this.intake.stats, this.invalidationBudget.stats, this.metrics);
  }

  gauges(): Gauges {
    return readGauges([...this.#apps.values()], {
      connections: this.#apps.connections,
      ingestRate: this.#ingestRate,
      qpsHistoryKeys: this.qpsHistory.size,
    });
  }

  // ---- time ----

  /** Demotions, expiries, hello deadlines, lapsed leases (fencing), status. Called every `tickMs`. */
  tick(): void {
    const now = this.#now();
    for (const session of this.#awaitingHello) {
      if (now - session.connectedAt >= this.tunables.helloTimeoutMs)
        session.helloTimedOut(this.tunables.helloTimeoutMs);
    }
    for (const app of this.#apps.values()) {
      this.#guard(`tick of app ${app.name}`, () => {
        app.aggregator.tick(now);
        app.shares.tick(now);
        app.savings.roll(now, (key) => app.aggregator.isHot(key));
        if (app.limits.active) this.#sendShares(app, now);
        if (app.aggregator.transitionDue(now)) this.#apps.scheduleConfig(app); // a pre-declared window opened or closed
        this.#apps.settle(app); // leases lapse with time: fencing needs no message
        // an app nobody is connected to frees its place and its keys after a grace period (open
        // mode: junk app names leave, so a real app refused with 4011 gets in on its retry); not
        // while a closed session's lease may still run
        if (app.lingering.size === 0 && this.#apps.idle(app, now)) this.#apps.drop(app);
      });
    }
    if (this.qpsHistory.due(now)) this.#guard('qps history', () => this.#sampleHistory(now));
    if (now - this.#lastStatusAt >= this.tunables.statusIntervalMs)
      this.#guard('status', () => this.publishStatus(now));
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
      connections: this.#apps.connections,
      heapUsed: mem.heapUsed,
      rss: mem.rss,
      redis: health.state === 'degraded' ? 'down' : this.clustered ? 'ok' : 'none',
      hotKeys: this.hotKeys()
        .slice(0, STATUS_HOT_MAX)
        .map(({ app, key, qps, since, instances, threshold, localPct, loadsPerSec }) => ({
          app,
          key,
          qps,
          since,
          instances,
          threshold,
          ...(localPct === undefined ? {} : { localPct, loadsPerSec }),
        })),
      instanceRows: this.instanceRows(undefined, STATUS_INSTANCES_MAX).map(({ hub: _hub, ...row }) => row),
      updatedAt: now,
    };
    this.coordinator.publishStatus(status);
  }

  /** Closes every connection with `code`; pending invalidations are dropped unacknowledged (an ack would be a guess). */
  shutdown(code: number, reason: string): void {
    this.#closing = true;
    this.#apps.close();
    this.invalidationBudget.close();
    for (const session of [...this.#awaitingHello]) this.#closePeer(session, code, reason);
    for (const app of this.#apps.values()) {
      app.invalidations.flush();
      for (const session of [...app.sessions]) this.#closePeer(session, code, reason);
    }
  }

  // ---- internals ----

  /** Each session's changed (or due) rate-limit shares, in one Limit frame per session. */
  #sendShares(app: AppState, now: number): void {
    app.limits.tick(now, (session, keys, rates) => {
      if (isLegacy(session)) return; // a version-1 SDK cannot read a Limit: its keys go unlimited there
      for (const frame of limitFrames(keys, rates)) if (!app.broadcaster.sendTo(session.peer, frame)) return;
    });
  }

  #sampleHistory(now: number): void {
    const hot: QpsSample[] = [];
    for (const app of this.#apps.values())
      for (const v of app.aggregator.hot(now)) {
        hot.push({ app: app.name, key: v.key, qps: v.qps });
        if (!v.rule.cache) this.#announcer.restepped(app, v, now);
      }
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

  #sendSnapshot(app: AppState, session: Session): void {
    const hot = app.aggregator.hot(this.#now());
    app.broadcaster.sendTo(
      session.peer,
      snapshotFrame(hot, (key) => app.replicas.count(key), app.broadcaster.seq),
    );
  }

  #membersChanged(epoch: number, members: Member[]): void {
    this.#logger.info(
      {
        evt: 'members',
        epoch,
        members: members.map((m) => m.id),
        joined: members.filter((m) => !this.#members.some((o) => o.id === m.id)).map((m) => m.id),
        left: this.#members.filter((o) => !members.some((m) => m.id === o.id)).map((o) => o.id),
      },
      'cluster members changed',
    );
    this.#epoch = epoch;
    this.#members = members;
    const before = this.#ownership;
    const ownership = new Ownership(members.map((m) => m.id));
    this.#ownership = ownership;
    const bytes = membersFrame(epoch, members);
    const lost = this.#fence.lostHotKeys(this.#apps.values(), this.#accept, ownership, this.#now());
    // keys owned by another hub are that hub's to decide; SDKs resync on the new epoch
    this.#accept = ownership.ids.length > 1 ? (key) => ownership.owner(key) === this.id : undefined;
    this.#apps.setAccept(this.#accept);
    this.#fence.changed(before, ownership);
    for (const app of this.#apps.values()) app.broadcaster.sendShared(bytes);
    for (const [app, keys] of lost) this.#fence.release(app, keys);
  }
}
