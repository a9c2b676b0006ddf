/**
 * The hub without the network, and the façade the server and the HTTP API use: it routes each
 * session message to the part that handles it, runs the tick, fans membership changes out, and
 * answers the API's reads and commands. The parts, one folder per step: a session's opening and
 * its Reports in ingest/ (hello.ts, report-ingest.ts); a key's count in aggregate/; which keys are
 * hot in decide/; the frames, and promotions and demotions made broadcasts and events, in
 * broadcast/ (frames.ts, announce.ts); invalidations and their acks in invalidate/
 * (invalidation-router.ts); the member list, key ownership and the window handoff in membership/;
 * the status and the gauges in observe/. Beside this file: per-app state, admission and Config
 * fan-out in apps.ts; each app's periodic work and the QPS sampling in hub-tick.ts; a membership
 * change fanned out to the handoff, the fence and the SDKs in hub-members.ts. Talks to the rest of
 * the cluster only through the Coordinator.
 */
import { ErrorCode, ProtocolError } from '@hotkey/sdk';
import { closeCodeOf } from '@hotkey/sdk/errors';
import {
  CloseCode,
  type Hello,
  type Hold,
  type InvalidateRequest,
  type Member,
  type Push,
  type Release,
  type Report,
} from '@hotkey/sdk/protocol';
import type { Coordinator, HubEvent } from './coordinator.ts';
import type { Logger } from './logger.ts';
import { refuseFromLegacy } from './membership/legacy-sessions.ts';
import { openSession, sendSnapshot } from './ingest/hello.ts';
import { StatusClock } from './observe/hub-status.ts';
import { sampleHistory, tickApp } from './hub-tick.ts';
import { MemberView } from './membership/members.ts';
import { ReportIngest } from './ingest/report-ingest.ts';
import { Announcer } from './broadcast/announce.ts';
import { Apps } from './apps.ts';
import {
  appSummary,
  hotKeyRows,
  instanceRows,
  type AppSummary,
  type HotKeyRow,
  type InstanceRow,
} from './observe/app-rows.ts';
import {
  HubMetrics,
  protectionCounters,
  readGauges,
  type Gauges,
  type ProtectionCounters,
} from './observe/hub-metrics.ts';
import { Intake } from './ingest/intake.ts';
import { InvalidationBudget } from './invalidate/invalidation-budget.ts';
import { InvalidationRouter } from './invalidate/invalidation-router.ts';
import { OwnershipFence } from './invalidate/ownership-fence.ts';
import { Ownership } from '@hotkey/sdk/ownership';
import { closeReason, type BulkWriter, type Peer } from './peer.ts';
import { QpsHistory, type QpsPoint } from './observe/qps-history.ts';
import type { ReportFrame } from './ingest/report-frame.ts';
import { Session, type SessionHost } from './ingest/session.ts';
import type { HubTunables } from './tunables.ts';
import { KeyPrivacy } from './observe/key-privacy.ts';
import { RecentEvents } from './observe/recent-events.ts';
import { HubMembers } from './hub-members.ts';

