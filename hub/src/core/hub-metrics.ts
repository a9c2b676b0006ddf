/**
 * What the hub core counts as it works: plain numbers bumped inline on the hot path (HubMetrics)
 * and the gauges read when scraped. http/metrics.ts renders both at `GET /metrics`.
 */

/** A histogram with fixed upper bounds (Prometheus `le` buckets, rendered cumulative by http/metrics.ts). */
export class Histogram {
  readonly bounds: readonly number[];
  /** observations per bucket (not cumulative); the last slot counts those over every bound */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]!++;
  }
}

export class HubMetrics {
  reports = 0;
  records = 0;
  promotions = 0;
  demotions = 0;
  invalidations = 0;
  /** SDK invalidations dropped without an ack (over the pending bound, or at shutdown): their writers time out */
  invalidationsDropped = 0;
  /** acks that fenced at least one instance (its lease lapsed instead of a confirmation) */
  invalidationsFenced = 0;
  /** ms from an SDK's InvalidateRequest to its Ack */
  readonly invalidationLag = new Histogram([1, 5, 10, 25, 50, 100, 250, 500, 1000, 2000, 5000]);
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
