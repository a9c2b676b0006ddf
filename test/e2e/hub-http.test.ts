import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '@hotkey/sdk/protocol';
import { request } from '../support/http.ts';
import { hubInProcess, startHubInProcess } from '../support/e2e.ts';

const ADMIN = 'admin-secret';

const http = (base: string, path: string, init: RequestInit & { token?: string } = {}) =>
  request(base + path, init, 3000);
const e2e = hubInProcess(test, {
  adminToken: ADMIN,
  config: { apps: { shop: { token: 'app-token', rules: [{ match: 'item:*', threshold: 50 }] }, blog: {} } },
  tunables: { configDebounceMs: 10 },
});
const readOnly = hubInProcess(test, { dashboardToken: 'dash', config: { apps: { shop: {} } } });
const api = (path: string, init?: RequestInit & { token?: string }) => http(e2e.hub.httpUrl, path, init);

test('healthz, readyz and metrics', async () => {
  const h = await api('/healthz');
  assert.is(h.status, 200);
  assert.is(h.body.status, 'ok');
  assert.is(h.body.id, e2e.hub.id);
  const r = await api('/readyz');
  assert.is(r.status, 200);
  assert.is(r.body.status, 'ready');
  const m = await api('/metrics');
  assert.is(m.status, 200);
  assert.match(m.headers.get('content-type') ?? '', /text\/plain/);
  for (const name of [
    'hotkey_connections',
    'hotkey_reports_total',
    'hotkey_records_ingested_total',
    'hotkey_promotions_total',
    'hotkey_demotions_total',
    'hotkey_invalidations_total',
    'hotkey_keys_tracked',
    'hotkey_records_dropped_total',
    'hotkey_slow_consumers_total',
    'hotkey_heap_used_bytes',
  ]) {
    assert.match(m.text, new RegExp(`^${name} \\d+`, 'm'), name);
  }
});

test('reports show up in metrics, /api/hot, /api/instances, /api/events and /api/history', async () => {
  const { client } = await e2e.join('shop', { token: 'app-token', instance: 'inst-1', host: 'web-1' });
  client.send({ t: MsgType.Report, keys: ['item:1', 'item:2'], counts: [50, 10] });
  await client.next(MsgType.Promote);
  const hot = await api('/api/hot?app=shop');
  assert.is(hot.status, 200);
  assert.is(hot.body.hot.length, 1);
  const row = hot.body.hot[0];
  assert.equal(
    { app: row.app, key: row.key, threshold: row.threshold, instances: row.instances, hub: row.hub },
    { app: 'shop', key: 'item:1', threshold: 50, instances: 1, hub: e2e.hub.id },
  );
  // 50 accesses over the time the window covers: 9 slices of 100 ms plus 0..100 ms of the current one
  assert.ok(row.qps >= 50 && row.qps <= (50 * 1000) / 900, `qps ${row.qps}`);
  assert.ok(row.since > Date.now() - 5000);
  assert.equal((await api('/api/hot?app=blog')).body.hot, []);

  const inst = await api('/api/instances?app=shop');
  assert.is(inst.body.instances.length, 1);
  assert.is(inst.body.instances[0].instance, 'inst-1');
  assert.is(inst.body.instances[0].host, 'web-1');

  const events = await api('/api/events?since=0');
  const promote = events.body.events.find((e: any) => e.type === 'promote' && e.key === 'item:1');
  assert.ok(promote);
  assert.is(promote.hub, e2e.hub.id);
  assert.ok(promote.latencyMs >= 0);
  const hist = await api('/api/history?app=shop&since=0&limit=10');
  assert.ok(hist.body.events.some((e: any) => e.key === 'item:1'));
  assert.equal((await api('/api/history?app=blog')).body.events, []);

  const m = await api('/metrics');
  assert.match(m.text, /^hotkey_records_ingested_total 2$/m);
  assert.match(m.text, /^hotkey_promotions_total 1$/m);
  assert.match(m.text, /^hotkey_connections 1$/m);

  const apps = await api('/api/apps');
  assert.equal(
    apps.body.apps.map((a: any) => a.name),
    ['blog', 'shop'],
  );
  assert.is(apps.body.apps.find((a: any) => a.name === 'shop').instances, 1);
  const cluster = await api('/api/cluster');
  assert.is(cluster.body.self, e2e.hub.id);
  assert.equal(cluster.body.members, [{ id: e2e.hub.id, url: e2e.hub.url }]);
});

