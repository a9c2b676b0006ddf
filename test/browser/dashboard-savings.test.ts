/**
 * What local caching saves, end to end in headless Chromium: real SDK clients read a hot key
 * through get() (so their reports carry local hits and loader calls), a real hub process sums them,
 * and the dashboard's hot-key table, key detail and app summary show "served locally", loads/s and
 * reads spared/s, and the key detail's loads/s sparkline rises when the key is reloaded (invalidations);
 * /metrics exports the totals. Screenshots: test/artifacts/dashboard-savings.png, dashboard-savings-key.png.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import type { HotKeyClient } from '@hotkey/sdk';
import type { HubProcess } from '../support/hub-process.ts';
import { hubProcess } from '../support/e2e.ts';
import { drive, type Driver } from '../support/traffic.ts';
import { ARTIFACTS, Chromium } from './chromium.ts';
import { delay, waitFor } from '../support/wait.ts';

const RATE = 400;
const KEY = 'item:saved';
const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 100, windowMs: 1000, cacheTtlMs: 5000 }] } } };
const e2e = hubProcess(test, { config, readyTimeoutMs: 40_000 });

let hub: HubProcess;
let browser: Chromium;
let driver: Driver | undefined;
let clients: HotKeyClient[] = [];

/** a canvas's pixels as a data URL (runs in the page; the test's tsconfig has no DOM types) */
const image = (c: unknown) => (c as { toDataURL(): string }).toDataURL();

interface Row {
  key: string;
  localPct?: number;
  loadsPerSec?: number;
}

async function hotRow(): Promise<Row | undefined> {
  const res = await fetch(`${hub.httpUrl}/api/hot?app=shop`, { signal: AbortSignal.timeout(5000) });
  return ((await res.json()) as { hot: Row[] }).hot.find((h) => h.key === KEY);
}

test.before(async () => {
  hub = e2e.hub;
  e2e.defer(() => driver?.stop()); // runs last: the browser closes first
  browser = await Chromium.launchFor(e2e);
  clients = await e2e.sdks(2, (i) => ({ host: `web-${i + 1}` }));
});

test('a hot key read through get() shows served locally %, loads/s and reads spared/s; /metrics has the totals', async () => {
  driver = drive(clients, KEY, RATE, 'get');
  await waitFor('savings reported for the key', async () => ((await hotRow())?.localPct ?? 0) > 90, 10_000);
  const row = (await hotRow())!;
  assert.ok(row.loadsPerSec !== undefined && row.loadsPerSec < 5, `loads/s ${row.loadsPerSec}`);

  const page = await browser.open(`${hub.httpUrl}/`);
  const cell = page.page.getByTestId('hot-row').filter({ hasText: KEY }).locator('.c-localPct');
  await waitFor('served locally in the table', async () => /^\d+\.\d %$/.test((await cell.textContent()) ?? ''), 8000);
  assert.ok(Number.parseFloat((await cell.textContent())!) > 90);
  const loads = await page.page.getByTestId('hot-row').filter({ hasText: KEY }).locator('.c-loadsPerSec').textContent();
  assert.match(loads ?? '', /^\d/);
  const rowSpark = page.page.getByTestId('hot-row').filter({ hasText: KEY }).locator('.c-loadsPerSec canvas.spark');
  assert.is(await rowSpark.count(), 1, 'a loads/s sparkline in the row');
  await waitFor(
    'reads spared in the summary',
    async () => {
      const text = (await page.page.getByTestId('reads-spared').textContent()) ?? '';
      return Number.parseFloat(text.replace(/^· /, '')) > RATE / 4;
    },
    8000,
  );

  await page.page.goto(`${hub.httpUrl}/#/key/shop/${encodeURIComponent(KEY)}`);
  await waitFor(
    'served locally in the key detail',
    async () => /Served locally\s*\d+\.\d %/.test((await page.page.locator('body').textContent()) ?? ''),
    8000,
  );

  // the key detail's loads/s sparkline: bounded, and it rises when the key is loaded again
  const spark = page.page.getByTestId('key-loads-spark');
  assert.ok(await spark.isVisible(), 'loads/s sparkline shown');
  const points = async () => Number(await spark.getAttribute('data-points'));
  await waitFor('loads/s sparkline has samples', async () => (await points()) >= 2, 8000);
  const maxBefore = Number(await spark.getAttribute('data-max'));
  const imageBefore = await spark.evaluate(image);
  // each invalidation drops the value at both instances: their next reads load it
  for (let i = 0; i < 6; i++) {
    await clients[i % 2]!.invalidate(KEY);
    await delay(150);
  }
  await waitFor(
    'loads/s sparkline shows the reloads',
    async () => Number(await spark.getAttribute('data-max')) > Math.max(maxBefore, 1),
    10_000,
  );
  assert.not.equal(await spark.evaluate(image), imageBefore, 'the drawing changed');
  assert.ok((await points()) <= 60, 'bounded to a minute of samples');
  await page.page.screenshot({ path: join(ARTIFACTS, 'dashboard-savings-key.png') });
  // back in the table, the row's loads/s sparkline shows the same minute
  await page.page.goto(`${hub.httpUrl}/#/hot`);
  await waitFor('the row again', async () => (await rowSpark.count()) === 1, 8000);
  await page.page.screenshot({ path: join(ARTIFACTS, 'dashboard-savings.png') });

  const metrics = await (await fetch(`${hub.httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  assert.ok(metric('hotkey_local_hits_total') > RATE, `local hits ${metric('hotkey_local_hits_total')}`);
  assert.ok(metric('hotkey_loader_calls_total') >= 1);
  assert.ok(metric('hotkey_local_hits_total') > 10 * metric('hotkey_loader_calls_total'));
});

test.run();
