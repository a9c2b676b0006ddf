/**
 * Pre-declared hot keys in a cluster: a window declared through one hub's API is stored with the
 * rules in Redis, every hub sees it, the key's owner promotes it at the window's start with no
 * traffic, and it survives every hub restarting (a new process reads it back from Redis).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, APP, Cluster, httpJson } from './cluster-harness.ts';
import { waitFor } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b'];
let cluster: Cluster;

test.before(async () => {
  cluster = await Cluster.setup(IDS, [{ match: 'item:*', threshold: 100_000 }], 2);
});

test.after(async () => {
  await cluster?.close();
});

const predeclared = (hub: string) =>
  httpJson(`${cluster.hub(hub).httpUrl}/api/apps/${APP}/predeclared`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });

test('a window declared on one hub is promoted by the owner at its start and survives restarts of every hub', async () => {
  const from = Date.now() + 1500;
  const until = from + 120_000;
  const res = await httpJson(`${cluster.hub('hub-a').httpUrl}/api/apps/${APP}/predeclared`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ match: 'item:launch', from, until }),
  });
  assert.is(res.status, 200, JSON.stringify(res.body));
  await waitFor(
    'hub-b lists the window',
    async () => (await predeclared('hub-b')).body.predeclared?.length === 1,
    5000,
  );
  assert.not.ok(cluster.clients.some((hk) => hk.isHot('item:launch')));
  await waitFor('item:launch hot at every SDK', () => cluster.clients.every((hk) => hk.isHot('item:launch')), 5000);

  // every hub restarts: the window comes back from Redis, and the key is hot again with no traffic
  for (const id of IDS) {
    const port = cluster.hub(id).port;
    await cluster.hub(id).stop();
    await cluster.startMember(id, port);
  }
  await cluster.waitMembers(IDS, 15_000);
  const after = await predeclared('hub-b');
  assert.equal(after.body.predeclared, [{ match: 'item:launch', from, until, active: true }]);
  await waitFor(
    'item:launch hot at every SDK after the restarts',
    () => cluster.clients.every((hk) => hk.isHot('item:launch') && hk.hubs().length === IDS.length),
    15_000,
  );
});

test.run();
