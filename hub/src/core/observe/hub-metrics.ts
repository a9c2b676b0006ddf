/**
 * What the hub core counts as it works: plain numbers bumped inline on the hot path (HubMetrics)
 * and the gauges read when scraped; timings and sizes go to an observer (http/metrics.ts feeds
 * them to prom-client histograms), at most once per frame or decision, never per record.
 * http/metrics.ts renders all of it at `GET /metrics`.
 */
import type { AggregatorStats } from '../aggregate/aggregator.ts';
import type { IntakeStats } from '../ingest/intake.ts';
import type { InvalidationBudgetStats } from '../invalidate/invalidation-budget.ts';
import { emptyHandoffCounters } from '../membership/handoff.ts';

/** What the gauges read of one app's state (AppState has it). */
export interface AppCounts {
  aggregator: { readonly stats: AggregatorStats };
  limits: { readonly size: number; readonly refused: number };
}

/** Where the core's timings and sizes go. */
export interface MetricsObserver {
  /** a promotion went out: its fan-out time and, for an automatic one, its detection latency */
  promoted(app: string, fanoutMs: number, detectionMs: number | undefined): void;
  /** an SDK's invalidation was acked this long after its request */
  invalidationAcked(app: string, ms: number): void;
  /** a report frame of this many bytes arrived */
  reportFrame(app: string, bytes: number): void;
}

const NO_OBSERVER: MetricsObserver = { promoted() {}, invalidationAcked() {}, reportFrame() {} };

export class HubMetrics {
  /** set by startHub to the /metrics registry @default none (nothing observed) */
  observer: MetricsObserver = NO_OBSERVER;
  reports = 0;
  records = 0;
  promotions = 0;
  demotions = 0;
  invalidations = 0;
  /** SDK invalidations dropped without an ack (over the pending bound, or at shutdown): their writers time out */
  invalidationsDropped = 0;
  /** acks that fenced at least one instance (its lease lapsed instead of a confirmation) */
  invalidationsFenced = 0;
  slowConsumers = 0;
  protocolErrors = 0;
  connectionsAccepted = 0;
  /** Resyncs answered by an earlier Snapshot instead of their own (rate limit per connection) */
  resyncsCoalesced = 0;
  httpRequests = 0;
  /** value push: Fills sent, Pushes accepted and broadcast, Pushes discarded (stale version, not asked, key not shared) */
  fills = 0;
  pushesAccepted = 0;
  pushesDiscarded = 0;
  /** of the discarded: over maxPushBytes */
  pushesOversized = 0;
  /** updates (invalidations carrying the new value) broadcast with their value / refused for size (plain invalidation) */
  updatesPushed = 0;
  updatesOversized = 0;
  /** updates broadcast as plain invalidations: another write of the key went out after the writer's mark */
  updatesSuperseded = 0;
  /** invalidations sent because the session that supplied a pushed value left */
  orphanInvalidations = 0;
  /** invalidations of a pushed value by its pusher, acked without a broadcast: the value was superseded already */
  pushedInvalidationsMoot = 0;
  /** protocol 3 (holders.ts): keys registered by Holds (refusals included), invalidations sent to holders only, Drop frames sent */
  holds = 0;
  invalidationsDirected = 0;
  drops = 0;
  /** Hold keys refused: over a session's or address's share, not owned here, the app's directory full */
  readonly holdsRefused = { share: 0, owner: 0, full: 0 };
  /** reads of hot keys the SDKs answered from their local caches / loader calls they made for hot keys (from their reports) */
  localHits = 0;
  loaderCalls = 0;
  /** window handoff between hubs (handoff.ts) */
  readonly handoff = emptyHandoffCounters();

  promoted(app: string, fanoutMs: number, detectionMs: number | undefined): void {
    this.observer.promoted(app, fanoutMs, detectionMs);
  }

  invalidationAcked(app: string, ms: number): void {
    this.observer.invalidationAcked(app, ms);
  }

  reportFrame(app: string, bytes: number): void {
    this.observer.reportFrame(app, bytes);
  }
}

