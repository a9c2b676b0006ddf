/**
 * The hub's HTTP surface on its single port: health, readiness, Prometheus metrics, the REST API
 * and the page. One table lists every route as `{method, pattern, auth, handler}`; `dispatch` finds
 * the route, answers 404 / 405 itself, checks the route's auth, then runs the handler. Errors are
 * always `{ error: { code, message } }` (plus `field` for bad rules or keys). Reads need the
 * dashboard token only when one is set; writes need the admin token and are refused outright when
 * the hub has none.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, HotKeyError, ProtocolError, ValidationError } from '@hotkey/sdk';
import { assertKey, type Member } from '@hotkey/sdk/protocol';
import { DEFAULT_RULE } from '@hotkey/sdk/rules';
import { bearerToken, tokenMatches } from '../server/auth.ts';
import { isValidAppName } from '../server/config.ts';
import type { HubCore } from '../core/hub-core.ts';
import { clusterHotRows, clusterInstanceRows } from './cluster-view.ts';
import { renderMetrics, type FeedCounters } from './metrics.ts';

/** Error codes only the HTTP API uses; with ErrorCode (@hotkey/sdk) they make up ApiErrorCode. */
export const HttpErrorCode = {
  /** no such route, or no such app */
  NotFound: 'HK_ERR_NOT_FOUND',
  /** the route exists but not for this method */
  Method: 'HK_ERR_METHOD',
  /** body is not valid JSON or lacks a field */
  BadRequest: 'HK_ERR_BAD_REQUEST',
  /** body over the hub's limit */
  TooLarge: 'HK_ERR_BODY_TOO_LARGE',
  /** a fault inside the hub (logged) */
  Internal: 'HK_ERR_INTERNAL',
  /** the hub that owns the key (its QPS history, its promotion) did not answer within 1 s, or answered garbage */
  OwnerUnreachable: 'HK_ERR_OWNER_UNREACHABLE',
} as const;
export type HttpErrorCode = (typeof HttpErrorCode)[keyof typeof HttpErrorCode];

/** Every code an API error answer can carry: one `HK_ERR_*` namespace. */
export type ApiErrorCode = ErrorCode | HttpErrorCode;
const API_ERROR_CODES: ReadonlySet<string> = new Set<string>([...Object.values(ErrorCode), ...Object.values(HttpErrorCode)]);

/** An API refusal: its HTTP status, its `HK_ERR_*` code, and the field at fault when there is one. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** how long a hub waits for the key's owner hub when it forwards a request (QPS history, promote) */
const OWNER_TIMEOUT_MS = 1000;
/** set on a forwarded request: the receiving hub answers from its own state, so two hubs that
 * briefly disagree on the owner (a member list changing) never bounce a request between them */
const FORWARDED_HEADER = 'x-hotkey-forwarded-by';
/**
 * What the dashboard's static files may do in the browser: talk to this hub only. The page's live
 * feed is a WebSocket to its own host, named explicitly beside 'self' (browsers before CSP 3 do not
 * let 'self' cover ws: and wss:). A Host header that is not a plain host[:port] gets 'self' alone.
 */
export function contentSecurityPolicy(host: string | undefined): string {
  const sockets = host !== undefined && /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(host) ? ` ws://${host} wss://${host}` : '';
  return `default-src 'self'; connect-src 'self'${sockets}; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'`;
}

/** HTTP status for a coordinator's refusal: a missing app is 404, a store that is down 503 (retry). */
const STATUS_OF_CODE: Partial<Record<string, number>> = { [ErrorCode.UnknownApp]: 404, [ErrorCode.Unavailable]: 503 };

