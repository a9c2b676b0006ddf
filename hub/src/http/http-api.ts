/**
 * The hub's HTTP surface on its single port: health, readiness, Prometheus metrics, the REST API
 * and the first live page. Errors are always `{ error: { code, message } }` (plus `field` for bad
 * rules). Reads need the dashboard token only when one is set; writes need the admin token and
 * are refused outright when the hub has none.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, HotKeyError, ProtocolError, ValidationError } from '@hotkey/sdk';
import { assertKey, type Member } from '@hotkey/sdk/protocol';
import { DEFAULT_RULE } from '@hotkey/sdk/rules';
import { bearerToken, tokenMatches } from '../server/auth.ts';
import { isValidAppName } from '../server/config.ts';
import type { HubCore, HotKeyRow, InstanceRow } from '../core/hub-core.ts';
import { renderMetrics, type FeedCounters } from './metrics.ts';

/** Error codes only the HTTP API uses (the rest come from ErrorCode in @hotkey/sdk). */
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

/** how long a hub waits for the key's owner hub when it forwards a request (QPS history, promote) */
const OWNER_TIMEOUT_MS = 1000;
/** set on a forwarded request: the receiving hub answers from its own state, so two hubs that
 * briefly disagree on the owner (a member list changing) never bounce a request between them */
