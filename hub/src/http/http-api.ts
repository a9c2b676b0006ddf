/**
 * The hub's HTTP surface on its single port: health, readiness, Prometheus metrics, the REST API
 * and the page. One table lists every route as `{method, pattern, auth, handler}`; `dispatch` finds
 * the route, answers 404 / 405 itself, checks the route's auth, then runs the handler. Errors are
 * always `{ error: { code, message } }` (plus `field` for bad rules or keys). Reads need the
 * dashboard token only when one is set; writes need the admin token and are refused outright when
 * the hub has none. The per-app handlers live in routes-apps.ts, forwarding to a key's owner hub in
 * owner-forwarding.ts, request parsing and HttpError in http-request.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '@hotkey/sdk';
import { bearerToken, tokenMatches } from '../core/auth.ts';
import type { HubCore } from '../core/hub-core.ts';
import { clusterInstanceRows, shownHotRows } from './cluster-view.ts';
import {
  HttpError,
  intParam,
  sendError,
  sendJson,
  type Auth,
  type RequestContext,
  type Route,
} from './http-request.ts';
import type { AdmissionMetrics, FeedCounters } from './metric-series.ts';
import type { MetricsRegistry } from './metrics.ts';
import type { Logger } from '../core/logger.ts';
import { appRoutes } from './routes-apps.ts';

/**
 * What the dashboard's static files may do in the browser: talk to this hub only. The page's live
 * feed is a WebSocket to its own host, named explicitly beside 'self' (browsers before CSP 3 do not
 * let 'self' cover ws: and wss:). A Host header that is not a plain host[:port] gets 'self' alone.
 */
export function contentSecurityPolicy(host: string | undefined): string {
  const sockets =
    host !== undefined && /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(host)
      ? ` ws://${host} wss://${host}`
      : '';
  return `default-src 'self'; connect-src 'self'${sockets}; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'`;
}

export interface HttpApiOptions {
  core: HubCore;
  /** read on every request, so a config reload may change it (a getter) */
  adminToken: string | undefined;
  dashboardToken: string | undefined;
  maxBodyBytes: number;
  /** true once the hub listens and joined its cluster, false again while closing */
  ready: () => boolean;
  page: () => string;
  /** the dashboard's files by path ('/', '/assets/…'); undefined: serve `page()` at `/` */
  asset?: (path: string) => { body: Uint8Array; type: string } | undefined;
  /** request failures, and one `api_write` event per admin write (its app, key, status) */
  logger: Logger;
  /** renders /metrics */
  metrics: MetricsRegistry;
  /** the live dashboard feed's counters for /metrics; undefined: none exported */
  feedCounters?: () => FeedCounters;
  /** what the server's admission refused, for /metrics; undefined: none exported */
  admissionCounters?: () => AdmissionMetrics;
}

function methodMatches(route: Route, method: string): boolean {
  return route.method === '*' || route.method === method || (route.method === 'GET' && method === 'HEAD');
}

/** The pattern's captures when `path` matches it, else undefined. */
function matchPath(pattern: string | RegExp, path: string): string[] | undefined {
  if (typeof pattern === 'string') return pattern === path ? [] : undefined;
  const m = pattern.exec(path);
  return m === null ? undefined : m.slice(1).map((group) => group ?? '');
}

