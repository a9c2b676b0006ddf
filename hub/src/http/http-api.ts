/**
 * The hub's HTTP surface on its single port: health, readiness, Prometheus metrics, the REST API
 * and the page. One table lists every route as `{method, pattern, auth, handler}`; `dispatch` finds
 * the route, answers 404 / 405 itself, checks the route's auth, then runs the handler. Errors are
 * always `{ error: { code, message } }` (plus `field` for bad rules or keys). The hub-wide handlers
 * live in routes-hub.ts, the per-app ones in routes-apps.ts, who may call a route in http-auth.ts,
 * the dashboard's files in dashboard-assets.ts, forwarding to a key's owner hub in
 * owner-forwarding.ts, request parsing and HttpError in http-request.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '@hotkey/sdk';
import type { HubCore } from '../core/hub-core.ts';
import type { Logger } from '../core/logger.ts';
import { serveAsset } from './dashboard-assets.ts';
import { authorize, type HttpTokens } from './http-auth.ts';
import { HttpError, sendError, type Route } from './http-request.ts';
import { AppRoutes } from './routes-apps.ts';
import { HubRoutes, type HubRouteOptions } from './routes-hub.ts';

export interface HttpApiOptions extends HubRouteOptions {
  /** read on every request, so a config reload may change them (the live config) */
  tokens: Readonly<HttpTokens>;
  maxBodyBytes: number;
  /** request failures, and one `api_write` event per admin write (its app, key, status) */
  logger: Logger;
}

export function createHttpHandler(options: HttpApiOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { core } = options;
  const routes: readonly Route[] = [
    ...new HubRoutes(options).routes(),
    ...new AppRoutes(core, options.maxBodyBytes).routes(),
  ];
  return (req, res) => {
    core.metrics.httpRequests++;
    dispatch(routes, options, req, res).catch((err: unknown) => answerFailure(options.logger, req, res, err));
  };
}

/** Finds the route for the request, checks its auth and runs it; throws HttpError for 404 / 405 / 401 / 403. */
async function dispatch(
  routes: readonly Route[],
  options: HttpApiOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
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
    // refused writes (401/403) too: an admin write is one event whatever its outcome
    if (route.auth === 'write') logWriteWhenDone(options, req, res, { method, path, app: params[0], fields });
    authorize(route.auth, req, options.tokens);
    return route.handler({ req, res, method, path, query: url.searchParams, params, fields });
  }
  if (serveAsset(options.asset, res, method, path, req.headers.host)) return;
  if (allowed.length > 0)
    throw new HttpError(405, ErrorCode.Method, `${method} ${path} is not supported; use ${allowed.join(' or ')}`);
  throw new HttpError(404, ErrorCode.NotFound, `no route ${method} ${path}`);
}

/** One `api_write` event once the answer is sent, with the fields the handler added (a key as the app shows it). */
function logWriteWhenDone(
  { core, logger }: { core: HubCore; logger: Logger },
  req: IncomingMessage,
  res: ServerResponse,
  write: { method: string; path: string; app: string | undefined; fields: Record<string, unknown> },
): void {
  res.once('finish', () => {
    const { method, path, fields } = write;
    const app = write.app === undefined ? undefined : safeDecode(write.app);
    const forwardedBy = req.headers['x-hotkey-forwarded-by'];
    if (app !== undefined && typeof fields.key === 'string') fields.key = core.keyPrivacy.show(app, fields.key);
    logger.info(
      { evt: 'api_write', method, path, app, ...fields, status: res.statusCode, forwardedBy },
      'admin API write',
    );
  });
}

/** An HttpError is the answer; anything else is logged and answered 500. */
function answerFailure(logger: Logger, req: IncomingMessage, res: ServerResponse, err: unknown): void {
  if (err instanceof HttpError) {
    if (err.status === 413) res.setHeader('connection', 'close');
    return sendError(res, err);
  }
  logger.error({ evt: 'http_error', method: req.method, path: req.url?.split('?')[0], err }, 'HTTP request failed');
  sendError(res, new HttpError(500, ErrorCode.Internal, 'internal hub error (logged)'));
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

/** The app name of a path, for a log line: never throws, and bounded. */
function safeDecode(encoded: string): string {
  try {
    return decodeURIComponent(encoded).slice(0, 256);
  } catch {
    return encoded.slice(0, 256);
  }
}