const FORWARDED_HEADER = 'x-hotkey-forwarded-by';

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

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: HttpError): void {
  const error: Record<string, string> = { code: err.code, message: err.message };
  if (err.field !== undefined) error.field = err.field;
  const headers: Record<string, string> = {};
  if (err.status === 401) headers['www-authenticate'] = 'Bearer';
  if (res.headersSent) return;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
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

export function createHttpHandler(options: HttpApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { core, adminToken, dashboardToken } = options;
  const coordinator = core.coordinator;

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

  function knownApp(name: string): string {
    if (!isValidAppName(name) || coordinator.app(name) === undefined) throw new HttpError(404, ErrorCode.UnknownApp, `unknown app "${name.slice(0, 64)}"`);
    return name;
  }

  function hotRows(app: string | undefined): HotKeyRow[] {
    const rows = core.hotKeys(app);
    // other hubs own other keys: their latest status carries their hot set
    for (const status of coordinator.statuses()) {
      if (status.id === core.id) continue;
      for (const h of status.hot) {
        if (app !== undefined && h.app !== app) continue;
        rows.push({ ...h, owner: status.id, ttlMs: 0 });
      }
    }
    return rows.sort((a, b) => b.qps - a.qps);
  }

  function instanceRows(app: string | undefined): InstanceRow[] {
    const rows = core.instances(app);
    for (const status of coordinator.statuses()) {
      if (status.id === core.id) continue;
      for (const i of status.instances) if (app === undefined || i.app === app) rows.push({ ...i, hub: status.id });
    }
    return rows;
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
    if (status !== 200 && typeof error?.code === 'string' && typeof error.message === 'string') throw new HttpError(status, error.code, `hub ${owner.id}: ${error.message}`);
    throw new HttpError(502, HttpErrorCode.OwnerUnreachable, `hub ${owner.id} (${base}) answered HTTP ${status} without ${request.what}`);
  }

  /** The key's QPS history from this hub when it owns the key, else from its owner hub. */
  async function keyQps(req: IncomingMessage, app: string, key: string): Promise<unknown> {
    const owner = remoteOwner(req, key);
    if (owner === undefined) return { app, key, hub: core.id, stepMs: core.qpsHistory.stepMs, points: core.qpsPoints(app, key) };
    return forwardToOwner(req, owner, key, {
      path: `/api/apps/${encodeURIComponent(app)}/keys/qps?key=${encodeURIComponent(key)}`,
      what: 'a QPS history',
      expected: (body) => Array.isArray(body.points),
    });
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const q = url.searchParams;

    const get = (fn: () => unknown | Promise<unknown>) => async () => {
      if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, HttpErrorCode.Method, `${method} ${path} is not supported; use GET`);
      authorizeRead(req);
      sendJson(res, 200, await fn());
    };

    if (path === '/healthz') {
      const h = coordinator.health();
      return sendJson(res, 200, { status: h.state, detail: h.detail, id: core.id, uptimeMs: Date.now() - core.startedAt, connections: core.connections });
    }
    if (path === '/readyz') {
      const h = coordinator.health();
      const ready = options.ready();
      const status = !ready ? 'not ready' : h.state === 'ok' ? 'ready' : 'degraded';
      return sendJson(res, status === 'ready' ? 200 : 503, { status, detail: h.detail, id: core.id });
    }
    if (path === '/metrics') {
      authorizeRead(req);
      const text = renderMetrics(core.metrics, core.gauges(), options.feedCounters?.());
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
      res.end(text);
      return;
    }
    // the dashboard's static files carry no data: served without a token, so the page can ask for one
    const asset = method === 'GET' || method === 'HEAD' ? options.asset?.(path === '/index.html' ? '/' : path) : undefined;
    if (asset !== undefined) {
      res.writeHead(200, {
        'content-type': asset.type,
        'content-length': asset.body.byteLength,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
      });
      res.end(method === 'HEAD' ? undefined : asset.body);
      return;
    }
    if (path === '/' || path === '/index.html') {
      if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, HttpErrorCode.Method, 'use GET');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(options.page());
      return;
    }

    if (path === '/api/apps') {
      return get(() => {
        const names = new Set([...coordinator.apps(), ...core.activeApps()]);
        const apps = [...names].sort().map((name) => {
          const s = core.appSummary(name);
          return { name, rules: coordinator.rules(name).length, instances: s?.instances ?? 0, connections: s?.connections ?? 0, keysTracked: s?.keys ?? 0, hot: s?.hot ?? 0, seq: s?.seq ?? 0 };
        });
        return { apps };
      })();
    }
    if (path === '/api/hot') return get(() => ({ hot: hotRows(q.get('app') ?? undefined) }))();
    if (path === '/api/instances') return get(() => ({ instances: instanceRows(q.get('app') ?? undefined) }))();
    if (path === '/api/events') return get(() => ({ events: core.recentEvents(intParam(q, 'since', 0)) }))();
    if (path === '/api/history') {
      return get(async () => ({
        events: await coordinator.history(q.get('app') ?? undefined, intParam(q, 'since', 0), intParam(q, 'limit', 100, 10_000)),
      }))();
    }
    if (path === '/api/cluster') {
      return get(() => {
        const { epoch, members } = coordinator.members();
        return { self: core.id, epoch, members, statuses: coordinator.statuses(), health: coordinator.health() };
      })();
    }

    const qpsRoute = /^\/api\/apps\/([^/]+)\/keys\/qps$/.exec(path);
    if (qpsRoute !== null) {
      return get(() => {
        const name = knownApp(appOfPath(qpsRoute[1]!));
        const raw = q.get('key');
        if (raw === null) throw new HttpError(400, HttpErrorCode.BadRequest, 'query parameter "key" is required (URL-encoded)', 'key');
        return keyQps(req, name, checkedKey(raw));
      })();
    }

    const appRoute = /^\/api\/apps\/([^/]+)\/(rules|invalidate|promote)$/.exec(path);
    if (appRoute !== null) {
      const name = appOfPath(appRoute[1]!);
      const action = appRoute[2]!;
      if (action === 'rules' && (method === 'GET' || method === 'HEAD')) {
        authorizeRead(req);
        knownApp(name);
        const rules = coordinator.rules(name);
        return sendJson(res, 200, { app: name, rules, effective: rules.length > 0 ? rules : [DEFAULT_RULE] });
      }
      const allowed = action === 'rules' ? 'PUT' : 'POST';
      if (method !== allowed) throw new HttpError(405, HttpErrorCode.Method, `${method} ${path} is not supported; use ${allowed}`);
      authorizeWrite(req);
      knownApp(name);
      const body = await readJson(req, options.maxBodyBytes);
      if (action === 'rules') {
        try {
          const rules = await coordinator.setRules(name, body);
          return sendJson(res, 200, { app: name, rules });
        } catch (err) {
          if (err instanceof ValidationError) throw new HttpError(400, err.code, err.message, err.field);
          if (err instanceof HotKeyError) throw new HttpError(STATUS_OF_CODE[err.code] ?? 400, err.code, err.message);
          throw err;
        }
      }
      const key = keyOf(body);
      if (action === 'invalidate') {
        const seq = core.invalidateKey(name, key);
        if (seq === undefined) throw new HttpError(503, ErrorCode.Unavailable, 'this hub keeps state for no more apps');
        // Also at the owner: an SDK cut off from this hub but still connected to the owner must hear
        // it too (a second Invalidate of the same key is harmless). An owner out of reach is
        // reported, not fatal: its SDKs serve its keys stale for at most maxStaleMs anyway.
        const owner = remoteOwner(req, key);
        if (owner === undefined) return sendJson(res, 200, { app: name, key, seq, hubs: [core.id] });
        try {
          await forwardToOwner(req, owner, key, {
            path: `/api/apps/${encodeURIComponent(name)}/invalidate`,
            body: { key },
            what: 'an invalidation',
            expected: (answered) => answered.key === key,
          });
          return sendJson(res, 200, { app: name, key, seq, hubs: [core.id, owner.id] });
        } catch (err) {
          if (!(err instanceof HttpError) || err.status !== 502) throw err;
          return sendJson(res, 200, { app: name, key, seq, hubs: [core.id], ownerError: err.message });
        }
      }
      // only the owner decides a key (its aggregator tracks it and broadcasts the promotion)
      const owner = remoteOwner(req, key);
      if (owner !== undefined) {
        const answer = await forwardToOwner(req, owner, key, {
          path: `/api/apps/${encodeURIComponent(name)}/promote`,
          body: { key },
          what: 'a promotion',
          expected: (answered) => answered.key === key,
        });
        return sendJson(res, 200, answer);
      }
      if (!core.promote(name, key)) {
        throw new HttpError(422, ErrorCode.Rules, `cannot promote "${key.slice(0, 64)}": no rule of app "${name}" matches it, or another hub of the cluster owns it`, 'key');
      }
      return sendJson(res, 200, { app: name, key, hub: core.id });
    }
    throw new HttpError(404, HttpErrorCode.NotFound, `no route ${method} ${path}`);
  }

  return (req, res) => {
    core.metrics.httpRequests++;
    route(req, res).catch((err: unknown) => {
      if (err instanceof HttpError) {
        if (err.status === 413) res.setHeader('connection', 'close');
        return sendError(res, err);
      }
      options.log(`HTTP ${req.method} ${req.url?.split('?')[0]} failed: ${(err as Error)?.stack ?? String(err)}`);
      sendError(res, new HttpError(500, HttpErrorCode.Internal, 'internal hub error (logged)'));
    });
  };
}
