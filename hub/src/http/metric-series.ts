/**
 * The catalogue of the hub's unlabelled `hotkey_*` series at `GET /metrics`: each series' name,
 * type, help text and what it reads (the core's counters, the gauges, and the optional sources:
 * admission, the live feed, the cluster store). Names are stable: dashboards and alerts query
 * them. metrics.ts registers them with prom-client beside the labelled histograms.
 */
import type { CoordinatorCounters } from '../core/coordinator.ts';
import type { Gauges, HubMetrics, ProtectionCounters } from '../core/observe/hub-metrics.ts';
import { handoffFamilies } from './handoff-series.ts';

/** The live dashboard feed's counters (DashboardFeed.stats plus the pages connected). */
export interface FeedCounters {
  /** pages live on `/live` now */
  pages: number;
  framesSent: number;
  bytesSent: number;
  /** pages closed with 4008 because their socket buffer passed the hard limit */
  slowDropped: number;
  /** rounds skipped for a page whose socket buffer was over the soft limit */
  skippedTicks: number;
  /** pages refused (wrong token, too many pages) */
  refused: number;
}

/** What the server's admission refused (server/socket-server.ts, server/admission.ts). */
export interface AdmissionMetrics {
  /** WebSocket handshakes refused for their Origin */
  originRefused: number;
  /** sockets closed to keep the caps on unauthenticated sockets (hub-wide, per address) */
  unauthenticatedEvicted: number;
  /** sockets closed for sending more than the pre-Hello budget */
  preHelloOverBudget: number;
  /** sockets open without an accepted Hello now */
  unauthenticated: number;
  /** HTTP connections without a complete first request now / closed to make room */
  httpPending: number;
  httpEvicted: number;
}

/** What a scrape reads besides the counters: each optional part is omitted when the hub lacks it. */
export interface MetricsSources {
  gauges: Gauges;
  protection: ProtectionCounters;
  /** omitted when the hub has no network server (an embedded core) */
  admission?: AdmissionMetrics | undefined;
  /** omitted when the hub serves no live feed */
  feed?: FeedCounters | undefined;
  /** the coordinator's loss counters; omitted when the hub runs alone */
  cluster?: CoordinatorCounters | undefined;
}

export type Snapshot = { m: HubMetrics; s: MetricsSources };
export type Family = {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  read: (x: Snapshot) => number | undefined;
  group?: 'feed' | 'cluster' | 'admission';
};

