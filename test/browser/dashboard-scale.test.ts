/**
 * 10 000 hot keys at once on a real hub, fed by a raw protocol client (one Report frame of 10 000
 * keys every 100 ms): the page shows them all through a virtual table (a few dozen rows in the DOM),
 * stays usable (sorting, scrolling to the last row), and drops them all after they cool. Frame
 * timings are printed for the record; speed targets live in the benchmarks, not here.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { join } from 'node:path';
import WebSocket from 'ws';
import { encode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { HubProcess, writeConfig } from '../support/hub-process.ts';
import { ARTIFACTS, Chromium, type WatchedPage } from './chromium.ts';
import { waitFor } from '../support/wait.ts';

const KEYS = 10_000;
const config = {
  apps: { big: { rules: [{ match: 'k:*', threshold: 5, windowMs: 1000, hotMs: 60_000, demoteWindows: 2 }] } },
};
const configPath = writeConfig(config, 'hotkey-scale-');

let hub: HubProcess;
let browser: Chromium;
let watched: WatchedPage;
/** two reporting instances: keys that only one instance reports are promoted within its solo budget */
let sockets: WebSocket[] = [];
let reporter: ReturnType<typeof setInterval> | undefined;

const keys = Array.from({ length: KEYS }, (_, i) => `k:${String(i).padStart(5, '0')}`);

/** `until`, with a screenshot of the page when the wait fails */
async function step(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  try {
    await waitFor(what, check, timeoutMs);
  } catch (err) {
    await watched.page.screenshot({ path: join(ARTIFACTS, `dashboard-10k-failed-${what.replace(/\W+/g, '-')}.png`) });
    throw err;
  }
}

async function hotCount(): Promise<string> {
  return (await watched.page.getByTestId('hot-count').textContent()) ?? '';
}

test.before(async () => {
  hub = await HubProcess.start({ args: ['--config', configPath] });
  browser = await Chromium.launch();
  sockets = await Promise.all(
    ['load-1', 'load-2'].map(async (instance) => {
      const ws = new WebSocket(hub.url);
      await once(ws, 'open', { signal: AbortSignal.timeout(5000) });
      ws.send(
        encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'big', instance, sdk: 'raw-test', host: 'load-host' }),
      );
      await once(ws, 'message', { signal: AbortSignal.timeout(5000) });
      return ws;
    }),
  );
});

test.after(async () => {
  clearInterval(reporter);
  for (const ws of sockets) ws.close();
  await browser?.close();
  await hub?.stop();
});

test('10 000 hot keys: all counted, a bounded DOM, sortable and scrollable; all gone after cooling', async () => {
  // key i at (2 + i % 5) accesses per 100 ms: 20–60 per second, all over the threshold of 5
  const counts = keys.map((_, i) => 2 + (i % 5));
  reporter = setInterval(() => {
    for (const ws of sockets) ws.send(encode({ t: MsgType.Report, keys, counts }));
  }, 100);
  watched = await browser.open(`${hub.httpUrl}/`);
  await waitFor('10 000 hot keys in the page', async () => (await hotCount()).endsWith(`${KEYS} hot`), 20_000);
  const domRows = await watched.page.locator('.vt-rows .vt-row').count();
  assert.ok(domRows > 10 && domRows < 100, `${domRows} rows in the DOM`);

  const timing = (await watched.page.evaluate(`new Promise((resolve) => {
    const gaps = []; let last = performance.now(); const end = last + 3000;
    function f(now) { gaps.push(now - last); last = now; if (now < end) requestAnimationFrame(f); else { gaps.sort((a, b) => a - b); resolve({ frames: gaps.length, p50: gaps[gaps.length >> 1], p99: gaps[Math.floor(gaps.length * 0.99)], max: gaps[gaps.length - 1] }); } }
    requestAnimationFrame(f);
  })`)) as { frames: number; p50: number; p99: number; max: number };
  console.log(
    `# 10k hot keys, 3 s idle: ${timing.frames} frames, gap p50 ${timing.p50.toFixed(1)} ms, p99 ${timing.p99.toFixed(1)} ms, max ${timing.max.toFixed(1)} ms`,
  );
  await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-10k.png') });

  // sort by key ascending: the first row is k:00000
  await watched.page.locator('.vt-head .c-key').click();
  await step(
    'sorted by key',
    async () => (await watched.page.locator('.vt-rows .vt-row .c-key').first().textContent()) === 'k:00000',
    6000,
  );
  // scroll to the end: the last key is rendered, and the DOM stays small
  await watched.page.evaluate(`document.querySelector('.vt-body').scrollTop = 1e9`);
  await step(
    'last key rendered',
    async () => (await watched.page.locator('.vt-rows .c-key', { hasText: 'k:09999' }).count()) === 1,
    6000,
  );
  assert.ok((await watched.page.locator('.vt-rows .vt-row').count()) < 100);
  await watched.page.screenshot({ path: join(ARTIFACTS, 'dashboard-10k-end.png') });
  // filtering narrows to matching keys
  await watched.page.getByTestId('hot-filter').fill('k:0999');
  await step('filtered', async () => (await hotCount()).startsWith('10 shown'), 6000);
  await watched.page.getByTestId('hot-filter').fill('');

  clearInterval(reporter);
  await step('every key demoted and gone from the page', async () => (await hotCount()).endsWith(' 0 hot'), 20_000);
  assert.is(await watched.page.locator('.vt-rows .vt-row').count(), 0);
  assert.equal(watched.problems, []);
});

test.run();
