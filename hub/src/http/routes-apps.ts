/**
 * The routes under `/api/apps/:app/`: a key's QPS history, the app's rules, invalidate and
 * promote by hand. A request about a key another hub owns is answered by that hub
 * (owner-forwarding.ts).
 */
import { ErrorCode, HotKeyError, ValidationError } from '@hotkey/sdk';
import { DEFAULT_RULE } from '@hotkey/sdk/rules';
import { predeclaredRules, predeclaredRows, withoutPredeclared } from '../core/decide/schedule.ts';
import { isValidAppName } from '../core/apps.ts';
import type { Coordinator } from '../core/coordinator.ts';
import type { HubCore } from '../core/hub-core.ts';
import {
  appOfPath,
  checkedKey,
  HttpError,
  keyOf,
  readJson,
  sendJson,
  type RequestContext,
  type Route,
} from './http-request.ts';
import { forwardToOwner, remoteOwner } from './owner-forwarding.ts';
import { clusterHotRows } from './cluster-view.ts';

/** HTTP status for a coordinator's refusal: a missing app is 404, a store that is down 503 (retry). */
const STATUS_OF_CODE: Partial<Record<string, number>> = { [ErrorCode.UnknownApp]: 404, [ErrorCode.Unavailable]: 503 };

/** The handlers of the per-app routes, and their part of the route table in http-api.ts. */
export class AppRoutes {
  readonly #core: HubCore;
  readonly #coordinator: Coordinator;
  readonly #maxBodyBytes: number;

  constructor(core: HubCore, maxBodyBytes: number) {
    this.#core = core;
    this.#coordinator = core.coordinator;
    this.#maxBodyBytes = maxBodyBytes;
  }

  /** The routes under `/api/apps/:app/`, in the order the table tries them. */
  routes(): Route[] {
    return [
      /** `?key=`: the key's recent cluster QPS, answered by its owner hub */
      { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/keys\/qps$/, auth: 'read', handler: (c) => this.keyQps(c) },
      /** `?key=`: a key by its plain name, as shown, and whether it is hot (key privacy) */
      { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/keys\/lookup$/, auth: 'write', handler: (c) => this.lookup(c) },
      /** the app's rules */
      { method: 'GET', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'read', handler: (c) => this.getRules(c) },
      /** body = rule array; 400 names the field, the old rules stay; 503 while Redis is down */
      { method: 'PUT', pattern: /^\/api\/apps\/([^/]+)\/rules$/, auth: 'write', handler: (c) => this.putRules(c) },
      /** body `{key}`: broadcast Invalidate, here and from the key's owner hub; answers `{app, key, seq}` */
      {
        method: 'POST',
        pattern: /^\/api\/apps\/([^/]+)\/invalidate$/,
        auth: 'write',
        handler: (c) => this.invalidate(c),
      },
      /** body `{key}`: promote by hand (422 when no rule matches); answers `{app, key, hub}`, `hub` = the owner that promoted it */
      { method: 'POST', pattern: /^\/api\/apps\/([^/]+)\/promote$/, auth: 'write', handler: (c) => this.promote(c) },
      /** pre-declared hot windows: `{app, predeclared: [{match, from, until, active}]}` (ms since epoch) */
      {
        method: 'GET',
        pattern: /^\/api\/apps\/([^/]+)\/predeclared$/,
        auth: 'read',
        handler: (c) => this.getPredeclared(c),
      },
      /** body `{match, from, until}`: declare `match` (exact key or glob) hot from `from` to `until` (ISO 8601 with a zone, or ms since epoch), stored as the rule's `hotFrom` / `hotUntil`; answers the list */
      {
        method: 'POST',
        pattern: /^\/api\/apps\/([^/]+)\/predeclared$/,
        auth: 'write',
        handler: (c) => this.postPredeclared(c),
      },
      /** `?match=`: drop the window (the rule stays); 404 `HK_ERR_NOT_FOUND` when `match` has none */
      {
        method: 'DELETE',
        pattern: /^\/api\/apps\/([^/]+)\/predeclared$/,
        auth: 'write',
        handler: (c) => this.deletePredeclared(c),
      },
    ];
  }

