/**
 * The parts a HotKeyClient is made of and how they are wired to each other: the access window,
 * the hot set and its cache, loads, value push, the read path, the hub links and what handles
 * their frames, invalidations, reports, rate limits and the app's config. Each part gets only
 * the callbacks it needs; what belongs to the client itself (its clock, whether it is closed, its
 * events and status feed) comes in through `ClientHost`. Built once per client, in this order
 * because some parts hand others to later ones (a callback may name a part built after it: it is
 * called only once the client runs).
 */
import { HotSet } from '../cache/hot-set.ts';
import { LocalCache } from '../cache/local-cache.ts';
import { AccessWindow } from '../counting/window.ts';
import type { ResolvedClientOptions } from '../options.ts';
import { MsgType, OLDEST_HUB_VERSION, PROTOCOL_VERSION, type Hello } from '../wire/protocol.ts';
import { AppConfig } from './report/app-config.ts';
import { Dispatch } from './dispatch.ts';
import type { EmitClientEvent } from './events.ts';
import { HubEvents } from './hub-events.ts';
import { Invalidator } from './invalidate/invalidator.ts';
import { HubLinks } from './links.ts';
import { HotLoads } from './read/loads.ts';
import { ValuePush } from './read/push.ts';
import { RateLimits } from './report/rate-limits.ts';
import { ReadPath } from './read/read-path.ts';
import { RecentReads } from './read/recent-reads.ts';
import { Readiness } from './readiness.ts';
import { ReportScheduler } from './report/report-scheduler.ts';
import type { ClientStatus } from './observe/status.ts';
import { SurgeLocal } from './read/surge-local.ts';
import { Holds } from './invalidate/holds.ts';
import { LocalValues } from './read/values.ts';

export const SDK_NAME = '@hotkey/sdk/0.1.0';

/** What the client lends its parts. */
export interface ClientHost {
  /** reads the monotonic clock (ClientOptions.now) */
  monoNow: () => number;
  /** reads the monotonic clock and makes it the client's coarse reading; returns it */
  refreshCoarseNow: () => number;
  /** the client's coarse reading of the monotonic clock (no clock call) */
  coarseNow: () => number;
  closed: () => boolean;
  emit: EmitClientEvent;
  status: (status: ClientStatus) => void;
  /** logs, reports to status() and emits 'error' (when listened to) */
  fault: (error: Error, url: string | undefined, refused: boolean) => void;
}

export interface ClientParts {
  window: AccessWindow;
  cache: LocalCache;
  hot: HotSet;
  limits: RateLimits;
  config: AppConfig;
  loads: HotLoads;
  push: ValuePush;
  reads: ReadPath;
  values: LocalValues;
  readiness: Readiness;
  hubEvents: HubEvents;
  links: HubLinks;
  invalidator: Invalidator;
  dispatch: Dispatch;
  reportScheduler: ReportScheduler;
  /** local surges; undefined when `surgeLocal: false` */
  surge: SurgeLocal | undefined;
  /** cold reads an adapter may answer a hot load with */
  recent: RecentReads;
  /** protocol 3 registrations of local entries with their owner hubs */
  holds: Holds;
}

/** Builds and wires every part of a client with options `opts` and hub seed URLs `seeds`. */
export function buildParts(opts: ResolvedClientOptions, seeds: readonly string[], host: ClientHost): ClientParts {
  // Filled in four steps, in this order; a callback that names a part of a later step reads it
  // from `p` when called, once the client runs.
  const p = unbuilt();
  Object.assign(p, countingParts(opts, host, p));
  Object.assign(p, valueParts(opts, host, p));
  Object.assign(p, linkParts(opts, seeds, host, p));
  Object.assign(p, hubWorkParts(opts, host, p));
  return p;
}

/**
 * Every part, unset: the object has its final shape from the start (the client reads some parts
 * through it on every call), and the steps fill it in.
 */
