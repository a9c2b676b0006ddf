/**
 * A hub process started with `--redis` while Redis is down: it comes up (no crash loop), says so
 * clearly, reports degraded, and joins the cluster by itself once Redis is there.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, RedisServer } from '../support/redis-server.ts';
import { HubProcess } from '../support/hub-process.ts';
import { httpJson } from './cluster-harness.ts';
import { waitFor } from '../support/wait.ts';

let hub: HubProcess | undefined;
let redis: RedisServer | undefined;

test.after(async () => {
  await hub?.stop('SIGKILL', 3000).catch(() => undefined);
  await redis?.stop().catch(() => undefined);
});

test('a hub started without Redis serves degraded, retries, and joins when Redis comes up', async () => {
  const port = await freePort();
  hub = await HubProcess.start({
    args: ['--node-id', 'lonely', '--port', '0'],
    env: { HOTKEY_REDIS: `redis://127.0.0.1:${port}` },
    readyTimeoutMs: 30_000,
  });
  assert.match(hub.stdout + hub.stderr, /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/);
  const health = await httpJson(`${hub.httpUrl}/healthz`);
  assert.is(health.status, 200, 'alive');
  assert.is(health.body.status, 'degraded');
  const ready = await httpJson(`${hub.httpUrl}/readyz`);
  assert.is(ready.status, 503);
  assert.is(ready.body.status, 'degraded');

  redis = await RedisServer.start({ port });
  const t0 = Date.now();
  await waitFor('the hub to become ready', async () => (await httpJson(`${hub!.httpUrl}/readyz`)).status === 200, 8000);
  console.log(`# Redis came up → hub ready after ${Date.now() - t0} ms`);
  const { body } = await httpJson(`${hub.httpUrl}/api/cluster`);
  assert.equal(
    body.members.map((m: { id: string }) => m.id),
    ['lonely'],
  );
  assert.is(body.members[0].url, hub.url, 'registered with the URL SDKs reach it at');
  assert.is(hub.child.exitCode, null, 'never exited');
});

test.run();
