/**
 * Open-mode app limits. In open mode any app name is accepted, so junk names
 * can fill `maxApps` and junk keys can fill memory. So: one key budget across all apps
 * (`maxKeysTotal`), apps without a session leave after `appIdleMs` whatever keys they hold, and a
 * full hub answers a new app with 4011 HK_ERR_APP_LIMIT, which the SDK retries with backoff —
 * so a legit app gets in once the junk leaves (a fatal code, never retried, would lock it out
 * for as long as the junk stays).
 * In-process hub for small tunables; real sockets on 127.0.0.1.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Hub } from '@hotkey/hub';
import { HotKeyClient } from '@hotkey/sdk';
import { CloseCode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { printFigures } from '../support/attack.ts';
import { RawClient } from '../support/raw-client.ts';
import { waitFor, within } from '../support/wait.ts';
import { startHubInProcess } from '../support/e2e.ts';

const MAX_APPS = 40;
const KEYS_TOTAL = 20_000;
const APP_IDLE_MS = 1500;

let hub: Hub;
const clients: HotKeyClient[] = [];
const raws: RawClient[] = [];

test.before(async () => {
  hub = await startHubInProcess({
    tunables: { maxApps: MAX_APPS, maxKeysTotal: KEYS_TOTAL, maxKeysPerApp: 10_000, appIdleMs: APP_IDLE_MS },
  });
});

test.after(async () => {
  for (const r of raws) r.close();
  await within('teardown', Promise.all(clients.map((hk) => hk.close())), 10_000);
  await hub?.close();
});

test('junk apps cannot hold more keys than the hub budget, nor keep a real app out once they leave', async () => {
  // junk fills every app slot, each with more distinct keys than its share
  for (let i = 0; i < MAX_APPS; i++) {
    const { client } = await RawClient.join(hub.url, `junk-${i}`);
    const keys = Array.from({ length: 2000 }, (_, k) => `junk:${i}:${k}:${'x'.repeat(200)}`);
    // a few promoted keys: hot keys stay for hotMs (30 s), so only the idle grace frees the app
    client.send({ t: MsgType.Report, keys, counts: keys.map((_, k) => (k < 3 ? 5000 : 1)) });
    raws.push(client);
  }
  for (const r of raws) await r.ping(); // every Report processed
  const keysTracked = hub.core.gauges().keysTracked;
  assert.ok(keysTracked <= KEYS_TOTAL, `keys tracked across apps: ${keysTracked}`);

  // a real app now: refused with 4011 (not fatal), retried
  const refused = await RawClient.connect(hub.url);
  refused.send({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', instance: 'probe', sdk: 'x' });
  const closed = await refused.closeEvent();
  assert.is(closed.code, CloseCode.AppLimit);
  let retries = 0;
  const hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], reconnectMinMs: 100, reconnectMaxMs: 400 });
  clients.push(hk);
  void (async () => {
    // a refused attempt is a 'reconnecting' (a fatal code would have rejected ready() instead)
    for await (const s of hk.status()) if (s.type === 'reconnecting') retries++;
  })();
  const started = performance.now();
  const ready = hk.ready({ signal: AbortSignal.timeout(APP_IDLE_MS + 8000) });
  ready.catch(() => {}); // awaited below; a failure before then must not go unhandled
  await waitFor('the SDK refused and retrying', () => retries >= 2, 5000);

  // the junk leaves: after appIdleMs its apps (and their hot keys) go, and the SDK's retry gets in
  const leftAt = performance.now();
  for (const r of raws) r.close();
  await ready;
  const readyAfterLeaveMs = Math.round(performance.now() - leftAt);
  printFigures('open-mode-apps', {
    keysTracked,
    keysTotalBudget: KEYS_TOTAL,
    junkKeysSent: MAX_APPS * 2000,
    firstRefusal: closed.code,
    sdkRetries: retries,
    readyAfterJunkLeftMs: readyAfterLeaveMs,
    readyTotalMs: Math.round(performance.now() - started),
    appsLeft: hub.core.gauges().apps,
  });
  assert.ok(readyAfterLeaveMs < APP_IDLE_MS + 5000, `ready ${readyAfterLeaveMs} ms after the junk left`);
});

test.run();
