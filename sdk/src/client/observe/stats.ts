/**
 * `stats()`: the client's counters in one object. Each part counts its own (the loads, the
 * report scheduler, the caches, the window); this file only gathers them, so that the read path keeps its
 * few counters as plain fields of the client.
 */
import type { HotSet } from '../../cache/hot-set.ts';
import type { LocalCache } from '../../cache/local-cache.ts';
import type { AccessWindow } from '../../counting/window.ts';
import type { AppConfig } from '../report/app-config.ts';
import type { Dispatch } from '../dispatch.ts';
import type { Invalidator } from '../invalidate/invalidator.ts';
import type { HubLinks } from '../links.ts';
import type { HotLoads } from '../read/loads.ts';
import type { PushCounters, ValuePush } from '../read/push.ts';
import type { RateLimits } from '../report/rate-limits.ts';
import type { ReadPath } from '../read/read-path.ts';
import type { ReportScheduler } from '../report/report-scheduler.ts';
import type { RecentReads } from '../read/recent-reads.ts';
import type { Holds } from '../invalidate/holds.ts';
import type { SurgeLocal } from '../read/surge-local.ts';

export interface ClientStats {
  /** get() answered from the local cache */
  hits: number;
  /** get() that called the loader because the key was not hot (or hot without caching, or unleased) */
  misses: number;
  /** of those, hot keys whose hub's lease was not current (cut off, stalled, or refused a renewal) */
  unleased: number;
  /** loads of hot keys (single flight: concurrent callers share one) */
  loads: number;
  /** get() calls that joined a load already in flight */
  coalesced: number;
  loadErrors: number;
  /** background reloads of hot values ahead of their expiry (refresh-ahead) */
  refreshes: number;
  /** refreshes put off because maxLoadsInFlight loads were running */
  refreshesSkipped: number;
  /** get() answered with a value past its cacheTtlMs because its reload failed (stale-if-error) */
  staleServed: number;
  /** hot-key loads that did not settle within loadTimeoutMs */
  loadTimeouts: number;
  /** hot-key loads running / waiting for a slot now, and refused by a full queue (HK_ERR_LOAD_LIMIT) */
  loadsInFlight: number;
  loadsQueued: number;
  loadsRejected: number;
  /** hot-key loads that resolved to `undefined`: returned, never cached */
  undefinedLoads: number;
  /** value push (`push: true` rules), see push.ts */
  push: PushCounters;
  /** Report frames sent / keys in them / reports dropped because the socket was backed up */
  reports: number;
  reportedKeys: number;
  reportsDropped: number;
  hotKeys: number;
  cacheSize: number;
  evictions: number;
  expirations: number;
  /** keys with an exact counter now / admitted / evicted from the counters */
  candidates: number;
  candidatesEvicted: number;
  invalidations: number;
  invalidationsPending: number;
  invalidateTimeouts: number;
  resyncs: number;
  /** hubs with a live, welcomed connection */
  hubs: number;
  /** SDK instances of the app the hub last reported */
  instances: number;
  /** accesses of rate-limited keys refused / admitted by `allow()` (and the ioredis wrapper) */
  rateLimited: number;
  rateAdmitted: number;
  /** local surges (surge-local.ts): keys served before their hub promoted them, now / promoted / then promoted by the hub / dropped unconfirmed */
  surgeLocalKeys: number;
  surgeLocalPromotions: number;
  surgeLocalConfirmed: number;
  surgeLocalDropped: number;
  /** cold reads kept for a load they may answer (recent-reads.ts), now / handed to a load */
  recentReads: number;
  recentReadsUsed: number;
  /** protocol 3 registrations (holds.ts): keys sent in Holds / answered Written (the value read before was thrown away) / refused or lost */
  holdsSent: number;
  holdsWritten: number;
  holdsRefused: number;
}

/** The parts whose counters `stats()` reports, and the hits the client counts itself. */
export interface StatsSources {
  hits: number;
  reads: ReadPath;
  window: AccessWindow;
  loads: HotLoads;
  push: ValuePush;
  reportScheduler: ReportScheduler;
  hot: HotSet;
  cache: LocalCache;
  invalidator: Invalidator;
  dispatch: Dispatch;
  config: AppConfig;
  links: HubLinks;
  limits: RateLimits;
  surge: SurgeLocal | undefined;
  holds: Holds;
  recent: RecentReads;
}

export function collectStats(s: StatsSources): ClientStats {
  const w = s.window.stats();
  const l = s.loads;
  return {
    hits: s.hits + l.hits,
    misses: s.reads.misses,
    unleased: s.reads.unleased,
    loads: l.loads,
    coalesced: l.coalesced,
    loadErrors: s.reads.loadErrors,
    refreshes: l.refreshes,
    refreshesSkipped: l.refreshesSkipped,
    staleServed: l.staleServed,
    loadTimeouts: l.timeouts,
    loadsInFlight: l.inFlight,
    loadsQueued: l.queued,
    loadsRejected: l.rejected,
    undefinedLoads: l.undefinedValues,
    push: { ...s.push.counters },
    reports: s.reportScheduler.reports,
    reportedKeys: s.reportScheduler.reportedKeys,
    reportsDropped: s.reportScheduler.reportsDropped,
    hotKeys: s.hot.size,
    cacheSize: s.cache.size,
    evictions: s.cache.evictions,
    expirations: s.cache.expirations,
    candidates: w.candidates,
    candidatesEvicted: w.evicted,
    invalidations: s.invalidator.count,
    invalidationsPending: s.invalidator.pending,
    invalidateTimeouts: s.invalidator.timeouts,
    resyncs: s.dispatch.resyncs,
    hubs: s.links.size,
    instances: s.config.instances,
    rateLimited: s.limits.rejected,
    rateAdmitted: s.limits.admitted,
    surgeLocalKeys: s.surge?.size ?? 0,
    surgeLocalPromotions: s.surge?.promotions ?? 0,
    surgeLocalConfirmed: s.surge?.confirmed ?? 0,
    surgeLocalDropped: s.surge?.dropped ?? 0,
    recentReads: s.recent.size,
    recentReadsUsed: s.recent.used,
    holdsSent: s.holds.sent,
    holdsWritten: s.holds.written,
    holdsRefused: s.holds.refused,
  };
}
