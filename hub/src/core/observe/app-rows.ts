/**
 * Each app's state as the HTTP API, the dashboard feed and the periodic status read it: one app
 * in numbers, its hot keys with what local caching saves on them, its SDK connections.
 */
import type { AppState } from '../apps.ts';

/** A hot key as the API and status show it. */
export interface HotKeyRow {
  app: string;
  key: string;
  qps: number;
  threshold: number;
  /** ms since epoch of the promotion */
  since: number;
  /** distinct SDK instances reporting it: an estimate (the aggregator's reporter bits), not a count of rows */
  instances: number;
  /** id of the hub that owns (decides) the key */
  hub: string;
  /** ms the promotion lives without renewal (0 when another hub's status reported the row) */
  ttlMs: number;
  /** share of its reads the SDKs answered from their local caches, 0–100 (last second; absent: not reported) */
  localPct?: number;
  /** loader calls per second for it across the SDKs (reads that reached the store) */
  loadsPerSec?: number;
}

/** One SDK connection, on this hub or (from its status) another. */
export interface InstanceRow {
  app: string;
  instance: string;
  host: string;
  sdk: string;
  lastReport: number;
  connectedAt: number;
  hub: string;
}

/** One app on this hub, in numbers (GET /api/apps). */
export interface AppSummary {
  /** distinct SDK instances connected */
  instanceCount: number;
  /** SDK connections (an instance may hold more than one) */
  connections: number;
  keysTracked: number;
  hotCount: number;
  /** the app's last broadcast seq */
  seq: number;
  /** reads of hot keys answered from the SDKs' local caches per second (last second) */
  readsSparedPerSec: number;
}

/** One app on this hub, in numbers. */
export function appSummary(app: AppState): AppSummary {
  const stats = app.aggregator.stats;
  return {
    instanceCount: app.sessionsByInstance.size,
    connections: app.sessions.size,
    keysTracked: stats.keys,
    hotCount: stats.hot,
    seq: app.broadcaster.seq,
    readsSparedPerSec: app.savings.sparedPerSec,
  };
}

/** The hot keys `hub` owns in `apps` (only `appName`'s, if given), highest QPS first. */
export function hotKeyRows(apps: Iterable<AppState>, hub: string, now: number, appName?: string): HotKeyRow[] {
  const rows: HotKeyRow[] = [];
  for (const app of apps) {
    if (appName !== undefined && app.name !== appName) continue;
    for (const v of app.aggregator.hot(now)) {
      const row: HotKeyRow = {
        app: app.name,
        key: v.key,
        qps: v.qps,
        threshold: v.threshold,
        since: v.since,
        instances: v.instances,
        hub,
        ttlMs: v.ttlMs,
      };
      const saved = app.savings.of(v.key);
      if (saved !== undefined) {
        row.localPct = saved.localPct;
        row.loadsPerSec = saved.loadsPerSec;
      }
      rows.push(row);
    }
  }
  return rows.sort((a, b) => b.qps - a.qps);
}

/** The SDK connections to `hub` of `apps` (only `appName`'s, if given), at most `limit`. */
export function instanceRows(apps: Iterable<AppState>, hub: string, appName?: string, limit = Infinity): InstanceRow[] {
  const rows: InstanceRow[] = [];
  for (const app of apps) {
    if (appName !== undefined && app.name !== appName) continue;
    for (const session of app.sessions) {
      if (rows.length >= limit) return rows;
      rows.push({
        app: app.name,
        instance: session.instance,
        host: session.host,
        sdk: session.sdk,
        lastReport: session.lastReport,
        connectedAt: session.connectedAt,
        hub,
      });
    }
  }
  return rows;
}
