/**
 * "Top hot keys over the last hour / day": folds the history stream (promotions, demotions,
 * invalidations, oldest first) into one line per key. Pure, tested in Node.
 */
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { rowId } from './row-id.ts';

export interface KeySummary {
  app: string;
  key: string;
  promotions: number;
  invalidations: number;
  /** highest QPS seen in any event of the key */
  peakQps: number;
  /** ms hot within the range (a promotion without demotion counts until `now`) */
  hotMs: number;
  firstAt: number;
  lastAt: number;
  /** mean detection latency of its promotions, ms (undefined when none was measured) */
  meanLatencyMs: number | undefined;
}

/** @param [limit=500] summaries returned, most promoted (then hottest) first */
export function summarizeHistory(events: readonly FeedEvent[], now: number, limit = 500): KeySummary[] {
  const byKey = new Map<
    string,
    KeySummary & { hotSince: number | undefined; latencySum: number; latencyCount: number }
  >();
  for (const e of events) {
    const id = rowId(e.app, e.key);
    let s = byKey.get(id);
    if (!s) {
      s = {
        app: e.app,
        key: e.key,
        promotions: 0,
        invalidations: 0,
        peakQps: 0,
        hotMs: 0,
        firstAt: e.at,
        lastAt: e.at,
        meanLatencyMs: undefined,
        hotSince: undefined,
        latencySum: 0,
        latencyCount: 0,
      };
      byKey.set(id, s);
    }
    s.lastAt = Math.max(s.lastAt, e.at);
    s.firstAt = Math.min(s.firstAt, e.at);
    s.peakQps = Math.max(s.peakQps, e.qps);
    if (e.type === 'promote') {
      s.promotions++;
      // a renewal while hot is not a new hot period
      if (s.hotSince === undefined) s.hotSince = e.at;
      if (e.latencyMs !== undefined) {
        s.latencySum += e.latencyMs;
        s.latencyCount++;
      }
    } else if (e.type === 'demote') {
      if (s.hotSince !== undefined) s.hotMs += Math.max(0, e.at - s.hotSince);
      s.hotSince = undefined;
    } else s.invalidations++;
  }
  const out: KeySummary[] = [];
  for (const s of byKey.values()) {
    out.push({
      app: s.app,
      key: s.key,
      promotions: s.promotions,
      invalidations: s.invalidations,
      peakQps: s.peakQps,
      hotMs: s.hotMs + (s.hotSince !== undefined ? Math.max(0, now - s.hotSince) : 0),
      firstAt: s.firstAt,
      lastAt: s.lastAt,
      meanLatencyMs: s.latencyCount > 0 ? s.latencySum / s.latencyCount : undefined,
    });
  }
  out.sort((a, b) => b.promotions - a.promotions || b.peakQps - a.peakQps || (a.key < b.key ? -1 : 1));
  return out.slice(0, limit);
}
