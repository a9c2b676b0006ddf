/**
 * The status a hub publishes for the others every `statusIntervalMs` (GET /api/cluster, the
 * dashboard's hub list): identity, load, memory, the store's health and bounded tops of its hot
 * keys and connections. It also keeps the ingest rate, measured between two publications.
 */
import type { HotKeyRow, InstanceRow } from './app-rows.ts';
import type { HubStatus } from '../coordinator.ts';

/** hot keys and connections one status carries at most (a status is sent every second to every hub) */
const STATUS_HOT_MAX = 100;
const STATUS_INSTANCES_MAX = 200;

/** What the core supplies for one status. */
export interface StatusParts {
  id: string;
  url: string;
  startedAt: number;
  connections: number;
  /** the coordinator's store is unreachable */
  degraded: boolean;
  clustered: boolean;
  /** hot keys this hub owns, highest QPS first */
  hotKeys: () => HotKeyRow[];
  /** at most `limit` SDK connections */
  instanceRows: (limit: number) => InstanceRow[];
}

export class StatusClock {
  #lastAt: number;
  #lastRecords = 0;
  #ingestRate = 0;

  constructor(startedAt: number) {
    this.#lastAt = startedAt;
  }

  /** records ingested per second over the last status interval */
  get ingestRate(): number {
    return this.#ingestRate;
  }

  due(now: number, intervalMs: number): boolean {
    return now - this.#lastAt >= intervalMs;
  }

  /** Rolls the ingest rate over from the records counter and builds the status to publish. */
  next(now: number, records: number, parts: StatusParts): HubStatus {
    const elapsed = Math.max(1, now - this.#lastAt);
    this.#ingestRate = Math.round(((records - this.#lastRecords) * 1000) / elapsed);
    this.#lastRecords = records;
    this.#lastAt = now;
    const mem = process.memoryUsage();
    return {
      id: parts.id,
      url: parts.url,
      startedAt: parts.startedAt,
      ingestRate: this.#ingestRate,
      connections: parts.connections,
      heapUsed: mem.heapUsed,
      rss: mem.rss,
      redis: parts.degraded ? 'down' : parts.clustered ? 'ok' : 'none',
      hotKeys: parts
        .hotKeys()
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
      instanceRows: parts.instanceRows(STATUS_INSTANCES_MAX).map(({ hub: _hub, ...row }) => row),
      updatedAt: now,
    };
  }
}