/** The unlabelled series, read from the counters and sources at each scrape; `undefined` omits one. */
export const CORE_FAMILIES: Family[] = [
  {
    name: 'hotkey_connections',
    type: 'gauge',
    help: 'Open client connections (SDK sessions past Hello).',
    read: (x) => x.s.gauges.connections,
  },
  {
    name: 'hotkey_connections_accepted_total',
    type: 'counter',
    help: 'Client connections accepted.',
    read: (x) => x.m.connectionsAccepted,
  },
  { name: 'hotkey_apps', type: 'gauge', help: 'Apps with state on this hub.', read: (x) => x.s.gauges.apps },
  { name: 'hotkey_reports_total', type: 'counter', help: 'Report frames received.', read: (x) => x.m.reports },
  {
    name: 'hotkey_records_ingested_total',
    type: 'counter',
    help: 'Key records received in reports.',
    read: (x) => x.m.records,
  },
  {
    name: 'hotkey_ingest_rate',
    type: 'gauge',
    help: 'Records ingested per second over the last status period.',
    read: (x) => x.s.gauges.ingestRate,
  },
  { name: 'hotkey_promotions_total', type: 'counter', help: 'Keys promoted to hot.', read: (x) => x.m.promotions },
  {
    name: 'hotkey_local_hits_total',
    type: 'counter',
    help: "Reads of this hub's hot keys the SDKs answered from their local caches (reported by the SDKs).",
    read: (x) => x.m.localHits,
  },
  {
    name: 'hotkey_loader_calls_total',
    type: 'counter',
    help: "Loader calls the SDKs made for this hub's hot keys: reads that reached the store (reported by the SDKs).",
    read: (x) => x.m.loaderCalls,
  },
  {
    name: 'hotkey_push_fills_total',
    type: 'counter',
    help: 'Value push: Fill requests sent (one SDK asked to load a shared key).',
    read: (x) => x.m.fills,
  },
  {
    name: 'hotkey_pushes_accepted_total',
    type: 'counter',
    help: 'Value push: pushed values accepted and broadcast.',
    read: (x) => x.m.pushesAccepted,
  },
  {
    name: 'hotkey_pushes_discarded_total',
    type: 'counter',
    help: 'Value push: pushes discarded (loaded before an invalidation, from a session not asked, key not shared, over maxPushBytes).',
    read: (x) => x.m.pushesDiscarded,
  },
  {
    name: 'hotkey_push_updates_total',
    type: 'counter',
    help: 'Value push: writes whose invalidation carried the new value to every SDK.',
    read: (x) => x.m.updatesPushed,
  },
  {
    name: 'hotkey_push_updates_oversized_total',
    type: 'counter',
    help: 'Value push: update values over maxPushBytes, broadcast as plain invalidations (HK_ERR_PUSH_TOO_LARGE).',
    read: (x) => x.m.updatesOversized,
  },
  {
    name: 'hotkey_push_updates_superseded_total',
    type: 'counter',
    help: 'Value push: updates broadcast as plain invalidations because another write of the key went out after the writer read its value.',
    read: (x) => x.m.updatesSuperseded,
  },
  {
    name: 'hotkey_push_orphan_invalidations_total',
    type: 'counter',
    help: 'Value push: invalidations of pushed values whose supplying session left (nobody vouched for them any more).',
    read: (x) => x.m.orphanInvalidations,
  },
  {
    name: 'hotkey_push_vouch_invalidations_moot_total',
    type: 'counter',
    help: 'Value push: invalidations of a pushed value by its pusher, acked without a broadcast (already superseded).',
    read: (x) => x.m.pushedInvalidationsMoot,
  },
  { name: 'hotkey_demotions_total', type: 'counter', help: 'Hot keys demoted.', read: (x) => x.m.demotions },
  {
    name: 'hotkey_invalidations_total',
    type: 'counter',
    help: 'Invalidations broadcast.',
    read: (x) => x.m.invalidations,
  },
  {
    name: 'hotkey_invalidations_dropped_total',
    type: 'counter',
    help: 'SDK invalidations dropped without an ack (pending bound, shutdown): their writers time out.',
    read: (x) => x.m.invalidationsDropped,
  },
  {
    name: 'hotkey_invalidations_fenced_total',
    type: 'counter',
    help: 'Invalidation acks that fenced an instance (its lease lapsed instead of a confirmation).',
    read: (x) => x.m.invalidationsFenced,
  },
  {
    name: 'hotkey_keys_tracked',
    type: 'gauge',
    help: 'Keys with a sliding window on this hub.',
    read: (x) => x.s.gauges.keysTracked,
  },
  { name: 'hotkey_hot_keys', type: 'gauge', help: 'Hot keys owned by this hub.', read: (x) => x.s.gauges.hotKeys },
  {
    name: 'hotkey_records_dropped_total',
    type: 'counter',
    help: 'Records dropped because the key table was full of hot keys.',
    read: (x) => x.s.gauges.dropped,
  },
  {
    name: 'hotkey_keys_evicted_total',
    type: 'counter',
    help: 'Keys evicted from a full key table.',
    read: (x) => x.s.gauges.evicted,
  },
  {
    name: 'hotkey_records_ignored_total',
    type: 'counter',
    help: 'Records whose key matches no rule.',
    read: (x) => x.s.gauges.ignored,
  },
  {
    name: 'hotkey_limited_keys',
    type: 'gauge',
    help: 'Rate-limited keys whose limit this hub divides among instances.',
    read: (x) => x.s.gauges.limitedKeys,
  },
  {
    name: 'hotkey_limited_keys_refused_total',
    type: 'counter',
    help: 'New rate-limited keys not tracked because an app had its most (their instances keep limit / instances).',
    read: (x) => x.s.gauges.limitedKeysRefused,
  },
  {
    name: 'hotkey_slow_consumers_total',
    type: 'counter',
    help: 'Sockets closed because their send buffer overflowed.',
    read: (x) => x.m.slowConsumers,
  },
  {
    name: 'hotkey_protocol_errors_total',
    type: 'counter',
    help: 'Connections closed for a protocol error.',
    read: (x) => x.m.protocolErrors,
  },
  { name: 'hotkey_http_requests_total', type: 'counter', help: 'HTTP requests served.', read: (x) => x.m.httpRequests },
  {
    name: 'hotkey_qps_history_keys',
    type: 'gauge',
    help: 'Keys with a recent QPS history kept for the key detail chart.',
    read: (x) => x.s.gauges.qpsHistoryKeys,
  },
  {
    name: 'hotkey_dashboard_pages',
    type: 'gauge',
    help: 'Dashboard pages connected to the live feed.',
    read: (x) => x.s.feed?.pages,
    group: 'feed',
  },
  {
    name: 'hotkey_dashboard_frames_sent_total',
    type: 'counter',
    help: 'Live feed frames sent to dashboard pages.',
    read: (x) => x.s.feed?.framesSent,
    group: 'feed',
  },
  {
    name: 'hotkey_dashboard_bytes_sent_total',
    type: 'counter',
    help: 'Live feed bytes sent to dashboard pages.',
    read: (x) => x.s.feed?.bytesSent,
    group: 'feed',
  },
  {
    name: 'hotkey_dashboard_slow_dropped_total',
    type: 'counter',
    help: 'Dashboard pages dropped for reading too slowly.',
    read: (x) => x.s.feed?.slowDropped,
    group: 'feed',
  },
  {
    name: 'hotkey_dashboard_skipped_rounds_total',
    type: 'counter',
    help: 'Feed rounds skipped for a page with a full socket buffer.',
    read: (x) => x.s.feed?.skippedTicks,
    group: 'feed',
  },
  {
    name: 'hotkey_dashboard_refused_total',
    type: 'counter',
    help: 'Dashboard pages refused (token, page limit).',
    read: (x) => x.s.feed?.refused,
    group: 'feed',
  },
  {
    name: 'hotkey_cluster_events_dropped_total',
    type: 'counter',
    help: 'Events that could not be published to the other hubs.',
    read: (x) => x.s.cluster?.droppedEvents,
    group: 'cluster',
  },
  {
    name: 'hotkey_cluster_history_dropped_total',
    type: 'counter',
    help: 'History entries dropped or lost on the way to Redis.',
    read: (x) => x.s.cluster?.droppedHistory,
    group: 'cluster',
  },
  {
    name: 'hotkey_cluster_history_buffered',
    type: 'gauge',
    help: 'History entries waiting for Redis.',
    read: (x) => x.s.cluster?.bufferedHistory,
    group: 'cluster',
  },
  {
    name: 'hotkey_cluster_rules_rejected_total',
    type: 'counter',
    help: 'Rule sets from Redis that failed validation.',
    read: (x) => x.s.cluster?.rejectedRules,
    group: 'cluster',
  },
  {
    name: 'hotkey_cluster_bad_messages_total',
    type: 'counter',
    help: 'Pub/sub messages from Redis that were not a valid event or status.',
    read: (x) => x.s.cluster?.badMessages,
    group: 'cluster',
  },
  {
    name: 'hotkey_cluster_handoffs_dropped_total',
    type: 'counter',
    help: 'Window handoff chunks that could not be written to Redis (their windows are lost).',
    read: (x) => x.s.cluster?.droppedHandoffs,
    group: 'cluster',
  },
  protectionFamily(
    'counter',
    'hotkey_keys_refused_total',
    'New keys not tracked: their connection held its fair part of the full key table.',
    (p) => p.keysRefused,
  ),
  protectionFamily(
    'counter',
    'hotkey_keys_evicted_over_share_total',
    'Keys evicted from connections holding their fair part of the full key table.',
    (p) => p.keysEvictedOverShare,
  ),
  protectionFamily(
    'counter',
    'hotkey_keys_refused_address_total',
    'New keys not tracked: their connection was under its part, but its remote address held its fair part of the full key table.',
    (p) => p.keysRefusedForAddress,
  ),
  protectionFamily(
    'gauge',
    'hotkey_key_table_addresses',
    'Remote addresses (IPv4, IPv6 /64) whose connections hold keys of the key tables, summed over apps.',
    (p) => p.keyShareAddresses,
  ),
  protectionFamily(
    'counter',
    'hotkey_promotions_solo_refused_total',
    'Crossings not promoted: the only reporter was out of its solo budget.',
    (p) => p.promotionsSoloRefused,
  ),
  protectionFamily(
    'counter',
    'hotkey_promotions_cap_refused_total',
    "Crossings not promoted: the app's hot set was full of stronger keys.",
    (p) => p.promotionsCapRefused,
  ),
  protectionFamily(
    'counter',
    'hotkey_promotions_displaced_total',
    'Hot keys demoted to make room for a stronger one.',
    (p) => p.promotionsDisplaced,
  ),
  protectionFamily(
    'counter',
    'hotkey_intake_queued_total',
    'Frames that waited in the fair intake.',
    (p) => p.intakeQueued,
  ),
  protectionFamily(
    'counter',
    'hotkey_intake_paused_total',
    'Connections paused (not read) for their intake backlog.',
    (p) => p.intakePaused,
  ),
  protectionFamily(
    'counter',
    'hotkey_intake_yields_total',
    'Intake drains that yielded to the event loop with work left.',
    (p) => p.intakeYields,
  ),
  protectionFamily(
    'gauge',
    'hotkey_intake_queued_bytes',
    'Bytes waiting in the fair intake.',
    (p) => p.intakeQueuedBytes,
  ),
  protectionFamily(
    'counter',
    'hotkey_invalidations_delayed_total',
    "Invalidation requests that waited for their connection's budget.",
    (p) => p.invalidationsDelayed,
  ),
  protectionFamily(
    'counter',
    'hotkey_invalidations_rate_limited_total',
    'Connections closed (4012) for overflowing their invalidation queue.',
    (p) => p.invalidationsRateLimited,
  ),
  protectionFamily(
    'counter',
    'hotkey_resyncs_coalesced_total',
    'Resyncs answered by a Snapshot already due (rate limit per connection).',
    (p) => p.resyncsCoalesced,
  ),
  admissionFamily(
    'counter',
    'hotkey_ws_origin_refused_total',
    'WebSocket handshakes refused (403) for their Origin.',
    (a) => a.originRefused,
  ),
  admissionFamily(
    'counter',
    'hotkey_ws_unauthenticated_evicted_total',
    'Sockets closed (4009) to keep the caps on sockets without a Hello.',
    (a) => a.unauthenticatedEvicted,
  ),
  admissionFamily(
    'counter',
    'hotkey_ws_prehello_over_budget_total',
    'Sockets closed (4004) for sending more than the pre-Hello budget.',
    (a) => a.preHelloOverBudget,
  ),
  admissionFamily(
    'gauge',
    'hotkey_ws_unauthenticated',
    'Sockets open without an accepted Hello.',
    (a) => a.unauthenticated,
  ),
  admissionFamily(
    'gauge',
    'hotkey_http_pending_connections',
    'HTTP connections without a complete first request.',
    (a) => a.httpPending,
  ),
  admissionFamily(
    'counter',
    'hotkey_http_pending_evicted_total',
    'HTTP connections closed to make room for newer ones.',
    (a) => a.httpEvicted,
  ),
  ...handoffFamilies<Family>((name, help, read) => ({ name, type: 'counter', help, read: (x) => read(x.m.handoff) })),
  { name: 'hotkey_heap_used_bytes', type: 'gauge', help: 'V8 heap in use.', read: (x) => x.s.gauges.heapUsed },
  { name: 'hotkey_rss_bytes', type: 'gauge', help: 'Resident set size.', read: (x) => x.s.gauges.rss },
];

function protectionFamily(
  type: Family['type'],
  name: string,
  help: string,
  read: (p: ProtectionCounters) => number,
): Family {
  return { name, type, help, read: (x) => read(x.s.protection) };
}

function admissionFamily(
  type: Family['type'],
  name: string,
  help: string,
  read: (a: AdmissionMetrics) => number,
): Family {
  const admission = (x: Snapshot) => (x.s.admission === undefined ? undefined : read(x.s.admission));
  return { name, type, help, read: admission, group: 'admission' };
}