function unbuilt(): ClientParts {
  const none = undefined as never;
  return {
    window: none,
    cache: none,
    hot: none,
    limits: none,
    config: none,
    loads: none,
    push: none,
    reads: none,
    values: none,
    readiness: none,
    hubEvents: none,
    links: none,
    invalidator: none,
    holds: none,
    dispatch: none,
    reportScheduler: none,
    surge: none,
    recent: none,
  };
}

/** The access window, the hot set and its cache, rate limits and the app's config. */
function countingParts(
  opts: ResolvedClientOptions,
  host: ClientHost,
  p: ClientParts,
): Pick<ClientParts, 'window' | 'cache' | 'hot' | 'limits' | 'config'> {
  const window = new AccessWindow({
    maxCandidates: opts.maxCandidates,
    sampleRate: opts.sampleRate,
    now: host.coarseNow(),
    onUrgent: () => p.reportScheduler.urgentSoon(),
  });
  const cache = new LocalCache({ maxEntries: opts.maxEntries });
  const hot = new HotSet({ maxKeys: opts.maxHotKeys });
  const limits = new RateLimits(opts.maxLimitedKeys);
  const config = new AppConfig(window, limits);
  return { window, cache, hot, limits, config };
}

/** What serves hot keys: loads, value push, kept cold reads, held values, local surges, the read path. */
function valueParts(
  opts: ResolvedClientOptions,
  host: ClientHost,
  p: ClientParts,
): Pick<ClientParts, 'loads' | 'push' | 'recent' | 'values' | 'holds' | 'surge' | 'reads'> {
  const { refreshCoarseNow } = host;
  const { window, cache, hot, config } = p;
  /** this instance's share of REFRESH_JITTER, in [0, 1) */
  const jitter = Math.random();
  const loads: HotLoads = new HotLoads({
    cache,
    hot,
    maxInFlight: opts.maxLoadsInFlight,
    maxQueued: opts.maxLoadsQueued,
    timeoutMs: opts.loadTimeoutMs,
    jitter,
    policy: (key) => reads.policy(key),
    refreshCoarseNow,
    callLoader: (key, loader) => reads.callLoader(key, loader),
    closed: host.closed,
    onStale: (key, error) => host.status({ type: 'stale-value', key, error }),
    awaitPush: (key) => push.awaitPush(key),
    onFilled: (key, value, state) => {
      push.filled(key, value, p.links.get(state.hub));
      if (state.local) surge?.filled(key, value, state);
    },
  });
  const push: ValuePush = new ValuePush({
    hot,
    cache,
    maxPushBytes: opts.maxPushBytes,
    pushWaitMs: opts.pushWaitMs,
    shared: (key) => config.ruleFor(key)?.push === true,
    lifetime: (key, state) => reads.lifetime(key, state),
    refreshCoarseNow,
    loadNow: (key, loader, state) => loads.loadNow(key, loader, state),
  });
  const recent = new RecentReads(() => p.links, host.monoNow);
  const values = new LocalValues({ cache, hot, loads, push, recent, coarseNow: host.coarseNow });
  const holds = new Holds({
    hot: (key) => hot.get(key),
    dropped: (key) => {
      values.drop(key);
      // a local entry's registration ended: the entry goes (the next surge registers again)
      const state = hot.get(key);
      if (state?.local === true && hot.demote(key)) values.forget(key);
    },
    invalidated: (key, info) => host.emit('invalidate', key, info),
  });
  const surge = surgeOf(opts, p, { holds, values, recent });
  const reads: ReadPath = new ReadPath({ window, config, loads, push, jitter, closed: host.closed, surge });
  return { loads, push, recent, values, holds, surge, reads };
}