export interface HubCoreOptions {
  id: string;
  coordinator: Coordinator;
  tunables: HubTunables;
  /** wall clock in ms: event times, the windows the aggregators count in, the QPS history */
  wallNow: () => number;
  /** every event of this hub's decisions goes here, as fields (`{ evt: 'promote', app, key, qps }`) */
  logger: Logger;
  /** the hot keys' recent QPS @default a QpsHistory with its defaults (5 min at 1 s, 2000 keys) */
  qpsHistory?: QpsHistory;
  /** monotonic clock in ms for leases (a wall clock jumping forward would end them early) @default performance.now */
  monoNow?: () => number;
  /** writes big fan-outs with other threads' help (the socket adapter's FanoutThreads) @default none */
  bulk?: BulkWriter;
  /** how keys are shown outside the core (key-privacy.ts) @default every key plain */
  keyPrivacy?: KeyPrivacy;
}

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
  readonly #wallNow: () => number;
  readonly #logger: Logger;
  readonly #apps: Apps;
  readonly #announcer: Announcer;
  readonly #invalidations: InvalidationRouter;
  /** membership changes fanned out: the window handoff, the fence, the Members frame (hub-members.ts) */
  readonly #changes: HubMembers;
  readonly #awaitingHello = new Set<Session>();
  readonly #ingest: ReportIngest;
  readonly #status: StatusClock;
  readonly #members: MemberView;
  readonly #recent: RecentEvents;
  #closing = false;
  /** acks held across owner changes, hot keys let go of (ownership-fence.ts) */
  readonly #fence: OwnershipFence;

  constructor(options: HubCoreOptions) {
    this.id = options.id;
    this.coordinator = options.coordinator;
    this.tunables = options.tunables;
    this.#recent = new RecentEvents(this.tunables.recentEvents);
    this.#wallNow = options.wallNow;
    const monoNow = options.monoNow ?? (() => performance.now());
    this.#logger = options.logger;
    this.startedAt = this.#wallNow();
    this.#status = new StatusClock(this.startedAt);
    this.#ingest = new ReportIngest(this.metrics);
    const membership = this.coordinator.members();
    this.#members = new MemberView(this.id, membership.epoch, membership.members);
    this.qpsHistory = options.qpsHistory ?? new QpsHistory();
    this.keyPrivacy = options.keyPrivacy ?? new KeyPrivacy();
    this.#announcer = new Announcer({
      privacy: this.keyPrivacy,
      hubId: this.id,
      coordinator: this.coordinator,
      metrics: this.metrics,
      logger: this.#logger,
      wallNow: this.#wallNow,
      monoNow,
      // alone for good, no other hub acks a write of its keys: promotions need no fence
      ...(this.coordinator.standalone === true ? {} : { holdBack: (key: string) => this.#fence.promotionWaits(key) }),
    });
    this.#apps = this.#createApps(monoNow, options.bulk);
    const initial = new Ownership(membership.members.map((m) => m.id));
    this.#fence = new OwnershipFence({
      selfId: this.id,
      leaseMs: this.tunables.leaseMs,
      monoNow,
      initial,
      epoch: membership.epoch,
    });
    this.#invalidations = new InvalidationRouter({
      hubId: this.id,
      notBefore: (key, flush) => (flush ? this.#fence.notBeforeAny() : this.#fence.notBefore(key)),
      // alone for good, no other hub acks a write of its keys: registrations need no fence
      ...(this.coordinator.standalone === true ? {} : { holdsWait: (key: string) => this.#fence.holdsWait(key) }),
      metrics: this.metrics,
      wallNow: this.#wallNow,
      monoNow,
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
    this.invalidationBudget = this.#createInvalidationBudget();
    this.#changes = new HubMembers({
      selfId: this.id,
      coordinator: this.coordinator,
      tunables: t,
      metrics: this.metrics,
      logger: this.#logger,
      apps: this.#apps,
      members: this.#members,
      fence: this.#fence,
      invalidations: this.#invalidations,
      wallNow: this.#wallNow,
      monoNow,
    });
    this.#listen();
  }

  /** The per-app registry, whose promotions and demotions the announcer makes news. */
  #createApps(monoNow: () => number, bulk: BulkWriter | undefined): Apps {
    return new Apps({
      coordinator: this.coordinator,
      tunables: this.tunables,
      metrics: this.metrics,
      wallNow: this.#wallNow,
      monoNow,
      // SDKs may hold leases granted by this hub's previous life: wait one out before any ack
      ackNotBefore: monoNow() + this.tunables.leaseMs,
      logger: this.#logger,
      accept: this.#members.accept,
      owns: this.#owns,
      bulk,
      onPromote: (app, key, rule, qps, latencyMs, manual) => {
        // a key still counted here while its windows go to its new owner (handoff.ts) is not
        // promoted to SDKs: this hub no longer vouches for it (ownership-fence.ts)
        if (!this.#owns(key)) return;
        this.#announcer.promoted(app, key, rule, qps, latencyMs, manual);
      },
      onDemote: (app, key, qps, reason) => {
        // broadcast-class for one lease more: a Grant sent before the Demote may still cover it (directed.ts)
        app.demotedAt.delete(key);
        app.demotedAt.set(key, monoNow());
        this.#announcer.demoted(app, key, qps, reason);
      },
    });
  }

  /** Per-connection InvalidateRequest budgets, which hand a request on to the router in turn. */
  #createInvalidationBudget(): InvalidationBudget {
    const t = this.tunables;
    return new InvalidationBudget({
      rate: t.invalidateRate,
      burst: t.invalidateBurst,
      maxQueued: t.maxQueuedInvalidations,
      wallNow: this.#wallNow,
      route: (from, request) => {
        const session = from as Session;
        const app = this.#apps.get(session.app);
        if (app !== undefined && !session.closed) this.#invalidations.request(app, session, request);
      },
    });
  }

  /** What the hub hears from the cluster: handoff chunks, rules, members and events. */
  #listen(): void {
    this.coordinator.onHandoff?.((bytes) => this.#guard('handoff', () => this.#changes.handoff.receive(bytes)));
    this.coordinator.onRules((app, rules) => this.#guard('rules change', () => this.#apps.rulesChanged(app, rules)));
    this.coordinator.onMembers((epoch, members) =>
      this.#guard('members change', () => this.#changes.changed(epoch, members)),
    );
    this.coordinator.onEvent((event) => this.#recent.push(event));
  }

  /** true when the hub is part of a multi-hub cluster (SDKs are sent 4010 on leave) */
  get clustered(): boolean {
    return this.coordinator.standalone !== true;
  }

  // ---- sessions ----

  /** A new connection from `remote` (its socket's address, if known): starts its hello deadline. */
  attach(peer: Peer, remote = ''): Session {
    const session = new Session(peer, this, this.#wallNow());
    session.remote = remote;
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
    openSession(
      { hubId: this.id, apps: this.#apps, members: this.#members, tunables: this.tunables, wallNow: this.#wallNow },
      session,
      hello,
    );
    this.#awaitingHello.delete(session);
  }

  /** Ingests `report.keys[from..]`, at most `max` records (report-ingest.ts); returns the index it stopped at. */
  report(session: Session, report: Report, from: number, max: number, bytes?: number): number {
    const app = this.#apps.get(session.app);
    if (app === undefined) return report.keys.length;
    return this.#ingest.decoded(app, session, report, from, max, this.#wallNow(), bytes);
  }

  /** As `report`, for a Report frame read in place; moves the frame's cursor to where it stopped. */
  reportFrame(session: Session, frame: ReportFrame, max: number, bytes?: number): number {
    const app = this.#apps.get(session.app);
    if (app === undefined) {
      frame.index = frame.length;
      return frame.length;
    }
    return this.#ingest.inPlace(app, session, frame, max, this.#wallNow(), bytes);
  }

  invalidate(session: Session, request: InvalidateRequest): void {
    if (this.#apps.get(session.app) !== undefined) this.invalidationBudget.request(session, request);
  }

  applied(session: Session, seq: number, d?: number): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.applied(app, session, seq, d);
  }

  hold(session: Session, hold: Hold): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.directed.hold(app, session, hold);
  }

  release(session: Session, release: Release): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.directed.release(app, session, release);
  }

  resync(session: Session): void {
    const app = this.#apps.get(session.app);
    if (app !== undefined) sendSnapshot(app, session, this.#wallNow(), this.#members.accept);
  }

  lease(session: Session, id: number): void {
    refuseFromLegacy(session, 'Lease');
    const app = this.#apps.get(session.app);
    if (app !== undefined) this.#invalidations.lease(app, session, id);
  }

  push(session: Session, push: Push): void {
    refuseFromLegacy(session, 'Push');
    this.#apps.get(session.app)?.shares.push(session, push, this.#wallNow());
  }

  closed(session: Session): void {
    this.#awaitingHello.delete(session);
    this.invalidationBudget.closed(session);
    this.#apps.leave(session);
    const app = this.#apps.get(session.app);
    if (app === undefined) return;
    if (session.fairShare !== undefined) app.aggregator.closeShare(session.fairShare);
    // values it pushed lose the one instance that hears Redis writes of them: invalidated first,
    // so a Fill sent next (left) is answered under the new version
    for (const key of app.shares.orphaned(session)) {
      this.metrics.orphanInvalidations++;
      this.#invalidations.broadcast(app, key, false);
    }
    app.shares.left(session, this.#wallNow());
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
    return app !== undefined && app.aggregator.promote(key, this.#wallNow());
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

  /** One app on this hub, in numbers; undefined when it has no state here. */
  appSummary(appName: string): AppSummary | undefined {
    const app = this.#apps.get(appName);
    return app === undefined ? undefined : appSummary(app);
  }

  /** hot keys this hub owns, highest QPS first */
  hotKeys(appName?: string): HotKeyRow[] {
    return hotKeyRows(this.#apps.values(), this.id, this.#wallNow(), appName);
  }

  /** SDK connections to this hub, at most `limit` */
  instanceRows(appName?: string, limit = Infinity): InstanceRow[] {
    return instanceRows(this.#apps.values(), this.id, appName, limit);
  }

  /** The member that owns (decides, and keeps the QPS history of) `key`; undefined with no members. */
  ownerOf(key: string): Member | undefined {
    return this.#members.ownerOf(key);
  }

  /** The key's recent cluster QPS as this hub sampled it (empty unless it owned the key while hot). */
  qpsPoints(appName: string, key: string): QpsPoint[] {
    return this.qpsHistory.points(appName, key);
  }

  /** events seen by this hub (its own and, in a cluster, every other hub's), oldest first */
  recentEvents(since: number): HubEvent[] {
    return this.#recent.since(since);
  }

  /** What the flood protections did: promotion admission, fair intake, invalidation budgets, Resyncs. */
  protection(): ProtectionCounters {
    return protectionCounters(this.#apps.values(), this.intake.stats, this.invalidationBudget.stats, this.metrics);
  }

  gauges(): Gauges {
    return readGauges([...this.#apps.values()], {
      connections: this.#apps.connections,
      ingestRate: this.#status.ingestRate,
      qpsHistoryKeys: this.qpsHistory.size,
    });
  }

  // ---- time ----

  /** Demotions, expiries, hello deadlines, lapsed leases (fencing), status. Called every `tickMs`. */
  tick(): void {
    const now = this.#wallNow();
    for (const session of this.#awaitingHello) {
      if (now - session.connectedAt >= this.tunables.helloTimeoutMs)
        session.helloTimedOut(this.tunables.helloTimeoutMs);
    }
    for (const app of this.#apps.values()) {
      this.#guard(`tick of app ${app.name}`, () => tickApp(this.#apps, app, now));
      this.#guard(`held promotions of app ${app.name}`, () => this.#announcer.release(app, this.#owns));
    }
    this.#guard('handoff', () => this.#changes.handoff.tick());
    if (this.qpsHistory.due(now))
      this.#guard('qps history', () => sampleHistory(this.#apps, this.qpsHistory, this.#announcer, now));
    if (this.#status.due(now, this.tunables.statusIntervalMs)) this.#guard('status', () => this.publishStatus(now));
  }

  publishStatus(now = this.#wallNow()): void {
    const status = this.#status.next(now, this.metrics.records, {
      id: this.id,
      url: this.url,
      startedAt: this.startedAt,
      connections: this.#apps.connections,
      degraded: this.coordinator.health().state === 'degraded',
      clustered: this.clustered,
      hotKeys: () => this.hotKeys(),
      instanceRows: (limit) => this.instanceRows(undefined, limit),
    });
    this.coordinator.publishStatus(status);
  }

  /** Resolves once the windows of the last membership change are handed over (handoff.ts; at most a few tens of ms). */
  handoffSettled(): Promise<void> {
    return this.#changes.handoff.settled();
  }

  /** Closes every connection with `code`; pending invalidations are dropped unacknowledged (an ack would be a guess). */
  shutdown(code: number, reason: string): void {
    this.#guard('handoff', () => this.#changes.handoff.flush());
    this.#closing = true;
    this.#apps.close();
    this.invalidationBudget.close();
    for (const session of [...this.#awaitingHello]) this.#closePeer(session, code, reason);
    for (const app of this.#apps.values()) {
      app.invalidations.flush();
      app.drops.flush();
      for (const session of [...app.sessions]) this.#closePeer(session, code, reason);
    }
  }

  // ---- internals ----

  /** whether this hub owns `key` by its member list (every key, alone or not listed) */
  readonly #owns = (key: string): boolean => this.#members.accept?.(key) !== false;

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
}
