/**
 * The dashboard in headless Chromium against a real hub process and real SDK clients: it loads
 * clean, shows a key driven hot within 2 s of its promotion and drops it after demotion, edits
 * rules (which change detection live), shows bad rules inline without changing anything, and
 * refuses writes without the admin token. Screenshots of every view go to test/artifacts/.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { reporterBit } from '../../hub/src/core/aggregate/reporter-count.ts';
import { drive } from '../support/traffic.ts';
import { ARTIFACTS, Chromium, type WatchedPage } from './chromium.ts';
import { delay, waitFor } from '../support/wait.ts';

const ADMIN = 'admin-s3cret-token';
const config = {
  apps: {
    // short windows so demotion (2 cool windows of 500 ms) happens within a few seconds
    shop: { rules: [{ match: 'item:*', threshold: 100, windowMs: 500, demoteWindows: 2, hotMs: 30_000 }] },
    promo: { rules: [] },
    limits: { rules: [] },
  },
};
const configPath = writeConfig(config, 'hotkey-browser-');

let hub: HubProcess;
let browser: Chromium;
let watched: WatchedPage;
const clients: HotKeyClient[] = [];

/**
 * `n` instance ids on distinct reporter bits: the hub counts a key's instances by linear counting
 * over 128 bits (reporter-count.ts), so random ids would collide, and show 2 of 3, in ~2 % of runs.
 */
function distinctIds(app: string, n: number): string[] {
  const ids: string[] = [];
  const bits = new Set<number>();
  for (let i = 1; ids.length < n; i++) {
    const id = `${app}-web-${i}`;
    if (bits.has(reporterBit(id))) continue;
    bits.add(reporterBit(id));
    ids.push(id);
  }
  return ids;
}

async function sdks(app: string, n: number): Promise<HotKeyClient[]> {
  const list = distinctIds(app, n).map(
    (instanceId, i) =>
      new HotKeyClient({ app, hubs: [hub.url], host: `web-${i + 1}`, instanceId, reconnectMaxMs: 300 }),
  );
  clients.push(...list);
  await Promise.all(list.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
  return list;
}

async function api(path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${hub.httpUrl}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.json() };
}

async function isHot(app: string, key: string): Promise<boolean> {
  const { body } = await api(`/api/hot?app=${app}`);
  return (body.hot as { key: string }[]).some((h) => h.key === key);
}

function row(key: string) {
  return watched.page.locator('.vt-rows .vt-row').filter({
    has: watched.page.locator('.c-key', { hasText: new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }),
  });
}

