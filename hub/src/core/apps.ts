/**
 * The hub's per-app registry: each app's aggregator, broadcaster, sessions and instance counts,
 * created on first use and dropped by the caller when idle; admission (app name, token,
 * capacity); and the debounced Config fan-out that follows every change of an app's instance
 * count or rules (the per-instance threshold depends on both).
 */
import { CapacityError, ErrorCode, AuthError, ProtocolError } from '@hotkey/sdk';
import { CloseCode, HOLDERS_VERSION, MAX_NAME_LENGTH, MsgType, type Hello } from '@hotkey/sdk/protocol';
import { localThreshold, rulesForPeers, type Rule } from '@hotkey/sdk/rules';
import type { Coordinator } from './coordinator.ts';
import { Aggregator, type DemoteReason } from './aggregate/aggregator.ts';
import { tokenMatches } from './membership/auth.ts';
import { Broadcaster } from './broadcast/broadcaster.ts';
import type { Logger } from './logger.ts';
import type { HubMetrics } from './observe/hub-metrics.ts';
import { DropTracker } from './invalidate/drop-tracker.ts';
import { Holders } from './invalidate/holders.ts';
import { InvalidationTracker } from './invalidate/invalidations.ts';
import { closeLease, cutOffLagging, isLegacy } from './membership/legacy-sessions.ts';
import { Savings } from './observe/savings.ts';
import { ValuePush } from './broadcast/value-push.ts';
import { RateSplits } from './decide/rate-splits.ts';
import { ReplicaSteps } from './decide/replica-steps.ts';
import type { BulkWriter, Peer } from './peer.ts';
import { SessionState, type Session } from './ingest/session.ts';
import type { HubTunables } from './tunables.ts';
import type { KeyMode } from './observe/key-privacy.ts';

/** Checks an app name wherever one arrives (config, API path, Hello): at most what a Hello can carry. */
export function isValidAppName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_NAME_LENGTH && !/[\u0000-\u001f]/.test(name);
}

/** An app as a config file or an embedder declares it. */
export interface AppConfig {
  /** token SDKs of the app present in Hello; undefined: none required */
  token?: string;
  /** validated rules; [] = the default rule */
  rules: Rule[];
  /** how its keys are shown outside the hub's core (key-privacy.ts) @default 'plain' */
  keys?: KeyMode;
  /** prefixes kept in clear in front of a hashed or redacted key @default [] */
  keepPrefix?: string[];
}

/** A promotion decided and not announced yet (announce.ts): what its Promote will say. */
export interface HeldPromotion {
  rule: Rule;
  qps: number;
  latencyMs: number | undefined;
  manual: boolean;
  /** monotonic ms it was decided at */
  at: number;
}

export interface AppState {
  name: string;
  aggregator: Aggregator;
  broadcaster: Broadcaster;
  sessions: Set<Session>;
  sessionByPeer: Map<Peer, Session>;
  /** instance id -> how many sessions that SDK instance has open on this hub */
  sessionsByInstance: Map<string, number>;
  invalidations: InvalidationTracker;
  /** protocol 3: who registered which key, and the app's write clock (holders.ts) */
  holders: Holders<Session>;
  /** acks of directed invalidations, sent as Drops to holders (drop-tracker.ts) */
  drops: DropTracker<Session>;
  /** sessions, connected or lingering, speaking a version before 3: while any is, every invalidation is broadcast */
  pre3: number;
  /** keys demoted lately, with when (monotonic): broadcast-class for one lease after the Demote */
  demotedAt: Map<string, number>;
  /** keys decided hot whose Promote waits for their previous owner to know of the change (announce.ts) */
  heldPromotions: Map<string, HeldPromotion>;
  /** closed sessions whose lease may still run: the instance may still serve (invalidations.ts) */
  lingering: Set<Session>;
  /** sessions connected now and lingering ones, shared by consecutive invalidations until one joins or leaves */
  waiters: Session[] | undefined;
  configTimer: NodeJS.Timeout | undefined;
  lastConfigAt: number;
  /** when its last session left (or it was created): idle apps are dropped after `appIdleMs` */
  idleSince: number;
  /** value push for its shared keys (value-push.ts) */
  shares: ValuePush;
  /** local hits and loader calls of its hot keys, from the SDKs' reports (savings.ts) */
  savings: Savings;
  /** rate splits of the limited keys this hub owns (rate-splits.ts) */
  limits: RateSplits<Session>;
  /** replica counts of the hot keys, as broadcast (replica-steps.ts) */
  replicas: ReplicaSteps;
}