  /** The app named by the path's first capture, when the hub knows it; 404 otherwise. */
  #knownApp(encoded: string | undefined): string {
    const name = appOfPath(encoded ?? '');
    if (!isValidAppName(name) || this.#coordinator.app(name) === undefined)
      throw new HttpError(404, ErrorCode.UnknownApp, `unknown app "${name.slice(0, 64)}"`);
    return name;
  }

  /** The key's QPS history from this hub when it owns the key, else from its owner hub. */
  async keyQps({ req, res, query, params }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const raw = query.get('key');
    if (raw === null)
      throw new HttpError(400, ErrorCode.BadRequest, 'query parameter "key" is required (URL-encoded)', 'key');
    const asked = checkedKey(raw);
    // a hashed or redacted app's pages know its keys only as shown: find the hot key behind the name
    // (a plain name gets nothing, or a reader could confirm guesses of personal data)
    const privacy = this.#core.keyPrivacy;
    // (redacted names are alike on purpose: they find nothing)
    const mode = privacy.mode(app);
    const key =
      mode === 'plain'
        ? asked
        : mode === 'hash'
          ? clusterHotRows(this.#core, app).find((r) => privacy.show(app, r.key) === asked)?.key
          : undefined;
    if (key === undefined)
      return sendJson(res, 200, {
        app,
        key: asked,
        hub: this.#core.id,
        stepMs: this.#core.qpsHistory.stepMs,
        points: [],
      });
    const owner = remoteOwner(this.#core, req, key);
    if (owner === undefined)
      return sendJson(res, 200, {
        app,
        key: privacy.show(app, key),
        hub: this.#core.id,
        stepMs: this.#core.qpsHistory.stepMs,
        points: this.#core.qpsPoints(app, key),
      });
    const answer = await forwardToOwner(this.#core, req, owner, key, {
      // the name as shown: the owner finds the key behind it the same way
      path: `/api/apps/${encodeURIComponent(app)}/keys/qps?key=${encodeURIComponent(privacy.show(app, key))}`,
      what: 'a QPS history',
      expected: (body) => Array.isArray(body.points),
    });
    sendJson(res, 200, answer);
  }

  /** Admin only: a key by its plain name, as the app's pages, logs and history show it, and whether it is hot. */
  lookup({ res, query, params, fields }: RequestContext): void {
    const app = this.#knownApp(params[0]);
    const raw = query.get('key');
    if (raw === null)
      throw new HttpError(400, ErrorCode.BadRequest, 'query parameter "key" is required (URL-encoded)', 'key');
    const key = checkedKey(raw);
    fields.key = key;
    const shown = this.#core.keyPrivacy.show(app, key);
    const row = clusterHotRows(this.#core, app).find((r) => r.key === key);
    sendJson(res, 200, {
      app,
      keys: this.#core.keyPrivacy.mode(app),
      shown,
      hot: row !== undefined,
      ...(row === undefined ? {} : { row: { ...row, key: shown } }),
    });
  }

  getRules({ res, params }: RequestContext): void {
    const app = this.#knownApp(params[0]);
    const rules = this.#coordinator.rules(app);
    sendJson(res, 200, { app, rules, effective: rules.length > 0 ? rules : [DEFAULT_RULE] });
  }

  async putRules({ req, res, params, fields }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const body = await readJson(req, this.#maxBodyBytes);
    if (Array.isArray(body)) fields.rules = body.length;
    sendJson(res, 200, { app, rules: await this.#storeRules(app, () => body) });
  }

  /** Stores the rules `make` builds (it may throw ValidationError: 400 naming the field). */
  async #storeRules(app: string, make: () => unknown) {
    try {
      return await this.#coordinator.setRules(app, make());
    } catch (err) {
      if (err instanceof ValidationError) throw new HttpError(400, err.code, err.message, err.field);
      if (err instanceof HotKeyError && !(err instanceof HttpError))
        throw new HttpError(STATUS_OF_CODE[err.code] ?? 400, err.code, err.message);
      throw err;
    }
  }

  getPredeclared({ res, params }: RequestContext): void {
    const app = this.#knownApp(params[0]);
    sendJson(res, 200, { app, predeclared: predeclaredRows(this.#coordinator.rules(app), Date.now()) });
  }

  /** `{match, from, until}`: a rule change (the window lives in the rules: Redis in a cluster). */
  async postPredeclared({ req, res, params }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const body = await readJson(req, this.#maxBodyBytes);
    const rules = await this.#storeRules(app, () => predeclaredRules(this.#coordinator.rules(app), body));
    sendJson(res, 200, { app, predeclared: predeclaredRows(rules, Date.now()) });
  }

  /** `?match=`: the rule keeps its detection, loses its window. */
  async deletePredeclared({ res, query, params }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const match = query.get('match');
    if (match === null)
      throw new HttpError(400, ErrorCode.BadRequest, 'query parameter "match" is required (URL-encoded)', 'match');
    const current = this.#coordinator.rules(app);
    const next = withoutPredeclared(current, match);
    if (next === undefined)
      throw new HttpError(404, ErrorCode.NotFound, `no pre-declared window for "${match.slice(0, 64)}"`, 'match');
    const rules = await this.#storeRules(app, () => next);
    sendJson(res, 200, { app, predeclared: predeclaredRows(rules, Date.now()) });
  }

  async invalidate({ req, res, params, fields }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const key = keyOf(await readJson(req, this.#maxBodyBytes));
    fields.key = key;
    const seq = this.#core.invalidateKey(app, key);
    if (seq === undefined) throw new HttpError(503, ErrorCode.Unavailable, 'this hub keeps state for no more apps');
    // Also at the owner: an SDK cut off from this hub but still connected to the owner must hear
    // it too (a second Invalidate of the same key is harmless). An owner out of reach is
    // reported, not fatal: its SDKs serve its keys stale for at most maxStaleMs anyway.
    const owner = remoteOwner(this.#core, req, key);
    if (owner === undefined) return sendJson(res, 200, { app, key, seq, hubs: [this.#core.id] });
    try {
      await forwardToOwner(this.#core, req, owner, key, {
        path: `/api/apps/${encodeURIComponent(app)}/invalidate`,
        body: { key },
        what: 'an invalidation',
        expected: (answered) => answered.key === key,
      });
      sendJson(res, 200, { app, key, seq, hubs: [this.#core.id, owner.id] });
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 502) throw err;
      sendJson(res, 200, { app, key, seq, hubs: [this.#core.id], ownerError: err.message });
    }
  }

  /** Only the owner decides a key (its aggregator tracks it and broadcasts the promotion). */
  async promote({ req, res, params, fields }: RequestContext): Promise<void> {
    const app = this.#knownApp(params[0]);
    const key = keyOf(await readJson(req, this.#maxBodyBytes));
    fields.key = key;
    const owner = remoteOwner(this.#core, req, key);
    if (owner !== undefined) {
      const answer = await forwardToOwner(this.#core, req, owner, key, {
        path: `/api/apps/${encodeURIComponent(app)}/promote`,
        body: { key },
        what: 'a promotion',
        expected: (answered) => answered.key === key,
      });
      return sendJson(res, 200, answer);
    }
    if (!this.#core.promote(app, key)) {
      throw new HttpError(
        422,
        ErrorCode.Rules,
        `cannot promote "${key.slice(0, 64)}": no rule of app "${app}" matches it, or another hub of the cluster owns it`,
        'key',
      );
    }
    sendJson(res, 200, { app, key, hub: this.#core.id });
  }
}