async function shot(name: string): Promise<void> {
  await watched.page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`) });
}

test.before(async () => {
  hub = await HubProcess.start({ args: ['--config', configPath, '--admin-token', ADMIN] });
  browser = await Chromium.launch();
  // writes without the token are refused on purpose in these tests: 401/403 are expected answers
  watched = await browser.open(`${hub.httpUrl}/`, {
    expectStatus: (url, status) => (status === 401 || status === 403 || status === 404) && url.includes('/api/apps/'),
  });
});

test.after(async () => {
  await Promise.all(clients.map((hk) => hk.close()));
  await browser?.close();
  await hub?.stop();
});

test('the page loads from the hub alone, goes live, with no failed request or console error', async () => {
  await waitFor(
    'live badge',
    async () => (await watched.page.getByTestId('live-state').textContent())?.startsWith('live') ?? false,
    5000,
  );
  assert.match((await watched.page.getByTestId('live-state').textContent()) ?? '', hub.id);
  for (const url of watched.urls)
    assert.ok(
      url.startsWith(hub.httpUrl) || url.startsWith(hub.httpUrl.replace('http', 'ws')) || url.startsWith('data:'),
      `request left the hub: ${url}`,
    );
  assert.equal(watched.problems, []);
});

test('a key driven hot by SDK clients shows within 2 s of its promotion and leaves after demotion', async () => {
  const group = await sdks('shop', 3);
  const driver = drive(group, 'item:flash', 400);
  let seenAt = 0;
  try {
    await waitFor('item:flash in the table', async () => (await row('item:flash').count()) > 0, 10_000);
    seenAt = Date.now();
    const { body } = await api('/api/events?since=0');
    const promoted = (body.events as { type: string; key: string; at: number; latencyMs?: number }[]).find(
      (e) => e.type === 'promote' && e.key === 'item:flash',
    );
    assert.ok(promoted, 'the hub recorded the promotion');
    const lag = seenAt - promoted!.at;
    console.log(
      `# item:flash on the page ${lag} ms after the hub promoted it (detection latency ${promoted!.latencyMs} ms)`,
    );
    assert.ok(lag < 2000, `row appeared ${lag} ms after promotion`);
    // the row carries live values: QPS near the driven rate, the rule's threshold, 3 instances
    await waitFor(
      '3 instances reporting',
      async () => (await row('item:flash').locator('.c-instances').textContent()) === '3',
      10_000, // all three must have reported within one window: slow on a box running the suite
    );
    assert.match((await row('item:flash').locator('.c-threshold').textContent()) ?? '', /^100\/500ms \(\d+\.\d×\)$/);
    await delay(2500); // let the sparkline collect a few samples for the screenshot
    await shot('hot');
    await row('item:flash').locator('.c-key').click();
    await waitFor(
      'key detail',
      async () => (await watched.page.getByTestId('key-title').textContent())?.includes('item:flash') ?? false,
      3000,
    );
    await waitFor(
      'rule shown',
      async () => (await watched.page.locator('.rule-box').textContent())?.includes('item:*') ?? false,
      3000,
    );
    await delay(2000);
    await shot('key-detail');
  } finally {
    driver.stop();
  }
  await watched.page.goto(`${hub.httpUrl}/#/hot`);
  await waitFor(
    'item:flash leaves the table after demotion',
    async () => (await row('item:flash').count()) === 0 && !(await isHot('shop', 'item:flash')),
    15_000,
  );
  await watched.page.goto(`${hub.httpUrl}/#/events`);
  await waitFor(
    'demotion listed',
    async () =>
      (await watched.page.locator('[data-testid=event-row].ev-demote').filter({ hasText: 'item:flash' }).count()) > 0,
    5000,
  );
  assert.ok(
    (await watched.page
      .locator('[data-testid=event-row].ev-promote')
      .filter({ hasText: 'item:flash' })
      .filter({ hasText: /detected in \d+ ms/ })
      .count()) > 0,
  );
  await shot('events');
  await watched.page.goto(`${hub.httpUrl}/#/cluster`);
  await waitFor(
    'SDK instances listed',
    async () => (await watched.page.getByTestId('instances-body').locator('tr').count()) >= 3,
    5000,
  );
  assert.match((await watched.page.getByTestId('hubs-body').textContent()) ?? '', hub.id);
  await shot('cluster');
  await watched.page.goto(`${hub.httpUrl}/#/history`);
  await waitFor(
    'history lists item:flash',
    async () => (await watched.page.getByTestId('history-body').textContent())?.includes('item:flash') ?? false,
    5000,
  );
  const download = watched.page.waitForEvent('download', { timeout: 5000 });
  await watched.page.getByTestId('history-csv').click();
  const csv = readFileSync((await (await download).path())!, 'utf8');
  assert.match(csv, /^app,key,promotions,peak_qps,hot_ms,invalidations,mean_detection_ms,first_at,last_at\r\n/);
  assert.match(csv, /\r\nshop,item:flash,1,\d+,\d+,0,\d+,/);
  await shot('history');
  assert.equal(watched.problems, []);
});