/** Local surges, or undefined when `surgeLocal: false`. */
function surgeOf(
  opts: ResolvedClientOptions,
  p: ClientParts,
  { holds, values, recent }: Pick<ClientParts, 'holds' | 'values' | 'recent'>,
): SurgeLocal | undefined {
  if (opts.surgeLocal === false) return undefined;
  return new SurgeLocal({
    options: opts.surgeLocal,
    window: p.window,
    hot: p.hot,
    links: () => p.links,
    forget: (key) => values.forget(key),
    holds,
    sinceOf: (key) => recent.sinceOf(key),
  });
}

/** The hub links, what handles their connection events, and ready(). */
function linkParts(
  opts: ResolvedClientOptions,
  seeds: readonly string[],
  host: ClientHost,
  p: ClientParts,
): Pick<ClientParts, 'readiness' | 'hubEvents' | 'links'> {
  const readiness = new Readiness();
  const hubEvents: HubEvents = new HubEvents({
    hot: p.hot,
    loads: p.loads,
    config: p.config,
    readiness,
    maxStaleMs: opts.maxStaleMs,
    links: () => links,
    dispatch: () => p.dispatch,
    invalidator: () => p.invalidator,
    holds: p.holds,
    closed: host.closed,
    refreshCoarseNow: host.refreshCoarseNow,
    status: host.status,
    fault: host.fault,
  });
  const links: HubLinks = new HubLinks({
    seeds: [...new Set(seeds)],
    hello: helloOf(opts),
    pingIntervalMs: opts.pingIntervalMs,
    quietPingIntervalMs: opts.quietPingIntervalMs,
    livenessTimeoutMs: opts.livenessTimeoutMs,
    reconnectMinMs: opts.reconnectMinMs,
    reconnectMaxMs: opts.reconnectMaxMs,
    tls: opts.tls,
    handler: hubEvents,
    onLost: (hub) => hubEvents.lost(hub),
  });
  return { readiness, hubEvents, links };
}

/** What goes over the links: invalidations, the dispatch of hub messages, the reports. */
function hubWorkParts(
  opts: ResolvedClientOptions,
  host: ClientHost,
  p: ClientParts,
): Pick<ClientParts, 'invalidator' | 'dispatch' | 'reportScheduler'> {
  const { window, hot, loads, links, values, recent } = p;
  const invalidator: Invalidator = new Invalidator({
    links,
    push: p.push,
    timeoutMs: opts.invalidateTimeoutMs,
    maxPending: opts.maxPendingInvalidations,
    dropValue: (key) => values.drop(key),
    dropAll: () => values.dropAll(),
  });
  const dispatch: Dispatch = new Dispatch({
    hot,
    window,
    push: p.push,
    limits: p.limits,
    invalidator,
    holds: p.holds,
    config: p.config,
    monoNow: host.monoNow,
    coarseNow: host.coarseNow,
    dropValue: (key) => values.drop(key),
    dropAll: () => values.dropAll(),
    forget: (key) => values.forget(key),
    resynced: () => recent.clear(),
    emit: host.emit,
    status: host.status,
    applyMembers: (epoch, members, from) => p.hubEvents.members(epoch, members, from),
  });
  const reportScheduler: ReportScheduler = new ReportScheduler({
    window,
    links,
    maxBufferedBytes: opts.maxBufferedBytes,
    refreshCoarseNow: host.refreshCoarseNow,
    loadsOf: (key) => (hot.get(key)?.cache === true ? loads.tallied(key) : undefined),
    reported: () => loads.resetTally(),
  });
  return { invalidator, dispatch, reportScheduler };
}

/** The first frame on every hub connection. */
function helloOf(opts: ResolvedClientOptions): Hello {
  const hello: Hello = {
    t: MsgType.Hello,
    v: PROTOCOL_VERSION,
    vmin: OLDEST_HUB_VERSION,
    app: opts.app,
    instance: opts.instanceId,
    sdk: SDK_NAME,
    host: opts.host,
    role: 'sdk',
  };
  if (opts.token !== undefined) hello.token = opts.token;
  return hello;
}
