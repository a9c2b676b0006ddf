/**
 * The key detail chart in headless Chromium against a real hub process and real SDK clients: a
 * page opened on a key that has been hot for a while shows the hub's earlier QPS points from its
 * first paint (not only what the page sampled since it opened), then appends live samples. The
 * hub's /metrics counts the page. Screenshot: test/artifacts/dashboard-key-history.png.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import type { HotKeyClient } from '@hotkey/sdk';
import type { HubProcess } from '../support/hub-process.ts';
import { hubProcess } from '../support/e2e.ts';
import { drive, type Driver } from '../support/traffic.ts';
import { ARTIFACTS, Chromium, type WatchedPage } from './chromium.ts';
import { delay, waitFor } from '../support/wait.ts';

const RATE = 400;
const KEY = 'item:hist/a'; // a '/' in the key: the route and the API must both keep it
const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 100, windowMs: 1000, hotMs: 30_000 }] } } };
const e2e = hubProcess(test, { config, readyTimeoutMs: 40_000 });

let hub: HubProcess;
let browser: Chromium;
let driver: Driver | undefined;
let clients: HotKeyClient[] = [];

async function apiJson(path: string): Promise<any> {
  const res = await fetch(`${hub.httpUrl}${path}`, { signal: AbortSignal.timeout(5000) });
  return res.json();
}

async function chartData(page: WatchedPage): Promise<{ points: number; history: number; firstAt: number }> {
  const host = page.page.getByTestId('key-chart');
  const [points, history, firstAt] = await Promise.all(
    ['data-points', 'data-history-points', 'data-first-at'].map((a) => host.getAttribute(a)),
  );
  return { points: Number(points ?? 0), history: Number(history ?? 0), firstAt: Number(firstAt ?? 0) };
}

test.before(async () => {
  hub = e2e.hub;
  e2e.defer(() => driver?.stop()); // runs last: the browser closes first
  browser = await Chromium.launchFor(e2e);
  clients = await e2e.sdks(3, (i) => ({ host: `web-${i + 1}` }));
});

test('a key hot for a few seconds shows its earlier QPS points as soon as its detail opens, then live ones', async () => {
  driver = drive(clients, KEY, RATE);
  await waitFor(
    `${KEY} hot`,
    async () => ((await apiJson('/api/hot?app=shop')).hot as { key: string }[]).some((h) => h.key === KEY),
    10_000,
  );
  await delay(6000); // the hub samples once a second: about six points before any page looks
  const { points: kept } = await apiJson(`/api/apps/shop/keys/qps?key=${encodeURIComponent(KEY)}`);
  assert.ok(kept.length >= 4, `hub kept ${kept.length} points`);

  const openedAt = Date.now();
  const page = await browser.open(`${hub.httpUrl}/#/key/shop/${encodeURIComponent(KEY)}`);
  await waitFor(
    'key detail',
    async () => (await page.page.getByTestId('key-title').textContent())?.includes(KEY) ?? false,
    5000,
  );
  const chartStarted = performance.now();
  await waitFor('history on the chart', async () => (await chartData(page)).history >= 4, 5000);
  const tookMs = performance.now() - chartStarted;
  const first = await chartData(page);
  console.log(
    `# chart drawn with ${first.points} points (${first.history} from the hub) ${Math.round(tookMs)} ms after the page loaded; first point ${openedAt - first.firstAt} ms before the page opened`,
  );
  assert.ok(
    first.points >= first.history && first.history >= kept.length - 1,
    `${first.points} points on the chart, ${first.history} from the hub, ${kept.length} kept`,
  );
  assert.ok(first.firstAt <= openedAt - 3000, `the chart starts ${openedAt - first.firstAt} ms before the page opened`);
  assert.match((await page.page.getByTestId('key-chart-note').textContent()) ?? '', new RegExp(`kept by ${hub.id}`));

  // the page's own samples extend the curve
  await waitFor('live samples appended', async () => (await chartData(page)).points >= first.points + 2, 6000);
  const metrics = await (await fetch(`${hub.httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  assert.ok(metric('hotkey_dashboard_pages') >= 1, 'the open page is counted');
  assert.ok(metric('hotkey_dashboard_frames_sent_total') > 0, 'feed frames counted');
  await page.page.screenshot({ path: join(ARTIFACTS, 'dashboard-key-history.png') });
  assert.equal(page.problems, []);
  await page.page.close();
});

test('a key that was not hot lately says so and charts live samples only', async () => {
  const page = await browser.open(`${hub.httpUrl}/#/key/shop/${encodeURIComponent('item:quiet')}`);
  await waitFor(
    'note shown',
    async () => (await page.page.getByTestId('key-chart-note').textContent())?.includes('not hot lately') ?? false,
    5000,
  );
  assert.is((await chartData(page)).history, 0);
  assert.equal(page.problems, []);
  await page.page.close();
});

test('a key address with bad percent-encoding shows an error state, throws nothing, and the page still works', async () => {
  const page = await browser.open(`${hub.httpUrl}/#/key/shop/item%E0%A4%A`);
  await waitFor('the key error state', async () => await page.page.getByTestId('key-error').isVisible(), 5000);
  assert.is(await page.page.getByTestId('key-title').textContent(), 'Key not found');
  assert.is(await page.page.getByTestId('key-chart').isVisible(), false, 'no chart for a key that is not named');
  // a good address afterwards renders the key as usual
  await page.page.evaluate(
    (hash) => {
      (globalThis as unknown as { location: { hash: string } }).location.hash = hash;
    },
    `#/key/shop/${encodeURIComponent('item:quiet')}`,
  );
  await waitFor(
    'the good key shown',
    async () => (await page.page.getByTestId('key-title').textContent())?.includes('item:quiet') ?? false,
    5000,
  );
  assert.is(await page.page.getByTestId('key-error').isVisible(), false);
  assert.equal(page.problems, [], 'no URIError or other page error');
  await page.page.close();
});

test.run();