test('rules: GET, PUT needs the admin token, bad rules are 400 naming the field and change nothing', async () => {
  const get = await api('/api/apps/shop/rules');
  assert.is(get.status, 200);
  assert.is(get.body.rules[0].match, 'item:*');

  const body = JSON.stringify([{ match: 'user:*', threshold: 5 }]);
  const none = await api('/api/apps/shop/rules', { method: 'PUT', body });
  assert.is(none.status, 401);
  assert.is(none.body.error.code, 'HK_ERR_AUTH');
  const wrong = await api('/api/apps/shop/rules', { method: 'PUT', body, token: 'nope' });
  assert.is(wrong.status, 403);
  assert.is(wrong.body.error.code, 'HK_ERR_AUTH');

  const bad = await api('/api/apps/shop/rules', {
    method: 'PUT',
    body: JSON.stringify([{ match: 'user:*', threshold: -1 }]),
    token: ADMIN,
  });
  assert.is(bad.status, 400);
  assert.is(bad.body.error.code, 'HK_ERR_RULES');
  assert.is(bad.body.error.field, 'rules[0].threshold');
  assert.is((await api('/api/apps/shop/rules')).body.rules[0].match, 'item:*', 'previous rules stay');

  const notJson = await api('/api/apps/shop/rules', { method: 'PUT', body: '[{', token: ADMIN });
  assert.is(notJson.status, 400);
  assert.is(notJson.body.error.code, 'HK_ERR_BAD_REQUEST');

  // a connected SDK hears the new rules live through Config
  const { client } = await e2e.join('shop', { token: 'app-token', instance: 'rules-sdk' });
  const ok = await api('/api/apps/shop/rules', { method: 'PUT', body, token: ADMIN });
  assert.is(ok.status, 200);
  assert.is(ok.body.rules[0].threshold, 5);
  const cfg = await client.next(MsgType.Config, 2000, (c) => c.rules[0]?.match === 'user:*');
  assert.is(cfg.rules[0]!.threshold, 5);
  client.send({ t: MsgType.Report, keys: ['user:9'], counts: [5] });
  assert.is((await client.next(MsgType.Promote)).key, 'user:9', 'the new rule applies to detection');

  const unknown = await api('/api/apps/nope/rules', { method: 'PUT', body, token: ADMIN });
  assert.is(unknown.status, 404);
  assert.is(unknown.body.error.code, 'HK_ERR_UNKNOWN_APP');
});

