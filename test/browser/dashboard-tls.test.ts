/**
 * The dashboard over HTTPS in headless Chromium: a hub process started with --tls-cert/--tls-key
 * (a certificate from a CA made for the test) serves the page on https:// and its live feed on
 * wss:// on the same port. Chromium trusts exactly that certificate through
 * `--ignore-certificate-errors-spki-list` (no NSS database needed); an SDK that trusts the CA
 * makes a key hot and the page shows it. Screenshot: test/artifacts/dashboard-tls.png.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { HotKeyClient } from '@hotkey/sdk';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { makeTestPki, type TestPki } from '../support/tls-certs.ts';
import { drive, type Driver } from '../support/traffic.ts';
import { waitFor, within } from '../support/wait.ts';
import { ARTIFACTS, Chromium } from './chromium.ts';

const config = { apps: { shop: { rules: [{ match: 'item:*', threshold: 50, hotMs: 30_000 }] } } };

let pki: TestPki;
let hub: HubProcess;
let browser: Chromium;
let hk: HotKeyClient | undefined;
let driver: Driver | undefined;

test.before(async () => {
  pki = makeTestPki();
  hub = await within(
    'hub start',
    HubProcess.start({
      args: [
        '--config',
        writeConfig(config, 'hotkey-browser-tls-'),
        '--tls-cert',
        pki.serverCert,
        '--tls-key',
        pki.serverKey,
      ],
      readyTimeoutMs: 90_000,
    }),
    100_000,
  );
  browser = await within(
    'chromium launch',
    Chromium.launch({ args: [`--ignore-certificate-errors-spki-list=${pki.spki}`] }),
    40_000,
  );
});

test.after(async () => {
  driver?.stop();
  hk?.close();
  await within('teardown', Promise.all([browser?.close(), hub?.stop()]), 20_000);
  pki?.remove();
});

test('the dashboard loads over https:// and goes live over wss://, showing a key an SDK made hot', async () => {
  assert.match(hub.httpUrl, /^https:\/\/127\.0\.0\.1:\d+$/);
  const watched = await browser.open(`${hub.httpUrl}/`);
  assert.is(new URL(watched.page.url()).protocol, 'https:');
  await waitFor(
    'live',
    async () => (await watched.page.getByTestId('live-state').textContent())?.startsWith('live') ?? false,
    10_000,
  );

  hk = new HotKeyClient({ app: 'shop', hubs: [hub.url], tls: { ca: pki.ca } });
  await hk.ready({ signal: AbortSignal.timeout(5000) });
  driver = drive([hk], 'item:secure', 200);
  await waitFor(
    'item:secure on the page',
    async () => (await watched.page.getByTestId('hot-table').textContent())?.includes('item:secure') ?? false,
    10_000,
  );
  await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-tls.png') });
  const insecure = watched.urls.filter((u) => u.startsWith('http:') || u.startsWith('ws:'));
  assert.equal(insecure, [], 'every request stayed on TLS');
  assert.equal(watched.problems, [], watched.problems.join('\n'));
});

test.run();