test('a write without the admin token is refused and changes nothing', async () => {
  // from Node: no token, then a wrong one
  const put = (headers: Record<string, string>) =>
    api('/api/apps/promo/rules', {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...headers },
      body: '[{"match":"x","threshold":5}]',
    });
  assert.is((await put({})).status, 401);
  const wrong = await put({ authorization: 'Bearer nope' });
  assert.is(wrong.status, 403);
  assert.is(wrong.body.error.code, 'HK_ERR_AUTH');
  // from the page: the action asks for the token; cancelling leaves an error and no event
  await watched.page.goto(`${hub.httpUrl}/#/hot`);
  await watched.page.getByTestId('action-app').fill('shop');
  await watched.page.getByTestId('action-key').fill('item:nobody');
  await watched.page.getByTestId('action-invalidate').click();
  await waitFor('token dialog', async () => (await watched.page.getByTestId('token-dialog').count()) === 1, 3000);
  assert.match((await watched.page.getByTestId('token-reason').textContent()) ?? '', /admin token/);
  await shot('token-prompt');
  await watched.page.getByRole('button', { name: 'Cancel' }).click();
  await waitFor('refusal shown', async () => (await watched.page.getByTestId('toast-error').count()) > 0, 3000);
  const { body } = await api('/api/events?since=0');
  assert.not.ok((body.events as { key: string }[]).some((e) => e.key === 'item:nobody'));
  assert.equal((await api('/api/apps/promo/rules')).body.rules, []);
});

test('a bad rule shows an inline error and changes nothing', async () => {
  await watched.page.goto(`${hub.httpUrl}/#/rules/promo`);
  const editor = watched.page.getByTestId('rules-editor');
  await waitFor('rules loaded', async () => (await editor.inputValue()).trim() === '[]', 5000);
  await editor.fill('[{"match":"deal:*","threshold":-5}]');
  await waitFor(
    'inline error',
    async () => (await watched.page.getByTestId('rules-error').textContent())?.includes('rules[0].threshold') ?? false,
    2000,
  );
  assert.ok(await watched.page.getByTestId('rules-save').isDisabled());
  await editor.fill('[{"match":"deal:*","threshold":10,"windowMS":500}]');
  await waitFor(
    'unknown field named',
    async () => (await watched.page.getByTestId('rules-error').textContent())?.includes('rules[0].windowMS') ?? false,
    2000,
  );
  await shot('rules-error');
  // the hub's own refusal is shown the same way: a rule set for an app the hub does not know
  watched.page.once('dialog', () => {});
  await watched.page.evaluate(`sessionStorage.setItem('hotkey.adminToken', ${JSON.stringify(ADMIN)})`);
  await watched.page.goto(`${hub.httpUrl}/#/rules/nosuchapp`);
  await editor.fill('[{"match":"a","threshold":10}]');
  await watched.page.getByTestId('rules-save').click();
  await waitFor(
    'hub refusal inline',
    async () => (await watched.page.getByTestId('rules-error').textContent())?.includes('HK_ERR_UNKNOWN_APP') ?? false,
    3000,
  );
  assert.equal((await api('/api/apps/promo/rules')).body.rules, []);
});

test('a rule edit saves through the API and changes detection live', async () => {
  const group = await sdks('promo', 2);
  // 300/s is far under the default rule (1000/s): not hot before the edit
  const driver = drive(group, 'deal:1', 300);
  try {
    await delay(1500);
    assert.not.ok(await isHot('promo', 'deal:1'), 'deal:1 hot under the default rule');
    await watched.page.goto(`${hub.httpUrl}/#/rules/promo`);
    const editor = watched.page.getByTestId('rules-editor');
    await waitFor('rules loaded', async () => (await editor.inputValue()).trim() === '[]', 5000);
    await editor.fill('[{"match":"deal:*","threshold":100}]');
    await watched.page.getByTestId('rules-save').click();
    await waitFor(
      'saved',
      async () => (await watched.page.getByTestId('rules-status').textContent())?.startsWith('saved') ?? false,
      5000,
    );
    assert.is((await api('/api/apps/promo/rules')).body.rules[0].threshold, 100);
    assert.match(await editor.inputValue(), /"windowMs": 1000/); // defaults filled in by the hub
    await shot('rules');
    await watched.page.goto(`${hub.httpUrl}/#/hot`);
    await waitFor('deal:1 hot in the page after the edit', async () => (await row('deal:1').count()) > 0, 5000);
  } finally {
    driver.stop();
  }
  assert.equal(watched.problems, []);
});

