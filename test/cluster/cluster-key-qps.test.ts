/**
 * Requests about one key that only its owner hub can answer, sent to any hub: a hub that does not
 * own the key forwards GET /api/apps/:app/keys/qps (only the owner samples the QPS history) and
 * POST /api/apps/:app/promote (only the owner decides the key) to the owner, and answers 502
 * HK_ERR_OWNER_UNREACHABLE when the owner cannot be reached. POST /api/apps/:app/invalidate needs
 * no owner: every SDK connects to every hub, so the hub that was asked broadcasts it. Real
 * redis-server, real hub processes (hub-c advertises a dead address: it is a member nobody can
 * reach over HTTP).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubProcess } from '../support/hub-process.ts';
import { ADMIN, APP, Cluster, httpJson } from './cluster-harness.ts';
import { waitFor } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b', 'hub-c'];
const RULES = [{ match: 'item:*', threshold: 200, windowMs: 1000, hotMs: 60_000 }];
let cluster: Cluster;
let unreachable: HubProcess | undefined;
let dir = '';

/** a port nothing listens on: bound, then released */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** POST /api/apps/shop/<action> {key} to `hub` with the admin token */
const write = (hub: string, action: 'promote' | 'invalidate', key: string) =>
  httpJson(`${cluster.hub(hub).httpUrl}/api/apps/${APP}/${action}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ key }),
  });
const qps = (hub: string, key: string) =>
  httpJson(`${cluster.hub(hub).httpUrl}/api/apps/${APP}/keys/qps?key=${encodeURIComponent(key)}`);

test.before(async () => {
  cluster = await Cluster.start(['hub-a', 'hub-b'], RULES);
  try {
    dir = await mkdtemp(join(tmpdir(), 'hotkey-cluster-qps-'));
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ apps: { [APP]: { rules: RULES } } }));
    unreachable = await HubProcess.start({
      args: [
        '--redis',
        cluster.redis.url,
        '--node-id',
        'hub-c',
        '--config',
        config,
        '--advertise-url',
        `ws://127.0.0.1:${await deadPort()}/ws`,
      ],
    });
    cluster.hubs.set('hub-c', unreachable); // its real HTTP port serves waitMembers; close() stops it
    await cluster.waitMembers(IDS, 10_000);
    // SDKs reach hub-a and hub-b; hub-c's keys simply never get reported
    await cluster.addClients(4, ['hub-a', 'hub-b']);
    // each SDK, whichever hub it was seeded with, connects to every hub it can reach
    for (const client of cluster.clients)
      await waitFor(`${client.instanceId} on hub-a and hub-b`, () => client.hubs().length === 2, 10_000);
  } catch (err) {
    console.error('# setup failed:', err);
    throw err;
  }
});

test.after(async () => {
  await unreachable?.stop('SIGKILL', 3000).catch(() => undefined);
  await cluster?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('a hub that does not own the key answers with the owner hub history', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:q/');
  cluster.traffic({ [key!]: 800 });
  try {
    await waitFor(
      `${key} hot`,
      async () =>
        ((await httpJson(`${cluster.hub('hub-b').httpUrl}/api/hot?app=${APP}`)).body.hot as { key: string }[]).some(
          (h) => h.key === key,
        ),
      10_000,
    );
    await waitFor('3 points at the owner', async () => (await qps('hub-b', key!)).body.points.length >= 3, 8000);
  } finally {
    cluster.stopTraffic();
  }
  const viaOwner = await qps('hub-b', key!);
  const viaOther = await qps('hub-a', key!);
  assert.is(viaOther.status, 200);
  assert.is(viaOther.body.hub, 'hub-b', 'the owner answered');
  assert.is(viaOther.body.key, key);
  assert.ok(
    viaOther.body.points.length >= viaOwner.body.points.length,
    `${viaOther.body.points.length} points via hub-a, ${viaOwner.body.points.length} at hub-b`,
  );
  assert.equal(viaOther.body.points.slice(0, 3), viaOwner.body.points.slice(0, 3));
  const peak = Math.max(...(viaOther.body.points as [number, number][]).map(([, q]) => q));
  assert.ok(peak > 400, `peak ${peak} qps for 800 driven`);
});

test('when the owner hub cannot be reached the answer is 502 HK_ERR_OWNER_UNREACHABLE', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-c', 1, 'item:lost/');
  const started = performance.now();
  const res = await qps('hub-a', key!);
  const ms = performance.now() - started;
  assert.is(res.status, 502);
  assert.is(res.body.error.code, 'HK_ERR_OWNER_UNREACHABLE');
  assert.match(res.body.error.message, /hub-c/);
  assert.ok(ms < 2500, `answered in ${Math.round(ms)} ms`);
});

test('promote by hand through a hub that does not own the key: the owner promotes it at every SDK', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:manual/');
  const since = Date.now() - 1000;
  const res = await write('hub-a', 'promote', key!);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body, { app: APP, key, hub: 'hub-b' }, 'hub-b answered');
  await waitFor(`${key} hot at every SDK`, () => cluster.clients.every((c) => c.isHot(key!)), 5000);
  const event = await waitFor(
    'the promotion in history',
    async () => (await cluster.history('hub-a', since)).find((e) => e.type === 'promote' && e.key === key),
    5000,
  );
  assert.is(event.hub, 'hub-b', 'the owner hub decided it');
  assert.is(event.manual, true);
  const hot = (await httpJson(`${cluster.hub('hub-b').httpUrl}/api/hot?app=${APP}`)).body.hot as {
    key: string;
    hub: string;
  }[];
  assert.is(hot.find((h) => h.key === key)?.hub, 'hub-b');
  // the owner's refusal passes through: a key no rule matches
  const [unmatched] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'user:');
  const refused = await write('hub-a', 'promote', unmatched!);
  assert.is(refused.status, 422);
  assert.is(refused.body.error.code, 'HK_ERR_RULES');
  assert.match(refused.body.error.message, /^hub hub-b: /);
});

test('promote through a hub whose key owner cannot be reached is 502 HK_ERR_OWNER_UNREACHABLE', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-c', 1, 'item:lost-promote/');
  const started = performance.now();
  const res = await write('hub-a', 'promote', key!);
  const ms = performance.now() - started;
  assert.is(res.status, 502);
  assert.is(res.body.error.code, 'HK_ERR_OWNER_UNREACHABLE');
  assert.match(res.body.error.message, /hub-c/);
  assert.ok(ms < 2500, `answered in ${Math.round(ms)} ms`);
  assert.not.ok(
    cluster.clients.some((c) => c.isHot(key!)),
    'nobody promoted it',
  );
  // an invalidation is not lost with the owner: the hub asked still broadcasts it, and says so
  const inv = await write('hub-a', 'invalidate', key!);
  assert.is(inv.status, 200, JSON.stringify(inv.body));
  assert.equal(inv.body.hubs, ['hub-a']);
  assert.match(inv.body.ownerError, /hub-c/);
});

test('invalidate through a hub that does not own the key reaches every SDK', async () => {
  const [key] = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:write/');
  const seen = cluster.clients.map(
    (c) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${c.instanceId} got no invalidation of ${key}`)), 5000);
        c.on('invalidate', (k, info) => {
          if (k !== key) return;
          clearTimeout(timer);
          resolve(info.hub);
        });
      }),
  );
  const res = await write('hub-a', 'invalidate', key!);
  assert.is(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.hubs, ['hub-a', 'hub-b'], 'broadcast by the hub asked and by the owner');
  for (const from of await Promise.all(seen)) assert.ok(from === 'hub-a' || from === 'hub-b', `invalidated by ${from}`);
});

test.run();
