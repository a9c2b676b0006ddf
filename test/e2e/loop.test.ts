/**
 * The whole hot-key loop on one real hub process: SDK counts → reports → hub aggregates →
 * promote / invalidate / demote broadcast → every SDK's local cache.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hubProcess } from '../support/e2e.ts';
import { promotions } from '../support/promoted.ts';
import { drive } from '../support/traffic.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const THRESHOLD = 300;
const THIN_THRESHOLD = 10;
const config = {
  apps: {
    shop: {
      token: 's3cret',
      rules: [
        { match: 'item:*', threshold: THRESHOLD, windowMs: 1000, hotMs: 30_000, cacheTtlMs: 10_000 },
        // cools fast so the demotion test runs in a couple of seconds
        { match: 'cool:*', threshold: THRESHOLD, windowMs: 500, hotMs: 30_000, demoteWindows: 2 },
        // the thin-spread test's rule: 5,000 instances at threshold 1000, scaled down by 100
        { match: 'thin:*', threshold: THIN_THRESHOLD, windowMs: 1000, hotMs: 30_000 },
      ],
    },
  },
};
const e2e = hubProcess(test, { config, sdk: { token: 's3cret' } });

test('a key over threshold is promoted at every SDK and then served without the loader', async () => {
  const group = await e2e.sdks(3);
  const promoted = promotions(group, 'item:over');
  const driver = drive(group, 'item:over', THRESHOLD * 2);
  let qpsSeen: number[];
  try {
    qpsSeen = await promoted.all(4000);
  } finally {
    driver.stop();
  }
  for (const qps of qpsSeen) assert.ok(qps >= THRESHOLD, `promoted at ${qps} qps`);
  assert.ok(
    group.every((hk) => hk.isHot('item:over')),
    'hot at all 3 SDKs',
  );

  for (const hk of group) {
    let loads = 0;
    const loader = async () => `value-${++loads}`;
    assert.is(await hk.get('item:over', loader), 'value-1'); // first read of a hot key loads once
    for (let i = 0; i < 100; i++) assert.is(await hk.get('item:over', loader), 'value-1');
    assert.is(loads, 1, 'hot cached key must not call the loader again');
    assert.ok(hk.stats().hits >= 100);
  }
});

test('the SDK endpoint also answers at the root path (ws://host:port)', async () => {
  const hk = e2e.sdk({ hubs: [`ws://127.0.0.1:${e2e.hub.port}`] });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  assert.is(hk.rules()[0]?.match, 'item:*', 'welcomed with the app rules');
});

test('a key at half the threshold is never promoted', async () => {
  const group = await e2e.sdks(2);
  let promotions = 0;
  for (const hk of group) hk.on('promote', (key) => key === 'item:half' && promotions++);
  const driver = drive(group, 'item:half', THRESHOLD / 2);
  await delay(3000); // three whole windows at half the threshold
  driver.stop();
  assert.ok(driver.sent >= THRESHOLD * 1.3, `sent ${driver.sent}`);
  assert.is(promotions, 0);
  assert.not.ok(group.some((hk) => hk.isHot('item:half')));
  const { hot } = (await (await fetch(`${e2e.hub.httpUrl}/api/hot?app=shop`)).json()) as { hot: { key: string }[] };
  assert.not.ok(hot.some((h) => h.key === 'item:half'));
});

test('a key spread thinly over 50 instances at 1.5 x threshold in total is promoted', async () => {
  const group = await e2e.sdks(50);
  // each instance sees 1.5 * 300 / 50 = 9 accesses/s: far below any useful fixed local threshold
  const driver = drive(group, 'item:thin', THRESHOLD * 1.5);
  try {
    await waitFor('item:thin hot at all 50 SDKs', () => group.every((hk) => hk.isHot('item:thin')), 6000);
  } finally {
    driver.stop();
  }
  await Promise.all(group.map((hk) => hk.close()));
});

test('a key at 1.2 x threshold over 50 instances, with the per-instance arithmetic of 5,000 at threshold 1000, is promoted', async () => {
  // 5,000 instances, threshold 1000: local threshold max(1, floor(0.2 * 1000 / 5000)) = 1 and
  // 1200 / 5000 = 0.24 accesses/s per instance. 50 instances, threshold 10: max(1, floor(2 / 50)) = 1
  // and 12 / 50 = 0.24/s: every instance sees one access every ~4 s, and each must be reported
  const group = await e2e.sdks(50);
  const driver = drive(group, 'thin:wide', THIN_THRESHOLD * 1.2);
  try {
    await waitFor('thin:wide hot at all 50 SDKs', () => group.every((hk) => hk.isHot('thin:wide')), 10_000);
  } finally {
    driver.stop();
  }
  const reported = group.reduce((a, hk) => a + hk.stats().reportedKeys, 0);
  assert.ok(reported <= driver.sent, `${reported} keys reported for ${driver.sent} accesses: at most one per access`);
  await Promise.all(group.map((hk) => hk.close()));
});

test('an invalidation from one SDK evicts the value at every other SDK before it resolves', async () => {
  const group = await e2e.sdks(3);
  const driver = drive(group, 'item:inv', THRESHOLD * 2);
  try {
    await waitFor('item:inv hot everywhere', () => group.every((hk) => hk.isHot('item:inv')), 4000);
    let version = 1;
    const loader = async () => `v${version}`;
    for (const hk of group) assert.is(await hk.get('item:inv', loader), 'v1');
    for (const hk of group) assert.is(await hk.get('item:inv', loader), 'v1'); // cached
    const seen = group.map(
      (hk) => new Promise<void>((resolve) => hk.on('invalidate', (key) => key === 'item:inv' && resolve())),
    );
    version = 2; // the write
    await group[0]!.invalidate('item:inv');
    // consistency rule: once the writer holds the ack, no SDK serves the old value
    for (const hk of group) assert.is(await hk.get('item:inv', loader), 'v2');
    await within('an invalidate event at every other SDK', Promise.all(seen.slice(1)), 2000);
    assert.ok(
      group.every((hk) => hk.isHot('item:inv')),
      'an invalidated key stays hot',
    );
  } finally {
    driver.stop();
  }
});

test('when traffic stops every SDK drops the key', async () => {
  const group = await e2e.sdks(3);
  const promoted = promotions(group, 'cool:flash');
  const driver = drive(group, 'cool:flash', THRESHOLD * 2);
  await promoted.all(4000).finally(() => driver.stop());
  const demoted = group.map(
    (hk) =>
      new Promise<string>((resolve) => hk.on('demote', (key, info) => key === 'cool:flash' && resolve(info.reason))),
  );
  await waitFor('cool:flash demoted everywhere', () => group.every((hk) => !hk.isHot('cool:flash')), 5000);
  for (const reason of await within('a demote event at every SDK', Promise.all(demoted), 2000))
    assert.is(reason, 'demote', 'the hub demoted it (not a local expiry)');
  let loads = 0;
  await group[0]!.get('cool:flash', async () => ++loads);
  await group[0]!.get('cool:flash', async () => ++loads);
  assert.is(loads, 2, 'a demoted key goes back to the loader on every read');
});

test('hub restart: SDKs keep working through the loader, reconnect and resynchronise', async () => {
  const group = await e2e.sdks(3);
  const driver = drive(group, 'item:restart', THRESHOLD * 2, 'get');
  try {
    await waitFor('item:restart hot', () => group.every((hk) => hk.isHot('item:restart')), 4000);
    const port = e2e.hub.port;
    await e2e.hub.stop('SIGKILL');
    // get() never waits on the network: reads keep being answered while no hub exists
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const value = await group[1]!.get(`item:cold-${i}`, async () => 'from loader');
      assert.is(value, 'from loader');
      assert.ok(performance.now() - started < 1000);
    }
    await delay(500);
    await e2e.start(port);
    // the new hub knows nothing: SDKs must resync (drop) and re-promote from live traffic
    await waitFor('SDKs reconnected', () => group.every((hk) => hk.hubs().length === 1), 6000);
    await waitFor(
      'item:restart promoted again by the new hub',
      async () => {
        const { hot } = (await (await fetch(`${e2e.hub.httpUrl}/api/hot?app=shop`)).json()) as {
          hot: { key: string }[];
        };
        return hot.some((h) => h.key === 'item:restart') && group.every((hk) => hk.isHot('item:restart'));
      },
      6000,
    );
  } finally {
    driver.stop();
  }
});

test.run();
