/**
 * The page survives its hub going away: it shows that it is reconnecting, then goes live again on
 * the restarted hub (same address) with a fresh snapshot, without a reload.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HubProcess } from '../support/hub-process.ts';
import { freePort } from '../support/redis-server.ts';
import { Chromium } from './chromium.ts';
import { waitFor } from '../support/wait.ts';

let browser: Chromium;
let hub: HubProcess | undefined;

test.before(async () => {
  browser = await Chromium.launch();
});

test.after(async () => {
  await browser?.close();
  await hub?.stop();
});

test('the live feed reconnects to a restarted hub', async () => {
  const port = await freePort();
  hub = await HubProcess.start({ args: ['--port', String(port)] });
  const first = hub.id;
  const { page, problems } = await browser.open(`${hub.httpUrl}/`);
  const badge = () => page.getByTestId('live-state').textContent();
  await waitFor('live on the first hub', async () => (await badge()) === `live · ${first}`, 5000);
  await hub.stop();
  await waitFor('reconnecting shown', async () => (await badge())?.startsWith('reconnecting') ?? false, 5000);
  hub = await HubProcess.start({ args: ['--port', String(port)] });
  assert.is.not(hub.id, first);
  await waitFor('live on the restarted hub', async () => (await badge()) === `live · ${hub!.id}`, 10_000);
  // the failed reconnect attempts while the hub was down are the only errors the page may log
  assert.equal(
    problems.filter((p) => !p.includes('/live')),
    [],
  );
});

test.run();
