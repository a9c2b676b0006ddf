/**
 * The key detail's QPS history on a real hub process with real SDK clients: a key driven hot at a
 * known rate has one point per second in GET /api/apps/:app/keys/qps, near that rate, and keeps
 * it after demotion; the route checks its input and its read token; /metrics counts it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hubProcess } from '../support/e2e.ts';
import { drive } from '../support/traffic.ts';
import { request } from '../support/http.ts';
import { delay, waitFor } from '../support/wait.ts';

const RATE = 400;
const READ = 'read-token-qps';
const config = {
  apps: {
    shop: {
      rules: [
        { match: 'item:*', threshold: 100, windowMs: 1000, hotMs: 30_000 },
        { match: 'cool:*', threshold: 100, windowMs: 500, demoteWindows: 2, hotMs: 30_000 },
      ],
    },
  },
  dashboardToken: READ,
};
const e2e = hubProcess(test, { config });

interface QpsAnswer {
  app: string;
  key: string;
  hub: string;
  stepMs: number;
  points: [number, number][];
}

/** `token` null: no Authorization header */
const get = (path: string, token: string | null = READ) => request(`${e2e.hub.httpUrl}${path}`, { token });

const qpsPath = (key: string) => `/api/apps/shop/keys/qps?key=${encodeURIComponent(key)}`;

const sdks = (n: number) => e2e.sdks(n, (i) => ({ host: `web-${i + 1}` }));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

test('a key driven hot has one point per second near the driven rate', async () => {
  const group = await sdks(3);
  const key = 'item:flash/sale?x=1&y=%2F'; // '/', '?', '&' and '%' survive the query string
  const driver = drive(group, key, RATE);
  const started = Date.now();
  let answer: QpsAnswer;
  try {
    await waitFor(`${key} hot at the SDKs`, () => group.every((hk) => hk.isHot(key)), 5000);
    // five seconds of history: at least 4 samples whatever the phase of the hub's 1 s step
    await waitFor('4 points', async () => ((await get(qpsPath(key))).body as QpsAnswer).points.length >= 4, 8000);
    answer = (await get(qpsPath(key))).body as QpsAnswer;
  } finally {
    driver.stop();
  }
  assert.is(answer.app, 'shop');
  assert.is(answer.key, key);
  assert.is(answer.hub, e2e.hub.id);
  assert.is(answer.stepMs, 1000);
  const times = answer.points.map(([t]) => t);
  for (let i = 1; i < times.length; i++) {
    const gap = times[i]! - times[i - 1]!;
    assert.ok(gap > 500 && gap < 2000, `points ${gap} ms apart`);
  }
  assert.ok(times[0]! >= started - 1000 && times.at(-1)! <= Date.now(), 'points lie in the driven period');
  // the first sample may catch the window still filling; the rest sit near the driven rate
  const steady = median(answer.points.slice(1).map(([, q]) => q));
  console.log(
    `# ${answer.points.length} points, median ${steady} qps for ${RATE} driven: ${answer.points.map(([, q]) => q).join(' ')}`,
  );
  assert.ok(steady > RATE * 0.7 && steady < RATE * 1.3, `median ${steady} qps, driven ${RATE}`);
});

test('a demoted key keeps its curve, which falls after the traffic stops', async () => {
  const group = await sdks(2);
  const key = 'cool:1';
  const driver = drive(group, key, RATE);
  try {
    await waitFor(`${key} hot`, () => group.every((hk) => hk.isHot(key)), 5000);
    await waitFor(
      '2 points while hot',
      async () => ((await get(qpsPath(key))).body as QpsAnswer).points.length >= 2,
      5000,
    );
  } finally {
    driver.stop();
  }
  await waitFor(`${key} demoted`, () => group.every((hk) => !hk.isHot(key)), 8000);
  await delay(1500); // at least one sample after the demotion
  const { points } = (await get(qpsPath(key))).body as QpsAnswer;
  const peak = Math.max(...points.map(([, q]) => q));
  assert.ok(peak > RATE * 0.5, `peak ${peak} while hot`);
  assert.ok(points.at(-1)![1] < peak / 2, `last point ${points.at(-1)![1]} after demotion, peak ${peak}`);
});

test('a key never hot has no points; bad requests get clear errors', async () => {
  const none = await get(qpsPath('item:never'));
  assert.is(none.status, 200);
  assert.equal(none.body.points, []);
  const missing = await get('/api/apps/shop/keys/qps');
  assert.is(missing.status, 400);
  assert.is(missing.body.error.code, 'HK_ERR_BAD_REQUEST');
  assert.is(missing.body.error.field, 'key');
  const long = await get(qpsPath('k'.repeat(5000)));
  assert.is(long.status, 400);
  assert.is(long.body.error.code, 'HK_ERR_KEY_TOO_LONG');
  const app = await get('/api/apps/nosuch/keys/qps?key=a');
  assert.is(app.status, 404);
  assert.is(app.body.error.code, 'HK_ERR_UNKNOWN_APP');
  const post = await fetch(`${e2e.hub.httpUrl}${qpsPath('a')}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${READ}` },
    signal: AbortSignal.timeout(5000),
  });
  assert.is(post.status, 405);
});

test('reads need the dashboard token', async () => {
  const anonymous = await get(qpsPath('item:x'), null);
  assert.is(anonymous.status, 401);
  assert.is(anonymous.body.error.code, 'HK_ERR_AUTH');
  assert.is((await get(qpsPath('item:x'), 'wrong')).status, 403);
});

test('metrics count the keys with a history and export the dashboard feed counters', async () => {
  const { status, text } = await get('/metrics');
  assert.is(status, 200);
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  assert.ok(value('hotkey_qps_history_keys') >= 2, 'both driven keys have a history');
  for (const name of [
    'hotkey_dashboard_pages',
    'hotkey_dashboard_frames_sent_total',
    'hotkey_dashboard_bytes_sent_total',
    'hotkey_dashboard_slow_dropped_total',
    'hotkey_dashboard_skipped_rounds_total',
    'hotkey_dashboard_refused_total',
  ]) {
    assert.ok(Number.isInteger(value(name)), `${name} exported`);
  }
});

test.run();
