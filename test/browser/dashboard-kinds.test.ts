/**
 * The hot-key table in headless Chromium says which accesses made a key hot: a write-hot key (rule
 * kind 'write', driven by writes) carries a "write" badge, a read-hot key none. Real hub process,
 * real SDK clients.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { ARTIFACTS, Chromium, type WatchedPage } from './chromium.ts';
import { waitFor } from '../support/wait.ts';

const configPath = writeConfig(
  {
    apps: {
      shop: {
        rules: [
          { match: 'stock:*', threshold: 50, kind: 'write' },
          { match: '*', threshold: 50 },
        ],
      },
    },
  },
  'hotkey-browser-kinds-',
);

let hub: HubProcess;
let browser: Chromium;
let watched: WatchedPage;
let hk: HotKeyClient;
let timer: NodeJS.Timeout | undefined;

test.before(async () => {
  hub = await HubProcess.start({ args: ['--config', configPath] });
  browser = await Chromium.launch();
  watched = await browser.open(`${hub.httpUrl}/`);
  hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], flushIntervalMs: 50 });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
});

test.after(async () => {
  clearInterval(timer);
  await hk?.close();
  await browser?.close();
  await hub?.stop();
});

test('a write-hot key shows a write badge, a read-hot key none', async () => {
  // keep both keys hot while the page looks: 40 writes and 40 reads every 100 ms
  timer = setInterval(() => {
    for (let i = 0; i < 40; i++) {
      hk.track('stock:1', 'write');
      hk.track('page:1');
    }
  }, 100);
  const row = (key: string) =>
    watched.page.locator('.vt-rows .vt-row').filter({ has: watched.page.locator('.c-key', { hasText: key }) });
  await waitFor(
    'both rows shown',
    async () => (await row('stock:1').count()) > 0 && (await row('page:1').count()) > 0,
    10_000,
  );
  const writeBadge = row('stock:1').getByTestId('kind-badge');
  await waitFor(
    'write badge',
    async () => (await writeBadge.isVisible()) && (await writeBadge.textContent()) === 'write',
    5000,
  );
  assert.not.ok(await row('page:1').getByTestId('kind-badge').isVisible(), 'a read-hot key has no badge');
  assert.is(await row('page:1').locator('.c-key').textContent(), 'page:1');
  await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-kinds.png') });
  assert.equal(watched.problems, []);
});

test.run();
