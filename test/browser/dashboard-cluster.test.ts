/**
 * Cluster mode: two hub processes joined through a real redis-server. The page served by one hub
 * shows the whole cluster: hot keys owned by the other hub (with that hub as owner), both hubs
 * with their Redis state, SDK instances on both, and events decided by either hub.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { Cluster } from '../cluster/cluster-harness.ts';
import { ARTIFACTS, Chromium, type WatchedPage } from './chromium.ts';
import { waitFor, within } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b'];
let cluster: Cluster;
let browser: Chromium;
let watched: WatchedPage;

test.before(async () => {
  console.log('# starting redis-server and two hubs');
  cluster = await within('cluster start', Cluster.start(IDS, [{ match: 'item:*', threshold: 100 }]), 60_000);
  console.log('# launching chromium');
  browser = await within('chromium launch', Chromium.launch(), 60_000);
});

test.after(async () => {
  await within('chromium close', browser?.close() ?? Promise.resolve(), 20_000).catch((err) =>
    console.log(`# ${(err as Error).message}`),
  );
  await within('cluster close', cluster?.close() ?? Promise.resolve(), 30_000).catch((err) =>
    console.log(`# ${(err as Error).message}`),
  );
});

function row(key: string) {
  return watched.page
    .locator('.vt-rows .vt-row')
    .filter({ has: watched.page.locator('.c-key', { hasText: new RegExp(`^${key}$`) }) });
}

test('the page on one hub shows hot keys, hubs, instances and events of the whole cluster', async () => {
  const [onA] = Cluster.keysOwnedBy(IDS, 'hub-a', 1, 'item:a');
  const [onB] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:b');
  await within('SDK clients ready', cluster.addClients(2, ['hub-a', 'hub-b']), 20_000);
  cluster.traffic({ [onA!]: 400, [onB!]: 400 });
  watched = await browser.open(`${cluster.hub('hub-a').httpUrl}/`);
  try {
    await waitFor(
      'both keys in the table of hub-a',
      async () => (await row(onA!).count()) === 1 && (await row(onB!).count()) === 1,
      10_000,
    );
    assert.is(await row(onB!).locator('.c-hub').textContent(), 'hub-b');
    assert.is(await row(onA!).locator('.c-hub').textContent(), 'hub-a');
    await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-cluster-hot.png') });
    await watched.page.goto(`${cluster.hub('hub-a').httpUrl}/#/cluster`);
    await waitFor(
      'both hubs listed with Redis ok',
      async () => {
        const text = (await watched.page.getByTestId('hubs-body').textContent()) ?? '';
        return (
          text.includes('hub-a') && text.includes('hub-b') && (await watched.page.locator('.redis-ok').count()) === 2
        );
      },
      10_000,
    );
    await waitFor(
      'each SDK instance listed with both hubs',
      async () => {
        const rows = watched.page.getByTestId('instances-body').locator('tr');
        if ((await rows.count()) !== 2) return false;
        for (const text of await rows.allTextContents())
          if (!(text.includes('hub-a') && text.includes('hub-b'))) return false;
        return true;
      },
      10_000,
    );
    await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-cluster-hubs.png') });
    await watched.page.goto(`${cluster.hub('hub-a').httpUrl}/#/events`);
    await waitFor(
      `promotion of ${onB} decided by hub-b`,
      async () =>
        (await watched.page
          .locator('[data-testid=event-row].ev-promote')
          .filter({ hasText: onB! })
          .filter({ hasText: 'hub-b' })
          .count()) > 0,
      10_000,
    );
  } finally {
    cluster.stopTraffic();
  }
  assert.equal(watched.problems, []);
});

test.run();
