/**
 * The cluster as one table: this hub's own rows, exact, plus every other hub's rows from its latest
 * status. The HTTP API (`/api/hot`, `/api/instances`) and the live dashboard feed both read the
 * cluster through these two functions, so each row names its hub the same way (`hub`) everywhere.
 */
import type { Coordinator } from '../core/coordinator.ts';
import type { HotKeyRow, InstanceRow } from '../core/observe/app-rows.ts';
import type { KeyPrivacy } from '../core/observe/key-privacy.ts';

/** What the merge reads from this hub (HubCore satisfies it). */
export interface ClusterSource {
  readonly id: string;
  readonly coordinator: Coordinator;
  hotKeys(app?: string): HotKeyRow[];
  instanceRows(app?: string, limit?: number): InstanceRow[];
  /** how keys are shown outside the core (core/observe/key-privacy.ts) */
  readonly keyPrivacy: KeyPrivacy;
}

/** a row's identity in the cluster table (and in a page's view of it) */
export const rowId = (app: string, key: string): string => `${app}\u0000${key}`;

/**
 * Every hot key of the cluster (of `app` when given), hottest first. A key two hubs both report
 * while they briefly disagree on its owner is listed once, this hub's row winning. Other hubs'
 * rows carry `ttlMs: 0`: their statuses do not say how long the promotion has left.
 */
export function clusterHotRows(source: ClusterSource, app?: string): HotKeyRow[] {
  const rows = new Map<string, HotKeyRow>();
  for (const row of source.hotKeys(app)) rows.set(rowId(row.app, row.key), row);
  for (const status of source.coordinator.statuses()) {
    if (status.id === source.id) continue;
    for (const h of status.hotKeys) {
      if (app !== undefined && h.app !== app) continue;
      const id = rowId(h.app, h.key);
      if (!rows.has(id))
        rows.set(id, {
          app: h.app,
          key: h.key,
          qps: h.qps,
          threshold: h.threshold,
          since: h.since,
          instances: h.instances,
          hub: status.id,
          ttlMs: 0,
          ...(typeof h.localPct === 'number' && typeof h.loadsPerSec === 'number'
            ? { localPct: h.localPct, loadsPerSec: h.loadsPerSec }
            : {}),
        });
    }
  }
  return [...rows.values()].sort((a, b) => b.qps - a.qps);
}

/** clusterHotRows with each key as its app's privacy shows it: what the API and the feed hand out. */
export function shownHotRows(source: ClusterSource, app?: string): HotKeyRow[] {
  const privacy = source.keyPrivacy;
  return clusterHotRows(source, app).map((r) =>
    privacy.mode(r.app) === 'plain' ? r : { ...r, key: privacy.show(r.app, r.key) },
  );
}

/** Every SDK connection of the cluster (of `app` when given), this hub's first, at most `limit`. */
export function clusterInstanceRows(source: ClusterSource, app?: string, limit = Infinity): InstanceRow[] {
  const rows = source.instanceRows(app, limit);
  for (const status of source.coordinator.statuses()) {
    if (status.id === source.id) continue;
    for (const i of status.instanceRows) {
      if (app !== undefined && i.app !== app) continue;
      if (rows.length >= limit) return rows;
      rows.push({
        app: i.app,
        instance: i.instance,
        host: i.host,
        sdk: i.sdk,
        lastReport: i.lastReport,
        connectedAt: i.connectedAt,
        hub: status.id,
      });
    }
  }
  return rows;
}