export interface HttpApiOptions {
  core: HubCore;
  adminToken: string | undefined;
  dashboardToken: string | undefined;
  maxBodyBytes: number;
  /** true once the hub listens and joined its cluster, false again while closing */
  ready: () => boolean;
  page: () => string;
  /** the dashboard's files by path ('/', '/assets/…'); undefined: serve `page()` at `/` */
  asset?: (path: string) => { body: Uint8Array; type: string } | undefined;
  log: (message: string) => void;
  /** the live dashboard feed's counters for /metrics; undefined: none exported */
  feedCounters?: () => FeedCounters;
}

/** One request as a handler sees it: `params` are the pattern's captures, in order. */
interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  params: string[];
}

/** 'none': anyone; 'read': the dashboard (or admin) token when one is set; 'write': the admin token. */
type Auth = 'none' | 'read' | 'write';

interface Route {
  /** 'GET' also answers HEAD; '*' any method */
  method: 'GET' | 'PUT' | 'POST' | '*';
  /** an exact path, or a regular expression whose groups become `params` */
  pattern: string | RegExp;
  auth: Auth;
  handler: (ctx: RequestContext) => void | Promise<void>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: HttpError): void {
  if (res.headersSent) return;
  const error: Record<string, string> = { code: err.code, message: err.message };
  if (err.field !== undefined) error.field = err.field;
  if (err.status === 401) res.setHeader('www-authenticate', 'Bearer');
  sendJson(res, err.status, { error });
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw new HttpError(413, HttpErrorCode.TooLarge, `body of ${declared} bytes exceeds ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, HttpErrorCode.TooLarge, `body exceeds ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, HttpErrorCode.BadRequest, 'request body must be JSON');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, HttpErrorCode.BadRequest, `body is not valid JSON: ${(err as Error).message}`);
  }
}

function intParam(params: URLSearchParams, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = params.get(name);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) throw new HttpError(400, HttpErrorCode.BadRequest, `query parameter "${name}" must be an integer in [0, ${max}]`, name);
  return n;
}

/** The http(s):// base of a member from its ws(s):// URL (`ws://h:p/ws` → `http://h:p`); undefined when unusable. */
export function httpBaseOf(wsUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(wsUrl);
  } catch {
    return undefined;
  }
  const protocol = url.protocol === 'ws:' ? 'http:' : url.protocol === 'wss:' ? 'https:' : undefined;
  return protocol === undefined ? undefined : `${protocol}//${url.host}`;
}

function checkedKey(key: unknown): string {
  try {
    assertKey(key);
  } catch (err) {
    if (err instanceof ProtocolError) throw new HttpError(400, err.code === ErrorCode.KeyTooLong ? ErrorCode.KeyTooLong : HttpErrorCode.BadRequest, err.message, 'key');
    throw err;
  }
  return key;
}

function keyOf(body: unknown): string {
  const key = (body as { key?: unknown } | null)?.key;
  if (typeof body !== 'object' || body === null || key === undefined) throw new HttpError(400, HttpErrorCode.BadRequest, 'body must be {"key": "…"}', 'key');
  return checkedKey(key);
}

