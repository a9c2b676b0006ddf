/**
 * What local caching saves, end to end in headless Chromium: real SDK clients read a hot key
 * through get() (so their reports carry local hits and loader calls), a real hub process sums them,
 * and the dashboard's hot-key table, key detail and app summary show "served locally", loads/s and
 * reads spared/s; /metrics exports the totals. Screenshot: test/artifacts/dashboard-savings.png.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { drive, type Driver } from '../support/traffic.ts';
import { ARTIFACTS, Chromium } from './chromium.ts';
import { waitFor, within } from '../support/wait.ts';

const RATE = 400;
const KEY = 'item:saved';
const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 100, windowMs: 1000, cacheTtlMs: 5000 }] } } };
const configPath = writeConfig(config, 'hotkey-browser-savings-');

let hub: HubProcess;
let browser: Chromium;
let driver: Driver | undefined;
const clients: HotKeyClient[] = [];

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
  hub = await within('hub start', HubProcess.start({ args: ['--config', configPath] }), 40_000);
  browser = await within('chromium launch', Chromium.launch(), 40_000);
  const list = Array.from(
    { length: 2 },
    (_, i) => new HotKeyClient({ app: 'shop', hubs: [hub.url], host: `web-${i + 1}`, reconnectMaxMs: 300 }),
  );
  clients.push(...list);
  await Promise.all(list.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
});

test.after(async () => {
  driver?.stop();
  await within('teardown', Promise.all([...clients.map((hk) => hk.close()), browser?.close(), hub?.stop()]), 20_000);
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
  await waitFor(
    'reads spared in the summary',
    async () => {
      const text = (await page.page.getByTestId('reads-spared').textContent()) ?? '';
      return Number.parseFloat(text.replace(/^· /, '')) > RATE / 4;
    },
    8000,
  );
  await page.page.screenshot({ path: join(ARTIFACTS, 'dashboard-savings.png') });

  await page.page.goto(`${hub.httpUrl}/#/key/shop/${encodeURIComponent(KEY)}`);
  await waitFor(
    'served locally in the key detail',
    async () => /Served locally\s*\d+\.\d %/.test((await page.page.locator('body').textContent()) ?? ''),
    8000,
  );

  const metrics = await (await fetch(`${hub.httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  assert.ok(metric('hotkey_local_hits_total') > RATE, `local hits ${metric('hotkey_local_hits_total')}`);
  assert.ok(metric('hotkey_loader_calls_total') >= 1);
  assert.ok(metric('hotkey_local_hits_total') > 10 * metric('hotkey_loader_calls_total'));
});

test.run();
