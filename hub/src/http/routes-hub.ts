/**
 * The routes about the hub as a whole: health, readiness, /metrics, the page, and the cluster-wide
 * reads under `/api/` (apps, hot keys, instances, events, history, members). The per-app routes
 * live in routes-apps.ts; http-api.ts puts both in one table.
 */
import type { HubCore } from '../core/hub-core.ts';
import { clusterInstanceRows, shownHotRows } from './cluster-view.ts';
import { serveAsset, type AssetLookup } from './dashboard-assets.ts';
import { intParam, sendJson, type RequestContext, type Route } from './http-request.ts';
import type { AdmissionMetrics, FeedCounters } from './metric-series.ts';
import type { MetricsRegistry } from './metrics.ts';

/** What the hub-wide routes read. */
export interface HubRouteOptions {
  core: HubCore;
  /** true once the hub listens and joined its cluster, false again while closing */
  ready: () => boolean;
  page: () => string;
  /** the dashboard's files by path ('/', '/assets/…'); undefined: serve `page()` at `/` */
  asset?: AssetLookup;
  /** renders /metrics */
  metrics: MetricsRegistry;
  /** the live dashboard feed's counters for /metrics; undefined: none exported */
  feedCounters?: () => FeedCounters;
  /** what the server's admission refused, for /metrics; undefined: none exported */
  admissionCounters?: () => AdmissionMetrics;
}

export class HubRoutes {
  readonly #options: HubRouteOptions;
  readonly #core: HubCore;

  constructor(options: HubRouteOptions) {
    this.#options = options;
    this.#core = options.core;
  }

  /** The routes, in the order the table tries them. */
  routes(): Route[] {
    const core = this.#core;
    return [
      /** 200 `{status: ok|degraded}` while the process lives */
      { method: '*', pattern: '/healthz', auth: 'none', handler: (c) => this.healthz(c) },
      /** 200 ready, 503 degraded or not ready */
      { method: '*', pattern: '/readyz', auth: 'none', handler: (c) => this.readyz(c) },
      /** Prometheus text: the `hotkey_*` series, and prom-client's `nodejs_*` and `process_*` */
      { method: '*', pattern: '/metrics', auth: 'read', handler: (c) => this.metrics(c) },
      /** the dashboard page; it carries no data, so it is served without a token and can ask for one */
      { method: 'GET', pattern: '/', auth: 'none', handler: (c) => this.page(c) },
      /** the dashboard page, as `/` */
      { method: 'GET', pattern: '/index.html', auth: 'none', handler: (c) => this.page(c) },
      /** apps with instances, keys tracked, hot count, seq */
      { method: 'GET', pattern: '/api/apps', auth: 'read', handler: (c) => this.apps(c) },
      /**
       * `?app=`: hot keys: app, key, qps, threshold, since, instances, ttlMs, hub (the id of the owner
       * hub, as in every other answer and in the live feed)
       */
      {
        method: 'GET',
        pattern: '/api/hot',
        auth: 'read',
        handler: ({ res, query }) => sendJson(res, 200, { hot: shownHotRows(core, query.get('app') ?? undefined) }),
      },
      /** `?app=`: connected SDK instances */
      {
        method: 'GET',
        pattern: '/api/instances',
        auth: 'read',
        handler: ({ res, query }) =>
          sendJson(res, 200, { instances: clusterInstanceRows(core, query.get('app') ?? undefined) }),
      },
      /** `?since=`: recent events seen by this hub */
      {
        method: 'GET',
        pattern: '/api/events',
        auth: 'read',
        handler: ({ res, query }) => sendJson(res, 200, { events: core.recentEvents(intParam(query, 'since', 0)) }),
      },
      /** `?app=&since=&limit=`: coordinator history, oldest first */
      { method: 'GET', pattern: '/api/history', auth: 'read', handler: (c) => this.history(c) },
      /** members, epoch, statuses (each hub's `hotKeys` and `instanceRows`), health */
      { method: 'GET', pattern: '/api/cluster', auth: 'read', handler: (c) => this.cluster(c) },
    ];
  }

  healthz({ res }: RequestContext): void {
    const core = this.#core;
    const h = core.coordinator.health();
    sendJson(res, 200, {
      status: h.state,
      detail: h.detail,
      id: core.id,
      uptimeMs: Date.now() - core.startedAt,
      connections: core.connections,
    });
  }

  readyz({ res }: RequestContext): void {
    const h = this.#core.coordinator.health();
    const status = !this.#options.ready() ? 'not ready' : h.state === 'ok' ? 'ready' : 'degraded';
    sendJson(res, status === 'ready' ? 200 : 503, { status, detail: h.detail, id: this.#core.id });
  }

  async metrics({ res }: RequestContext): Promise<void> {
    const options = this.#options;
    const core = this.#core;
    const registry = options.metrics;
    const text = await registry.render(core.metrics, {
      gauges: core.gauges(),
      protection: core.protection(),
      admission: options.admissionCounters?.(),
      feed: options.feedCounters?.(),
      cluster: core.coordinator.stats?.(),
    });
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
    res.end(text);
  }

  /** The built dashboard when there is one, else the fallback page. */
  page({ req, res, method, path }: RequestContext): void {
    if (serveAsset(this.#options.asset, res, method, path, req.headers.host)) return;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(this.#options.page());
  }

  apps({ res }: RequestContext): void {
    const core = this.#core;
    const coordinator = core.coordinator;
    const names = new Set([...coordinator.apps(), ...core.activeApps()]);
    const list = [...names].sort().map((name) => {
      const s = core.appSummary(name);
      return {
        name,
        rules: coordinator.rules(name).length,
        instances: s?.instanceCount ?? 0,
        connections: s?.connections ?? 0,
        keysTracked: s?.keysTracked ?? 0,
        hot: s?.hotCount ?? 0,
        seq: s?.seq ?? 0,
      };
    });
    sendJson(res, 200, { apps: list });
  }

  async history({ res, query }: RequestContext): Promise<void> {
    const events = await this.#core.coordinator.history(
      query.get('app') ?? undefined,
      intParam(query, 'since', 0),
      intParam(query, 'limit', 100, 10_000),
    );
    sendJson(res, 200, { events });
  }

  cluster({ res }: RequestContext): void {
    const core = this.#core;
    const coordinator = core.coordinator;
    const { epoch, members } = coordinator.members();
    sendJson(res, 200, {
      self: core.id,
      epoch,
      members,
      // other hubs' statuses carry their hot keys as decided (plain): shown here like every row
      statuses: coordinator.statuses().map((st) => ({
        ...st,
        hotKeys: st.hotKeys.map((h) => ({ ...h, key: core.keyPrivacy.show(h.app, h.key) })),
      })),
      health: coordinator.health(),
    });
  }
}
