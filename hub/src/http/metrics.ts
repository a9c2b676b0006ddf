/**
 * `GET /metrics` in the Prometheus text format (version 0.0.4): the core's counters and gauges
 * (core/hub-metrics.ts), the live feed's and the coordinator's.
 */
import type { CoordinatorCounters } from '../cluster/coordinator.ts';
import type { Gauges, HubMetrics } from '../core/hub-metrics.ts';

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

function line(out: string[], name: string, type: 'counter' | 'gauge', help: string, value: number): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${Number.isFinite(value) ? value : 0}`);
}

/**
 * @param feed the dashboard feed's counters; omitted when the hub serves no live feed
 * @param cluster the coordinator's loss counters; omitted when the hub runs alone
 */
export function renderMetrics(m: HubMetrics, g: Gauges, feed?: FeedCounters, cluster?: CoordinatorCounters): string {
  const out: string[] = [];
  line(out, 'hotkey_connections', 'gauge', 'Open client connections (SDK sessions past Hello).', g.connections);
  line(out, 'hotkey_connections_accepted_total', 'counter', 'Client connections accepted.', m.connectionsAccepted);
  line(out, 'hotkey_apps', 'gauge', 'Apps with state on this hub.', g.apps);
  line(out, 'hotkey_reports_total', 'counter', 'Report frames received.', m.reports);
  line(out, 'hotkey_records_ingested_total', 'counter', 'Key records received in reports.', m.records);
  line(out, 'hotkey_ingest_rate', 'gauge', 'Records ingested per second over the last status period.', g.ingestRate);
  line(out, 'hotkey_promotions_total', 'counter', 'Keys promoted to hot.', m.promotions);
  line(out, 'hotkey_demotions_total', 'counter', 'Hot keys demoted.', m.demotions);
  line(out, 'hotkey_invalidations_total', 'counter', 'Invalidations broadcast.', m.invalidations);
  line(out, 'hotkey_invalidation_ack_timeouts_total', 'counter', 'Invalidation acks sent before every SDK applied.', m.invalidationTimeouts);
  line(out, 'hotkey_keys_tracked', 'gauge', 'Keys with a sliding window on this hub.', g.keysTracked);
  line(out, 'hotkey_hot_keys', 'gauge', 'Hot keys owned by this hub.', g.hotKeys);
  line(out, 'hotkey_records_dropped_total', 'counter', 'Records dropped because the key table was full of hot keys.', g.dropped);
  line(out, 'hotkey_keys_evicted_total', 'counter', 'Keys evicted from a full key table.', g.evicted);
  line(out, 'hotkey_records_ignored_total', 'counter', 'Records whose key matches no rule.', g.ignored);
  line(out, 'hotkey_slow_consumers_total', 'counter', 'Sockets closed because their send buffer overflowed.', m.slowConsumers);
  line(out, 'hotkey_protocol_errors_total', 'counter', 'Connections closed for a protocol error.', m.protocolErrors);
  line(out, 'hotkey_http_requests_total', 'counter', 'HTTP requests served.', m.httpRequests);
  line(out, 'hotkey_qps_history_keys', 'gauge', 'Keys with a recent QPS history kept for the key detail chart.', g.qpsHistoryKeys);
  if (feed !== undefined) {
    line(out, 'hotkey_dashboard_pages', 'gauge', 'Dashboard pages connected to the live feed.', feed.pages);
    line(out, 'hotkey_dashboard_frames_sent_total', 'counter', 'Live feed frames sent to dashboard pages.', feed.framesSent);
    line(out, 'hotkey_dashboard_bytes_sent_total', 'counter', 'Live feed bytes sent to dashboard pages.', feed.bytesSent);
    line(out, 'hotkey_dashboard_slow_dropped_total', 'counter', 'Dashboard pages dropped for reading too slowly.', feed.slowDropped);
    line(out, 'hotkey_dashboard_skipped_rounds_total', 'counter', 'Feed rounds skipped for a page with a full socket buffer.', feed.skippedTicks);
    line(out, 'hotkey_dashboard_refused_total', 'counter', 'Dashboard pages refused (token, page limit).', feed.refused);
  }
  if (cluster !== undefined) {
    line(out, 'hotkey_cluster_events_dropped_total', 'counter', 'Events that could not be published to the other hubs.', cluster.droppedEvents);
    line(out, 'hotkey_cluster_history_dropped_total', 'counter', 'History entries dropped or lost on the way to Redis.', cluster.droppedHistory);
    line(out, 'hotkey_cluster_history_buffered', 'gauge', 'History entries waiting for Redis.', cluster.bufferedHistory);
    line(out, 'hotkey_cluster_rules_rejected_total', 'counter', 'Rule sets from Redis that failed validation.', cluster.rejectedRules);
    line(out, 'hotkey_cluster_bad_messages_total', 'counter', 'Pub/sub messages from Redis that were not a valid event or status.', cluster.badMessages);
  }
  line(out, 'hotkey_heap_used_bytes', 'gauge', 'V8 heap in use.', g.heapUsed);
  line(out, 'hotkey_rss_bytes', 'gauge', 'Resident set size.', g.rss);
  return out.join('\n') + '\n';
}
