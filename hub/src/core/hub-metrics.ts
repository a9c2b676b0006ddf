/**
 * What the hub core counts as it works: plain numbers bumped inline on the hot path (HubMetrics)
 * and the gauges read when scraped. http/metrics.ts renders both at `GET /metrics`.
 */

export class HubMetrics {
  reports = 0;
  records = 0;
  promotions = 0;
  demotions = 0;
  invalidations = 0;
  /** invalidation acks sent before every SDK applied (timeout or pending bound) */
  invalidationTimeouts = 0;
  slowConsumers = 0;
  protocolErrors = 0;
  connectionsAccepted = 0;
  httpRequests = 0;
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
}