function appOfPath(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, HttpErrorCode.BadRequest, 'app name in the path is not valid percent-encoding');
  }
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
  const { core, adminToken, dashboardToken } = options;
  const coordinator = core.coordinator;

  function authorize(auth: Auth, req: IncomingMessage): void {
    if (auth === 'read') authorizeRead(req);
    else if (auth === 'write') authorizeWrite(req);
  }

  function authorizeRead(req: IncomingMessage): void {
    if (dashboardToken === undefined) return;
    const presented = bearerToken(req.headers.authorization);
    if (presented === undefined) throw new HttpError(401, ErrorCode.Auth, 'this hub requires the dashboard token: Authorization: Bearer <token>');
    const ok = tokenMatches(presented, dashboardToken) || (adminToken !== undefined && tokenMatches(presented, adminToken));
    if (!ok) throw new HttpError(403, ErrorCode.Auth, 'wrong token');
  }

  function authorizeWrite(req: IncomingMessage): void {
    if (adminToken === undefined) {
      throw new HttpError(403, ErrorCode.Auth, 'writes are disabled: start the hub with --admin-token (or HOTKEY_ADMIN_TOKEN, or "adminToken" in the config file)');
    }
    const presented = bearerToken(req.headers.authorization);
    if (presented === undefined) throw new HttpError(401, ErrorCode.Auth, 'this request requires the admin token: Authorization: Bearer <token>');
    if (!tokenMatches(presented, adminToken)) throw new HttpError(403, ErrorCode.Auth, 'wrong admin token');
  }

  /** The app named by the path's first capture, when the hub knows it; 404 otherwise. */
  function knownApp(encoded: string | undefined): string {
    const name = appOfPath(encoded ?? '');
    if (!isValidAppName(name) || coordinator.app(name) === undefined) throw new HttpError(404, ErrorCode.UnknownApp, `unknown app "${name.slice(0, 64)}"`);
    return name;
  }

  /** The member to forward a request about `key` to: its owner when that is another hub; undefined: answer here. */
  function remoteOwner(req: IncomingMessage, key: string): Member | undefined {
    if (req.headers[FORWARDED_HEADER] !== undefined) return undefined; // already forwarded once: no ping-pong
    const owner = core.ownerOf(key);
    return owner === undefined || owner.id === core.id ? undefined : owner;
  }

  /**
   * Asks `owner` (the hub that owns `key`) to answer this request and returns its JSON body. The
   * caller's Authorization goes along, so the owner applies its own auth; its refusals (401, 403,
   * 404, 422) pass through. No answer within OWNER_TIMEOUT_MS, or one that is not `expected`, is
   * 502 HK_ERR_OWNER_UNREACHABLE.
   */
  async function forwardToOwner(
    req: IncomingMessage,
    owner: Member,
    key: string,
    request: { path: string; body?: unknown; what: string; expected: (body: Record<string, unknown>) => boolean },
  ): Promise<unknown> {
    const base = httpBaseOf(owner.url);
    if (base === undefined) throw new HttpError(502, HttpErrorCode.OwnerUnreachable, `hub ${owner.id} owns "${key.slice(0, 64)}" but advertises no usable URL (${owner.url.slice(0, 100) || 'none'})`);
    const headers: Record<string, string> = { accept: 'application/json', [FORWARDED_HEADER]: core.id };
    if (req.headers.authorization !== undefined) headers.authorization = req.headers.authorization;
    const init: RequestInit = { headers, signal: AbortSignal.timeout(OWNER_TIMEOUT_MS) };
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.method = 'POST';
      init.body = JSON.stringify(request.body);
    }
    let status: number;
    let text: string;
    try {
      const res = await fetch(`${base}${request.path}`, init);
      status = res.status;
      text = await res.text();
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? `no answer within ${OWNER_TIMEOUT_MS} ms` : (err as Error).message;
      throw new HttpError(502, HttpErrorCode.OwnerUnreachable, `hub ${owner.id} owns "${key.slice(0, 64)}" and must answer ${request.what}, but ${base} cannot be reached: ${why}`);
    }
    let body: { error?: { code?: unknown; message?: unknown } } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = undefined;
    }
    if (status === 200 && typeof body === 'object' && body !== null && request.expected(body as Record<string, unknown>)) return body;
    const error = body?.error;
    if (status !== 200 && typeof error?.code === 'string' && API_ERROR_CODES.has(error.code) && typeof error.message === 'string') {
      throw new HttpError(status, error.code as ApiErrorCode, `hub ${owner.id}: ${error.message}`);
    }
    throw new HttpError(502, HttpErrorCode.OwnerUnreachable, `hub ${owner.id} (${base}) answered HTTP ${status} without ${request.what}`);
  }

  // ---- handlers ----

  function healthz({ res }: RequestContext): void {
    const h = coordinator.health();
    sendJson(res, 200, { status: h.state, detail: h.detail, id: core.id, uptimeMs: Date.now() - core.startedAt, connections: core.connections });
  }

  function readyz({ res }: RequestContext): void {
    const h = coordinator.health();
    const status = !options.ready() ? 'not ready' : h.state === 'ok' ? 'ready' : 'degraded';
    sendJson(res, status === 'ready' ? 200 : 503, { status, detail: h.detail, id: core.id });
  }

  function metrics({ res }: RequestContext): void {
    const text = renderMetrics(core.metrics, core.gauges(), options.feedCounters?.(), coordinator.stats?.());
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
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
      return { name, rules: coordinator.rules(name).length, instances: s?.instanceCount ?? 0, connections: s?.connections ?? 0, keysTracked: s?.keysTracked ?? 0, hot: s?.hotCount ?? 0, seq: s?.seq ?? 0 };
    });
    sendJson(res, 200, { apps: list });
  }

  async function history({ res, query }: RequestContext): Promise<void> {
    const events = await coordinator.history(query.get('app') ?? undefined, intParam(query, 'since', 0), intParam(query, 'limit', 100, 10_000));
    sendJson(res, 200, { events });
  }

  function cluster({ res }: RequestContext): void {
    const { epoch, members } = coordinator.members();
    sendJson(res, 200, { self: core.id, epoch, members, statuses: coordinator.statuses(), health: coordinator.health() });
  }

  /** The key's QPS history from this hub when it owns the key, else from its owner hub. */
  async function keyQps({ req, res, query, params }: RequestContext): Promise<void> {
    const app = knownApp(params[0]);
    const raw = query.get('key');
    if (raw === null) throw new HttpError(400, HttpErrorCode.BadRequest, 'query parameter "key" is required (URL-encoded)', 'key');
    const key = checkedKey(raw);
    const owner = remoteOwner(req, key);
    if (owner === undefined) return sendJson(res, 200, { app, key, hub: core.id, stepMs: core.qpsHistory.stepMs, points: core.qpsPoints(app, key) });
    const answer = await forwardToOwner(req, owner, key, {
      path: `/api/apps/${encodeURIComponent(app)}/keys/qps?key=${encodeURIComponent(key)}`,
      what: 'a QPS history',
      expected: (body) => Array.isArray(body.points),
    });
    sendJson(res, 200, answer);
  }

  function getRules({ res, params }: RequestContext): void {
    const app = knownApp(params[0]);
    const rules = coordinator.rules(app);
    sendJson(res, 200, { app, rules, effective: rules.length > 0 ? rules : [DEFAULT_RULE] });
  }

  async function putRules({ req, res, params }: RequestContext): Promise<void> {
    const app = knownApp(params[0]);
    const body = await readJson(req, options.maxBodyBytes);
    try {
      sendJson(res, 200, { app, rules: await coordinator.setRules(app, body) });
    } catch (err) {
      if (err instanceof ValidationError) throw new HttpError(400, err.code, err.message, err.field);
      if (err instanceof HotKeyError) throw new HttpError(STATUS_OF_CODE[err.code] ?? 400, err.code, err.message);
      throw err;
    }
  }

  async function invalidate({ req, res, params }: RequestContext): Promise<void> {
    const app = knownApp(params[0]);
    const key = keyOf(await readJson(req, options.maxBodyBytes));
    const seq = core.invalidateKey(app, key);
    if (seq === undefined) throw new HttpError(503, ErrorCode.Unavailable, 'this hub keeps state for no more apps');
    // Also at the owner: an SDK cut off from this hub but still connected to the owner must hear
    // it too (a second Invalidate of the same key is harmless). An owner out of reach is
    // reported, not fatal: its SDKs serve its keys stale for at most maxStaleMs anyway.
    const owner = remoteOwner(req, key);
    if (owner === undefined) return sendJson(res, 200, { app, key, seq, hubs: [core.id] });
    try {
      await forwardToOwner(req, owner, key, {
        path: `/api/apps/${encodeURIComponent(app)}/invalidate`,
        body: { key },
        what: 'an invalidation',
        expected: (answered) => answered.key === key,
      });
      sendJson(res, 200, { app, key, seq, hubs: [core.id, owner.id] });
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 502) throw err;
      sendJson(res, 200, { app, key, seq, hubs: [core.id], ownerError: err.message });
    }
  }

  /** Only the owner decides a key (its aggregator tracks it and broadcasts the promotion). */
  async function promote({ req, res, params }: RequestContext): Promise<void> {
    const app = knownApp(params[0]);
    const key = keyOf(await readJson(req, options.maxBodyBytes));
    const owner = remoteOwner(req, key);
    if (owner !== undefined) {
      const answer = await forwardToOwner(req, owner, key, {
        path: `/api/apps/${encodeURIComponent(app)}/promote`,
        body: { key },
        what: 'a promotion',
        expected: (answered) => answered.key === key,
      });
      return sendJson(res, 200, answer);
    }
    if (!core.promote(app, key)) {
      throw new HttpError(422, ErrorCode.Rules, `cannot promote "${key.slice(0, 64)}": no rule of app "${app}" matches it, or another hub of the cluster owns it`, 'key');
    }
    sendJson(res, 200, { app, key, hub: core.id });
  }

  const routes: readonly Route[] = [
    { method: '*', pattern: '/healthz', auth: 'none', handler: healthz },
    { method: '*', pattern: '/readyz', auth: 'none', handler: readyz },
    { method: '*', pattern: '/metrics', auth: 'read', handler: metrics },
    // the page itself carries no data: served without a token, so it can ask for one
    { method: 'GET', pattern: '/', auth: 'none', handler: page },
    { method: 'GET', pattern: '/index.html', auth: 'none', handler: page },
    { method: 'GET', pattern: '/api/apps', auth: 'read', handler: apps },
    { method: 'GET', pattern: '/api/hot', auth: 'read', handler: ({ res, query }) => sendJson(res, 200, { hot: clusterHotRows(core, query.get('app') ?? undefined) }) },
    { method: 'GET', pattern: '/api/instances', auth: 'read', handler: ({ res, query }) => sendJson(res, 200, { instances: clusterInstanceRows(core, query.get('app') ?? undefined) }) },
    { method: 'GET', pattern: '/api/events', auth: 'read', handler: ({ res, query }) => sendJson(res, 200, { events: core.recentEvents(intParam(query, 'since', 0)) }) },
    { method: 'GET', pattern: '/api/history', auth: 'read', handler: history },
    { method: 'GET', pattern: '/api/cluster', auth: 'read', handler: cluster },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/keys\/qps$/, auth: 'read', handler: keyQps },
    { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'read', handler: getRules },
    { method: 'PUT', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'write', handler: putRules },
    { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/invalidate$/, auth: 'write', handler: invalidate },
    { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/promote$/, auth: 'write', handler: promote },
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
      authorize(route.auth, req);
      return route.handler({ req, res, method, path, query: url.searchParams, params });
    }
    if (serveAsset(res, method, path, req.headers.host)) return;
    if (allowed.length > 0) throw new HttpError(405, HttpErrorCode.Method, `${method} ${path} is not supported; use ${allowed.join(' or ')}`);
    throw new HttpError(404, HttpErrorCode.NotFound, `no route ${method} ${path}`);
  }

  return (req, res) => {
    core.metrics.httpRequests++;
    dispatch(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) {
        if (err.status === 413) res.setHeader('connection', 'close');
        return sendError(res, err);
      }
      options.log(`HTTP ${req.method} ${req.url?.split('?')[0]} failed: ${(err as Error)?.stack ?? String(err)}`);
      sendError(res, new HttpError(500, HttpErrorCode.Internal, 'internal hub error (logged)'));
    });
  };
}