export interface AppsOptions {
  coordinator: Coordinator;
  tunables: HubTunables;
  metrics: HubMetrics;
  /** wall clock in ms: the aggregators' windows, idle and Config timing */
  wallNow: () => number;
  /** monotonic clock for leases */
  monoNow: () => number;
  /** no invalidation is acked before this (monotonic): SDKs may hold leases from this hub's previous life */
  ackNotBefore: number;
  /** slow consumers and send failures */
  logger: Logger;
  /** which keys this hub owns; undefined while it is the only member */
  accept: ((key: string) => boolean) | undefined;
  /**
   * which keys this hub owns under its member list now, for registrations and directed writes;
   * unlike `accept`, not widened while keys moving away are still counted (handoff.ts)
   * @default `accept` as it stands
   */
  owns?: (key: string) => boolean;
  /** every app's broadcaster writes big fan-outs through it (Broadcaster's `bulk`) */
  bulk?: BulkWriter;
  /** an app's aggregator promoted a key */
  onPromote: (
    app: AppState,
    key: string,
    rule: Rule,
    qps: number,
    latencyMs: number | undefined,
    manual: boolean,
  ) => void;
  /** an app's aggregator demoted a key */
  onDemote: (app: AppState, key: string, qps: number, reason: DemoteReason) => void;
}

function refuse(code: ErrorCode, closeCode: number, message: string): never {
  throw new ProtocolError(code, message, closeCode);
}

export class Apps {
  readonly #opts: AppsOptions;
  readonly #byName = new Map<string, AppState>();
  #accept: ((key: string) => boolean) | undefined;
  #connections = 0;
  #closing = false;

  constructor(options: AppsOptions) {
    this.#opts = options;
    this.#accept = options.accept;
  }

  get(name: string): AppState | undefined {
    return this.#byName.get(name);
  }

  get size(): number {
    return this.#byName.size;
  }