/** What the flood protections did (summed over apps and connections), for /metrics. */
export interface ProtectionCounters {
  /** crossings not promoted: the only reporter's connection was out of its solo budget */
  promotionsSoloRefused: number;
  /** crossings not promoted: the app's hot set was full of stronger keys */
  promotionsCapRefused: number;
  /** hot keys demoted to make room for a stronger one */
  promotionsDisplaced: number;
  /** new keys not tracked: their session held its part of a full key table (fair admission) */
  keysRefused: number;
  /** keys evicted from sessions holding their part of a full key table */
  keysEvictedOverShare: number;
  /** of `keysRefused`: the session was under its part, its remote address at the address's (many sessions of one address) */
  keysRefusedForAddress: number;
  /** remote addresses holding keys, summed over the apps' key tables (a gauge) */
  keyShareAddresses: number;
  /** frames that waited in the fair intake / flows paused for their backlog / drains that yielded */
  intakeQueued: number;
  intakePaused: number;
  intakeYields: number;
  /** bytes waiting in the intake now */
  intakeQueuedBytes: number;
  /** invalidation requests that waited for their connection's budget / connections closed 4012 */
  invalidationsDelayed: number;
  invalidationsRateLimited: number;
  resyncsCoalesced: number;
}

export interface Gauges {
  connections: number;
  apps: number;
  keysTracked: number;
  hotKeys: number;
  dropped: number;
  evicted: number;
  ignored: number;
  heapUsed: number;
  rss: number;
  ingestRate: number;
  /** keys with a QPS history for the key detail chart */
  qpsHistoryKeys: number;
  /** rate-limited keys whose limit this hub divides (rate-splits.ts) */
  limitedKeys: number;
  /** new limited keys refused because an app tracked its most (MAX_LIMITED_KEYS) */
  limitedKeysRefused: number;
}

/** The flood protections' counters, summed over the apps. */
export function protectionCounters(
  apps: Iterable<AppCounts>,
  intake: IntakeStats,
  budget: InvalidationBudgetStats,
  metrics: HubMetrics,
): ProtectionCounters {
  let soloRefused = 0;
  let capRefused = 0;
  let displaced = 0;
  let keysRefused = 0;
  let keysEvictedOverShare = 0;
  let keysRefusedForAddress = 0;
  let keyShareAddresses = 0;
  for (const app of apps) {
    const stats = app.aggregator.stats;
    soloRefused += stats.soloRefused;
    capRefused += stats.capRefused;
    displaced += stats.displaced;
    keysRefused += stats.keysRefused;
    keysEvictedOverShare += stats.evictedOverShare;
    keysRefusedForAddress += stats.keysRefusedForAddress;
    keyShareAddresses += stats.shareAddresses;
  }
  return {
    promotionsSoloRefused: soloRefused,
    promotionsCapRefused: capRefused,
    promotionsDisplaced: displaced,
    keysRefused,
    keysEvictedOverShare,
    keysRefusedForAddress,
    keyShareAddresses,
    intakeQueued: intake.queued,
    intakePaused: intake.paused,
    intakeYields: intake.yields,
    intakeQueuedBytes: intake.queuedBytes,
    invalidationsDelayed: budget.delayed,
    invalidationsRateLimited: budget.refused,
    resyncsCoalesced: metrics.resyncsCoalesced,
  };
}

/** The gauges at scrape time: the apps' key counts summed, the process's memory, the hub's own figures. */
export function readGauges(
  apps: readonly AppCounts[],
  hub: { connections: number; ingestRate: number; qpsHistoryKeys: number },
): Gauges {
  let keysTracked = 0;
  let hotKeys = 0;
  let dropped = 0;
  let evicted = 0;
  let ignored = 0;
  let limitedKeys = 0;
  let limitedKeysRefused = 0;
  for (const app of apps) {
    limitedKeys += app.limits.size;
    limitedKeysRefused += app.limits.refused;
    const stats = app.aggregator.stats;
    keysTracked += stats.keys;
    hotKeys += stats.hot;
    dropped += stats.dropped;
    evicted += stats.evicted;
    ignored += stats.ignored;
  }
  const mem = process.memoryUsage();
  return {
    connections: hub.connections,
    apps: apps.length,
    keysTracked,
    hotKeys,
    dropped,
    evicted,
    ignored,
    heapUsed: mem.heapUsed,
    rss: mem.rss,
    ingestRate: hub.ingestRate,
    qpsHistoryKeys: hub.qpsHistoryKeys,
    limitedKeys,
    limitedKeysRefused,
  };
}