export function createHttpHandler(options: HttpApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { core } = options;
  const coordinator = core.coordinator;
  const perApp = appRoutes(core, options.maxBodyBytes);

  function authorize(auth: Auth, req: IncomingMessage): void {
    if (auth === 'read') authorizeRead(req);
    else if (auth === 'write') authorizeWrite(req);
  }

  function authorizeRead(req: IncomingMessage): void {
    const { adminToken, dashboardToken } = options;
    if (dashboardToken === undefined) return;
    const presented = bearerToken(req.headers.authorization);
    if (presented === undefined)
      throw new HttpError(401, ErrorCode.Auth, 'this hub requires the dashboard token: Authorization: Bearer <token>');
    const ok =
      tokenMatches(presented, dashboardToken) || (adminToken !== undefined && tokenMatches(presented, adminToken));
    if (!ok) throw new HttpError(403, ErrorCode.Auth, 'wrong token');
  }

  function authorizeWrite(req: IncomingMessage): void {
    const { adminToken } = options;
    if (adminToken === undefined) {
      throw new HttpError(
        403,
        ErrorCode.Auth,
        'writes are disabled: start the hub with --admin-token (or HOTKEY_ADMIN_TOKEN, or "adminToken" in the config file)',
      );
    }
    const presented = bearerToken(req.headers.authorization);
    if (presented === undefined)
      throw new HttpError(401, ErrorCode.Auth, 'this request requires the admin token: Authorization: Bearer <token>');
    if (!tokenMatches(presented, adminToken)) throw new HttpError(403, ErrorCode.Auth, 'wrong admin token');
  }

  // ---- handlers ----

  function healthz({ res }: RequestContext): void {
    const h = coordinator.health();
    sendJson(res, 200, {
      status: h.state,
      detail: h.detail,
      id: core.id,
      uptimeMs: Date.now() - core.startedAt,
      connections: core.connections,
    });
  }

  function readyz({ res }: RequestContext): void {
    const h = coordinator.health();
    const status = !options.ready() ? 'not ready' : h.state === 'ok' ? 'ready' : 'degraded';
    sendJson(res, status === 'ready' ? 200 : 503, { status, detail: h.detail, id: core.id });
  }

  async function metrics({ res }: RequestContext): Promise<void> {
    const registry = options.metrics;
    const text = await registry.render(core.metrics, {
      gauges: core.gauges(),
      protection: core.protection(),
      admission: options.admissionCounters?.(),
      feed: options.feedCounters?.(),
      cluster: coordinator.stats?.(),
    });
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
    res.end(text);
  }

  /** The built dashboard when there is one, else the fallback page. */
  function page({ req, res, method, path }: RequestContext): void {
    if (serveAsset(res, method, path, req.headers.host)) return;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(options.page());
  }

  function apps({ res }: RequestContext): void {
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

  async function history({ res, query }: RequestContext): Promise<void> {
    const events = await coordinator.history(
      query.get('app') ?? undefined,
      intParam(query, 'since', 0),
      intParam(query, 'limit', 100, 10_000),
    );
    sendJson(res, 200, { events });
  }

  function cluster({ res }: RequestContext): void {
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

  const routes: readonly Route[] = [
    { method: '*', pattern: '/healthz', auth: 'none', handler: healthz },
    { method: '*', pattern: '/readyz', auth: 'none', handler: readyz },
    { method: '*', pattern: '/metrics', auth: 'read', handler: metrics },
    // the page itself carries no data: served without a token, so it can ask for one
    { method: 'GET', pattern: '/', auth: 'none', handler: page },
    { method: 'GET', pattern: '/index.html', auth: 'none', handler: page },
    { method: 'GET', pattern: '/api/apps', auth: 'read', handler: apps },
    {
      method: 'GET',
      pattern: '/api/hot',
      auth: 'read',
      handler: ({ res, query }) => sendJson(res, 200, { hot: shownHotRows(core, query.get('app') ?? undefined) }),
    },
    {
      method: 'GET',
      pattern: '/api/instances',
      auth: 'read',
      handler: ({ res, query }) =>
        sendJson(res, 200, { instances: clusterInstanceRows(core, query.get('app') ?? undefined) }),
    },
    {
      method: 'GET',
      pattern: '/api/events',
      auth: 'read',
      handler: ({ res, query }) => sendJson(res, 200, { events: core.recentEvents(intParam(query, 'since', 0)) }),
    },
    { method: 'GET', pattern: '/api/history', auth: 'read', handler: history },
    { method: 'GET', pattern: '/api/cluster', auth: 'read', handler: cluster },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/keys\/qps$/, auth: 'read', handler: perApp.keyQps },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/keys\/lookup$/, auth: 'write', handler: perApp.lookup },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'read', handler: perApp.getRules },
    { method: 'PUT', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'write', handler: perApp.putRules },
    { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/invalidate$/, auth: 'write', handler: perApp.invalidate },
    { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/promote$/, auth: 'write', handler: perApp.promote },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/predeclared$/, auth: 'read', handler: perApp.getPredeclared },
    { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/predeclared$/, auth: 'write', handler: perApp.postPredeclared },
    {
      method: 'DELETE',
      pattern: /^\/api\/apps\/([^/]+)\/predeclared$/,
      auth: 'write',
      handler: perApp.deletePredeclared,
    },
  ];

  /** The dashboard's static files (built into memory at start): no data, so no token. */
  function serveAsset(res: ServerResponse, method: string, path: string, host: string | undefined): boolean {
    if (method !== 'GET' && method !== 'HEAD') return false;
    const asset = options.asset?.(path === '/index.html' ? '/' : path);
    if (asset === undefined) return false;
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': asset.body.byteLength,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'content-security-policy': contentSecurityPolicy(host),
    });
    res.end(method === 'HEAD' ? undefined : asset.body);
    return true;
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const allowed: string[] = [];
    for (const route of routes) {
      const params = matchPath(route.pattern, path);
      if (params === undefined) continue;
      if (!methodMatches(route, method)) {
        allowed.push(route.method);
        continue;
      }
      const fields: Record<string, unknown> = {};
      if (route.auth === 'write') {
        // refused writes (401/403) too: an admin write is one event whatever its outcome
        res.once('finish', () => {
          const app = params[0] === undefined ? undefined : safeDecode(params[0]);
          const forwardedBy = req.headers['x-hotkey-forwarded-by'];
          if (app !== undefined && typeof fields.key === 'string') fields.key = core.keyPrivacy.show(app, fields.key);
          options.logger.info(
            { evt: 'api_write', method, path, app, ...fields, status: res.statusCode, forwardedBy },
            'admin API write',
          );
        });
      }
      authorize(route.auth, req);
      return route.handler({ req, res, method, path, query: url.searchParams, params, fields });
    }
    if (serveAsset(res, method, path, req.headers.host)) return;
    if (allowed.length > 0)
      throw new HttpError(405, ErrorCode.Method, `${method} ${path} is not supported; use ${allowed.join(' or ')}`);
    throw new HttpError(404, ErrorCode.NotFound, `no route ${method} ${path}`);
  }

  return (req, res) => {
    core.metrics.httpRequests++;
    dispatch(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) {
        if (err.status === 413) res.setHeader('connection', 'close');
        return sendError(res, err);
      }
      options.logger.error(
        { evt: 'http_error', method: req.method, path: req.url?.split('?')[0], err },
        'HTTP request failed',
      );
      sendError(res, new HttpError(500, ErrorCode.Internal, 'internal hub error (logged)'));
    });
  };
}

/** The app name of a path, for a log line: never throws, and bounded. */
function safeDecode(encoded: string): string {
  try {
    return decodeURIComponent(encoded).slice(0, 256);
  } catch {
    return encoded.slice(0, 256);
  }
}