test('invalidate and promote by hand reach the SDKs', async () => {
  const { client } = await e2e.join('blog', { instance: 'manual' });
  const inv = await api('/api/apps/blog/invalidate', {
    method: 'POST',
    body: JSON.stringify({ key: 'post:1' }),
    token: ADMIN,
  });
  assert.is(inv.status, 200);
  const msg = await client.next(MsgType.Invalidate);
  assert.equal({ key: msg.key, seq: msg.seq }, { key: 'post:1', seq: inv.body.seq });

  const pro = await api('/api/apps/blog/promote', {
    method: 'POST',
    body: JSON.stringify({ key: 'post:2' }),
    token: ADMIN,
  });
  assert.is(pro.status, 200);
  assert.is((await client.next(MsgType.Promote)).key, 'post:2');
  const events = (await api('/api/events?since=0')).body.events;
  assert.ok(events.some((e: any) => e.type === 'promote' && e.key === 'post:2' && e.manual === true));
  assert.ok(events.some((e: any) => e.type === 'invalidate' && e.key === 'post:1'));

  const noKey = await api('/api/apps/blog/promote', { method: 'POST', body: '{}', token: ADMIN });
  assert.is(noKey.status, 400);
  assert.is(noKey.body.error.field, 'key');
  const longKey = await api('/api/apps/blog/invalidate', {
    method: 'POST',
    body: JSON.stringify({ key: 'x'.repeat(2000) }),
    token: ADMIN,
  });
  assert.is(longKey.status, 400);
  assert.is(longKey.body.error.code, 'HK_ERR_KEY_TOO_LONG');
  const noAuth = await api('/api/apps/blog/invalidate', { method: 'POST', body: JSON.stringify({ key: 'a' }) });
  assert.is(noAuth.status, 401);
  const wrongMethod = await api('/api/apps/blog/invalidate');
  assert.is(wrongMethod.status, 405);
});

test('body limit, unknown routes and JSON error shape', async () => {
  const big = await api('/api/apps/blog/invalidate', {
    method: 'POST',
    body: JSON.stringify({ key: 'a', pad: 'x'.repeat(100_000) }),
    token: ADMIN,
  });
  assert.is(big.status, 413);
  assert.is(big.body.error.code, 'HK_ERR_BODY_TOO_LARGE');
  const missing = await api('/api/nothing');
  assert.is(missing.status, 404);
  assert.type(missing.body.error.message, 'string');
  assert.is(missing.body.error.code, 'HK_ERR_NOT_FOUND');
  const page = await api('/');
  assert.is(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.match(page.text, /<html/i, 'the page (the dashboard, or the fallback page when it cannot be built)');
});

test('without an admin token writes are refused with a hint; with a dashboard token reads need it', async () => {
  const w = await http(readOnly.hub.httpUrl, '/api/apps/x/rules', { method: 'PUT', body: '[]', token: 'anything' });
  assert.is(w.status, 403);
  assert.is(w.body.error.code, 'HK_ERR_AUTH');
  assert.match(w.body.error.message, /--admin-token/);
  assert.is((await http(readOnly.hub.httpUrl, '/api/hot')).status, 401);
  assert.is((await http(readOnly.hub.httpUrl, '/api/hot', { token: 'nope' })).status, 403);
  const ok = await http(readOnly.hub.httpUrl, '/api/hot', { token: 'dash' });
  assert.is(ok.status, 200);
  assert.equal(ok.body.hot, []);
  assert.is((await http(readOnly.hub.httpUrl, '/healthz')).status, 200, 'health stays open');
  assert.is((await http(readOnly.hub.httpUrl, '/api/apps/shop/rules', { token: 'dash' })).status, 200);
  assert.is((await http(readOnly.hub.httpUrl, '/api/apps/nope/rules', { token: 'dash' })).status, 404);
});

test('without the dashboard token an app that exists and one that does not get the same refusal', async () => {
  for (const token of [undefined, 'nope']) {
    const known = await http(readOnly.hub.httpUrl, '/api/apps/shop/rules', { token });
    const unknown = await http(readOnly.hub.httpUrl, '/api/apps/nope/rules', { token });
    assert.is(known.status, token === undefined ? 401 : 403);
    assert.is(unknown.status, known.status, `token ${token}: same status`);
    assert.equal(unknown.body, known.body, `token ${token}: same body`);
    const history = await http(readOnly.hub.httpUrl, '/api/apps/nope/keys/qps?key=a', { token });
    assert.is(history.status, known.status, 'key history too');
  }
});

test('readyz reports not ready while closing', async () => {
  const h = await startHubInProcess();
  const base = h.httpUrl;
  assert.is((await http(base, '/readyz')).status, 200);
  h.ready = false;
  const r = await http(base, '/readyz');
  assert.is(r.status, 503);
  await h.close();
});

test.run();