test('with the admin token, a key promoted by hand shows as hot and an invalidation is listed', async () => {
  await watched.page.goto(`${hub.httpUrl}/#/hot`);
  await watched.page.getByTestId('action-app').fill('shop');
  await watched.page.getByTestId('action-key').fill('item:by-hand');
  await watched.page.getByTestId('action-promote').click();
  await waitFor('promoted row in the table', async () => (await row('item:by-hand').count()) === 1, 5000);
  await watched.page.getByTestId('action-invalidate').click();
  await watched.page.goto(`${hub.httpUrl}/#/events`);
  await waitFor(
    'manual promotion and invalidation listed',
    async () => {
      const events = watched.page.locator('[data-testid=event-row]').filter({ hasText: 'item:by-hand' });
      return (
        (await events.filter({ hasText: 'manual' }).filter({ hasText: 'promote' }).count()) === 1 &&
        (await events.filter({ hasText: 'invalidate' }).count()) === 1
      );
    },
    5000,
  );
  assert.equal(watched.problems, []);
});

test('with --dashboard-token the page asks for it and sends it in the first frame, never in a URL', async () => {
  const READ = 'read-token-xyz';
  const locked = await HubProcess.start({ args: ['--dashboard-token', READ, '--admin-token', ADMIN] });
  try {
    const framesSent: string[] = [];
    const page = await browser.open(`${locked.httpUrl}/`, { expectStatus: () => false });
    page.page.on('websocket', (ws) =>
      ws.on('framesent', (f) =>
        framesSent.push(typeof f.payload === 'string' ? f.payload : f.payload.toString('latin1')),
      ),
    );
    await waitFor('token asked', async () => (await page.page.getByTestId('token-dialog').count()) === 1, 5000);
    await page.page.getByTestId('token-input-read').fill(READ);
    await page.page.getByTestId('token-save').click();
    await waitFor(
      'live with the token',
      async () => (await page.page.getByTestId('live-state').textContent())?.startsWith('live') ?? false,
      5000,
    );
    assert.ok(
      framesSent.some((f) => f.includes(READ)),
      'token sent in a frame',
    );
    for (const url of page.urls) assert.not.ok(url.includes(READ), `token in a URL: ${url}`);
    // the refused first attempt is the only error the page may have seen
    assert.equal(
      page.problems.filter((p) => !p.includes('/live')),
      [],
    );
    assert.not.ok(locked.stdout.includes(READ) || locked.stderr.includes(READ), 'token in the hub log');
    await page.page.close();
  } finally {
    await locked.stop();
  }
});

test('a pre-declared hot window shows on the rules page with a badge while it is open', async () => {
  const res = await api('/api/apps/shop/predeclared', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ match: 'item:vip-*', from: Date.now() - 1000, until: Date.now() + 600_000 }),
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await watched.page.goto(`${hub.httpUrl}/#/rules/shop`);
  const cell = watched.page.getByTestId('predeclared-window');
  // one round trip per check (count() then textContent() is two, and textContent() waits for an
  // element that went in between); 10 s: on a loaded box one CDP round trip can take seconds
  await waitFor(
    'pre-declared window row',
    async () => {
      const texts = await cell.allTextContents();
      return texts.length === 1 && texts[0]!.includes('hot now');
    },
    10_000,
  );
  await shot('rules-predeclared');
});

test("the rules page shows a rule's rate limit and replica policy", async () => {
  const res = await api('/api/apps/limits/rules', {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify([
      { match: 'feed:*', threshold: 100, cache: false, limit: 50, replicas: { perNodeQps: 5000 } },
    ]),
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await watched.page.goto(`${hub.httpUrl}/#/rules/limits`);
  const cell = watched.page.getByTestId('rule-mode');
  await waitFor(
    'limit and replicas in the rule row',
    async () => {
      const texts = await cell.allTextContents();
      return (
        texts.length === 1 && texts[0]!.includes('limit 50/s') && texts[0]!.includes('replicas ≤ 8 (5000/s per node)')
      );
    },
    10_000,
  );
});

test.run();
