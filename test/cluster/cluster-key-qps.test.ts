/**
 * The key QPS history in a cluster: only the key's owner hub samples it, any other hub answers
 * GET /api/apps/:app/keys/qps by asking the owner, and a hub whose owner cannot be reached says
 * so with 502 HK_ERR_OWNER_UNREACHABLE instead of an empty curve. Real redis-server, real hub
 * processes (hub-c advertises a dead address: it is a member nobody can reach over HTTP).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubProcess } from '../support/hub-process.ts';
import { APP, Cluster, httpJson, waitFor } from './cluster-harness.ts';

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

const qps = (hub: string, key: string) => httpJson(`${cluster.hub(hub).httpUrl}/api/apps/${APP}/keys/qps?key=${encodeURIComponent(key)}`);

test.before(async () => {
  cluster = await Cluster.start(['hub-a', 'hub-b'], RULES);
  try {
    dir = await mkdtemp(join(tmpdir(), 'hotkey-cluster-qps-'));
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ apps: { [APP]: { rules: RULES } } }));
    unreachable = await HubProcess.start({ args: ['--redis', cluster.redis.url, '--node-id', 'hub-c', '--config', config, '--advertise-url', `ws://127.0.0.1:${await deadPort()}/ws`] });
    cluster.hubs.set('hub-c', unreachable); // its real HTTP port serves waitMembers; close() stops it
    await cluster.waitMembers(IDS, 10_000);
    // SDKs reach hub-a and hub-b; hub-c's keys simply never get reported
    await cluster.addClients(4, ['hub-a', 'hub-b']);
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
    await waitFor(`${key} hot`, async () => ((await httpJson(`${cluster.hub('hub-b').httpUrl}/api/hot?app=${APP}`)).body.hot as { key: string }[]).some((h) => h.key === key), 10_000);
    await waitFor('3 points at the owner', async () => (await qps('hub-b', key!)).body.points.length >= 3, 8000);
  } finally {
    cluster.stopTraffic();
  }
  const viaOwner = await qps('hub-b', key!);
  const viaOther = await qps('hub-a', key!);
  assert.is(viaOther.status, 200);
  assert.is(viaOther.body.hub, 'hub-b', 'the owner answered');
  assert.is(viaOther.body.key, key);
  assert.ok(viaOther.body.points.length >= viaOwner.body.points.length, `${viaOther.body.points.length} points via hub-a, ${viaOwner.body.points.length} at hub-b`);
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

test.run();