  names(): string[] {
    return [...this.#byName.keys()];
  }

  values(): IterableIterator<AppState> {
    return this.#byName.values();
  }

  /** SDK sessions open on this hub, every app */
  get connections(): number {
    return this.#connections;
  }

  /** The app's state, created on first use; undefined for unknown apps or past `maxApps`. */
  open(name: string): AppState | undefined {
    const existing = this.#byName.get(name);
    if (existing !== undefined) return existing;
    const { coordinator, tunables, metrics, logger } = this.#opts;
    if (!isValidAppName(name) || coordinator.app(name) === undefined || this.#byName.size >= tunables.maxApps)
      return undefined;
    const createdAt = this.#opts.wallNow();
    const broadcaster = new Broadcaster({
      maxBufferedBytes: tunables.maxBufferedBytes,
      bulk: this.#opts.bulk,
      onSlowConsumer: (peer) => {
        metrics.slowConsumers++;
        logger.warn(
          { evt: 'slow_consumer', app: name, session: app.sessionByPeer.get(peer)?.id, close: CloseCode.SlowConsumer },
          'socket closed: send buffer full',
        );
        this.#cutOff(app, peer);
      },
      onSendError: (peer, err) => {
        logger.error({ evt: 'send_failed', app: name, err }, 'send failed, closing the socket');
        this.#cutOff(app, peer);
      },
    });
    const app: AppState = {
      name,
      broadcaster,
      aggregator: new Aggregator({
        rules: coordinator.rules(name),
        maxKeys: tunables.maxKeysPerApp,
        maxHot: tunables.maxHotKeysPerApp,
        initialCapacity: 64,
        accept: this.#accept,
        reportFraction: tunables.localThresholdFraction,
        now: this.#opts.wallNow(),
        listener: {
          promote: (key, rule, qps, latencyMs, manual) => this.#opts.onPromote(app, key, rule, qps, latencyMs, manual),
          demote: (key, qps, reason) => this.#opts.onDemote(app, key, qps, reason),
        },
      }),
      sessions: new Set(),
      sessionByPeer: new Map(),
      sessionsByInstance: new Map(),
      invalidations: new InvalidationTracker({ notBefore: this.#opts.ackNotBefore, graceMs: tunables.leaseMs / 8 }),
      holders: new Holders<Session>({
        maxPerSession: tunables.maxHeldPerSession,
        maxPerAddress: tunables.maxHeldPerAddress,
        maxPerApp: tunables.maxHeldPerApp,
        maxWriteMarks: tunables.maxWriteMarks,
        owns: this.#opts.owns ?? ((key) => this.#accept?.(key) !== false),
        refused: this.#opts.metrics.holdsRefused,
      }),
      drops: new DropTracker<Session>({ notBefore: this.#opts.ackNotBefore, graceMs: tunables.leaseMs / 8 }),
      pre3: 0,
      demotedAt: new Map(),
      heldPromotions: new Map(),
      lingering: new Set(),
      waiters: undefined,
      configTimer: undefined,
      lastConfigAt: 0,
      idleSince: createdAt,
      shares: new ValuePush({
        broadcaster,
        sessions: () => app.sessions,
        metrics: this.#opts.metrics,
        fillTimeoutMs: tunables.pushFillTimeoutMs,
        maxPushBytes: tunables.maxPushBytes,
        tickMs: tunables.tickMs,
      }),
      savings: new Savings(this.#opts.wallNow()),
      limits: new RateSplits(coordinator.rules(name)),
      replicas: new ReplicaSteps(),
    };
    this.#byName.set(name, app);
    this.#shareKeys();
    return app;
  }

  /**
   * One key budget for the hub: each app may track min(maxKeysPerApp, maxKeysTotal / apps) keys,
   * so many apps (open mode takes any name) cannot together hold more than maxKeysTotal. Apps over
   * a lowered share shed their smallest non-hot keys at once.
   */
  #shareKeys(): void {
    const { maxKeysPerApp, maxKeysTotal } = this.#opts.tunables;
    const share = Math.max(1, Math.min(maxKeysPerApp, Math.floor(maxKeysTotal / Math.max(1, this.#byName.size))));
    const now = this.#opts.wallNow();
    for (const app of this.#byName.values())
      if (app.aggregator.maxKeys !== share) app.aggregator.setMaxKeys(share, now);
  }

  /** True when the app has had no session for `appIdleMs` (or has nothing left) and no invalidation pending: it may be dropped. */
  idle(app: AppState, now: number): boolean {
    if (app.sessions.size > 0 || app.invalidations.pending > 0) return false;
    return app.aggregator.stats.keys === 0 || now - app.idleSince >= this.#opts.tunables.appIdleMs;
  }

  /**
   * The app a Hello may join: throws the refusal otherwise. An unknown app and a missing or wrong
   * token get the same AuthError, message and work (a token comparison), so a Hello cannot tell
   * which apps exist; only a name no hub could accept (empty, too long, control characters) gets
   * HK_ERR_UNKNOWN_APP. A full hub (maxApps) answers 4011, which the SDK retries.
   */
  admit(hello: Hello): AppState {
    if (!isValidAppName(hello.app))
      refuse(ErrorCode.UnknownApp, CloseCode.UnknownApp, `"${hello.app.slice(0, 64)}" is not a valid app name`);
    const auth = this.#opts.coordinator.app(hello.app);
    const tokenOk = tokenMatches(hello.token ?? '', auth?.token ?? '\u0000unknown app') && hello.token !== undefined;
    if (auth === undefined || (auth.token !== undefined && !tokenOk)) {
      throw new AuthError(
        `app "${hello.app.slice(0, 64)}" is unknown here or its token is missing or wrong`,
        CloseCode.Auth,
      );
    }
    const app = this.open(hello.app);
    if (app === undefined)
      refuse(
        ErrorCode.AppLimit,
        CloseCode.AppLimit,
        `this hub keeps state for at most ${this.#opts.tunables.maxApps} apps: retry later`,
      );
    if (app.sessions.size >= this.#opts.tunables.maxSessionsPerApp) {
      throw new CapacityError(
        `app "${hello.app}" has ${app.sessions.size} connections, the most this hub accepts`,
        CloseCode.OverCapacity,
      );
    }
    return app;
  }

  /** An admitted session joins its app's broadcasts; a new instance schedules a Config. */
  join(app: AppState, session: Session): void {
    app.sessions.add(session);
    app.sessionByPeer.set(session.peer, session);
    app.broadcaster.peers.add(session.peer);
    if (isLegacy(session)) app.broadcaster.legacy.add(session.peer);
    if (session.version < HOLDERS_VERSION) app.pre3++;
    app.waiters = undefined;
    const instancesBefore = app.sessionsByInstance.size;
    app.sessionsByInstance.set(session.instance, (app.sessionsByInstance.get(session.instance) ?? 0) + 1);
    this.#connections++;
    if (app.sessionsByInstance.size !== instancesBefore) this.scheduleConfig(app);
  }

  /** A session left (closed, or cut off); an instance gone schedules a Config. */
  leave(session: Session): void {
    const app = this.#byName.get(session.app);
    if (app === undefined || !app.sessions.delete(session)) return;
    this.#connections--;
    app.sessionByPeer.delete(session.peer);
    app.broadcaster.peers.delete(session.peer);
    app.broadcaster.legacy.delete(session.peer);
    app.waiters = undefined;
    // a closed socket proves nothing: the instance may serve until its lease lapses
    const now = this.#opts.monoNow();
    closeLease(session, now, this.#opts.tunables.leaseMs);
    if (session.leaseUntil > now) app.lingering.add(session);
    else this.#gone(app, session);
    if (app.sessions.size === 0) app.idleSince = this.#opts.wallNow();
    const sessionsLeft = (app.sessionsByInstance.get(session.instance) ?? 1) - 1;
    if (sessionsLeft > 0) app.sessionsByInstance.set(session.instance, sessionsLeft);
    else {
      app.sessionsByInstance.delete(session.instance);
      this.scheduleConfig(app);
    }
    app.invalidations.settle(now);
    app.drops.settle(now);
  }

  /** A closed session whose lease can no longer run: it holds nothing any more, and speaks no version. */
  #gone(app: AppState, session: Session): void {
    app.holders.gone(session);
    if (session.version < HOLDERS_VERSION) app.pre3--;
  }

  /** Time passes: leases lapse (fencing needs no message), lingering sessions whose lease ended go. */
  settle(app: AppState): void {
    const now = this.#opts.monoNow();
    cutOffLagging(app, now, this.#opts.tunables.leaseMs);
    app.invalidations.settle(now);
    app.drops.settle(now);
    for (const session of app.lingering) {
      if (session.leaseUntil > now) continue;
      app.lingering.delete(session);
      this.#gone(app, session);
      app.waiters = undefined;
    }
    for (const [key, at] of app.demotedAt) {
      if (now - at < this.#opts.tunables.leaseMs) break;
      app.demotedAt.delete(key);
    }
  }

  drop(app: AppState): void {
    if (app.configTimer !== undefined) clearTimeout(app.configTimer);
    this.#byName.delete(app.name);
    this.#shareKeys();
  }

  /** Each rule's per-instance report threshold for the app's instance count now. */
  localThresholds(app: AppState): number[] {
    const instanceCount = app.sessionsByInstance.size;
    const now = this.#opts.wallNow();
    return app.aggregator.rules.map((r) =>
      localThreshold(r, instanceCount, this.#opts.tunables.localThresholdFraction, now),
    );
  }

  rulesChanged(appName: string, rules: Rule[]): void {
    this.#opts.logger.info(
      { evt: 'rules', app: appName, rules: rules.length, matches: rules.map((r) => r.match) },
      'rules changed',
    );
    const app = this.#byName.get(appName);
    if (app === undefined) return;
    app.aggregator.setRules(rules, this.#opts.wallNow());
    app.limits.setRules(app.aggregator.rules);
    this.scheduleConfig(app);
  }

  /** The keys this hub owns changed: every aggregator decides only those from now on. */
  setAccept(accept: ((key: string) => boolean) | undefined): void {
    this.#accept = accept;
    const now = this.#opts.wallNow();
    for (const app of this.#byName.values()) app.aggregator.setAccept(accept, now);
  }

  /** Config to every SDK of the app, at most once per `configDebounceMs`. */
  scheduleConfig(app: AppState): void {
    if (app.configTimer !== undefined || this.#closing) return;
    const wallNow = this.#opts.wallNow;
    const delay = Math.max(0, app.lastConfigAt + this.#opts.tunables.configDebounceMs - wallNow());
    app.configTimer = setTimeout(() => {
      app.configTimer = undefined;
      app.lastConfigAt = wallNow();
      try {
        this.#sendConfig(app);
      } catch (err) {
        this.#opts.logger.error(
          { evt: 'internal_error', what: `config of app ${app.name}`, err },
          'sending Config failed',
        );
      }
    }, delay);
    app.configTimer.unref();
  }

  /** No more Config frames; pending ones are cancelled. */
  close(): void {
    this.#closing = true;
    for (const app of this.#byName.values()) if (app.configTimer !== undefined) clearTimeout(app.configTimer);
  }

  #sendConfig(app: AppState): void {
    app.broadcaster.sendAll({
      t: MsgType.Config,
      rules: rulesForPeers(app.aggregator.rules),
      local: this.localThresholds(app),
      instances: app.sessionsByInstance.size,
    });
  }

  /** The broadcaster gave up on a socket: the session leaves the app now, not when the close completes. */
  #cutOff(app: AppState, peer: Peer): void {
    const session = app.sessionByPeer.get(peer);
    if (session === undefined) return;
    session.state = SessionState.Closed;
    this.leave(session);
  }
}
