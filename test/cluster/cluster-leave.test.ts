/**
 * Graceful leave and Redis outage with three hub processes and ten SDKs: SIGTERM takes a hub out
 * of the member list before its sockets close with 4010, so its keys move at once; a Redis
 * restart degrades every hub (still serving and deciding) until they resynchronise by themselves.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ClientStatus, HotKeyClient } from '@hotkey/sdk';
import { CloseCode } from '@hotkey/sdk';
import { ADMIN, APP, Cluster, httpJson } from './cluster-harness.ts';
import { waitFor } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b', 'hub-c'];
const RULES = [{ match: 'item:*', threshold: 200, hotMs: 60_000, cacheTtlMs: 60_000 }];
let cluster: Cluster;
const statuses = new Map<HotKeyClient, ClientStatus[]>();

test.before(async () => {
  cluster = await Cluster.setup(IDS, RULES, 10);
  for (const client of cluster.clients) {
    const seen: ClientStatus[] = [];
    statuses.set(client, seen);
    void (async () => {
      for await (const s of client.status()) seen.push(s);
    })();
  }
});

test.after(async () => {
  await cluster?.close();
});

test('SIGTERM: the hub leaves the member list first and closes its SDKs with 4010; its keys move', async () => {
  const owned = Cluster.keysOwnedBy(IDS, 'hub-b', 2, 'item:leave:');
  const later = Cluster.keysOwnedBy(IDS, 'hub-b', 2, 'item:after:');
  cluster.traffic(Object.fromEntries(owned.map((k) => [k, 600])));
  await waitFor('hub-b keys hot', () => cluster.clients.every((c) => owned.every((k) => c.isHot(k))), 8000);

  const t0 = Date.now();
  const exit = await cluster.hub('hub-b').stop('SIGTERM', 8000);
  assert.is(exit.code, 0, 'graceful exit');
  const stopped = Date.now() - t0;
  await cluster.waitMembers(['hub-a', 'hub-c'], 1000);
  const gone = Date.now() - t0;
  assert.ok(gone < 1500, `hub-b left the member list in ${gone} ms (stop took ${stopped} ms), well before its TTL`);
  let leaving = 0;
  for (const [client, seen] of statuses) {
    // Told either way, never by a broken socket: Members without hub-b (the SDK then closes that
    // socket itself, 1000), or the 4010 close that follows it.
    const told = seen.find((s) => s.type === 'members' && !s.members.some((m) => m.id === 'hub-b'));
    assert.ok(told, `${client.instanceId} got a member list without hub-b`);
    const closes = seen
      .filter((s) => s.type === 'disconnect' && s.hub === 'hub-b')
      .map((s) => s.type === 'disconnect' && s.code);
    assert.ok(
      closes.every((code) => code === CloseCode.Leaving || code === CloseCode.Normal),
      `${client.instanceId} close codes from hub-b: ${closes}`,
    );
    if (closes.includes(CloseCode.Leaving)) leaving++;
    assert.not.ok(client.hubs().includes('hub-b'));
    for (const key of owned) assert.ok(client.isHot(key), `${key} stays hot on ${client.instanceId}`);
  }

  console.log(
    `# ${leaving} of ${statuses.size} SDKs saw the 4010 close (the others had already dropped hub-b on Members)`,
  );
  const t1 = Date.now();
  cluster.traffic(Object.fromEntries([...owned, ...later].map((k) => [k, 600])));
  const events = await waitFor(
    'keys of the hub that left promoted by their new owners',
    async () => {
      const list = (await cluster.history('hub-a', t1)).filter((e) => e.type === 'promote' && later.includes(e.key));
      return list.length === later.length ? list : undefined;
    },
    4000,
  );
  for (const e of events) assert.is(e.hub, Cluster.owner(['hub-a', 'hub-c'], e.key));
  console.log(
    `# SIGTERM → members updated in ${gone} ms; moved keys promoted ${Math.max(...events.map((e) => e.at)) - t1} ms after traffic began`,
  );
  cluster.stopTraffic();
});

test('Redis restart: hubs degrade but keep deciding, then resynchronise by themselves', async () => {
  const live = ['hub-a', 'hub-c'];
  await cluster.redis.stop();
  for (const id of live) {
    const base = cluster.hub(id).httpUrl;
    await waitFor(`${id} degraded`, async () => (await httpJson(`${base}/healthz`)).body.status === 'degraded', 3000);
    const health = await httpJson(`${base}/healthz`);
    assert.is(health.status, 200, 'liveness stays 200');
    const ready = await httpJson(`${base}/readyz`);
    assert.is(ready.status, 503);
    assert.is(ready.body.status, 'degraded');
  }

  // Decisions go on with the members the hubs know.
  const during = ['hub-a', 'hub-c'].flatMap((id) => Cluster.keysOwnedBy(live, id, 1, 'item:outage:'));
  cluster.traffic(Object.fromEntries(during.map((k) => [k, 600])));
  await waitFor(
    'promotions while Redis is down',
    () => cluster.clients.every((c) => during.every((k) => c.isHot(k))),
    5000,
  );
  cluster.stopTraffic();

  const put = await httpJson(`${cluster.hub('hub-a').httpUrl}/api/apps/${APP}/rules`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify([{ match: 'item:*', threshold: 300 }]),
  });
  assert.is(put.status, 503, 'rules cannot be stored without Redis: retry later');
  assert.is(put.body.error?.code ?? put.body.code, 'HK_ERR_UNAVAILABLE');

  const t0 = Date.now();
  await cluster.redis.restart();
  for (const id of live) {
    await waitFor(
      `${id} healthy again`,
      async () => (await httpJson(`${cluster.hub(id).httpUrl}/readyz`)).status === 200,
      6000,
    );
  }
  console.log(`# Redis restart → all hubs ready again ${Date.now() - t0} ms after Redis came back`);
  await cluster.waitMembers(live, 3000);
  const history = await cluster.history('hub-c', t0 - 60_000);
  for (const key of during)
    assert.ok(
      history.some((e) => e.type === 'promote' && e.key === key),
      `promotion of ${key} during the outage reached history`,
    );
  const after = await httpJson(`${cluster.hub('hub-c').httpUrl}/api/apps/${APP}/rules`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify([{ match: 'item:*', threshold: 300 }]),
  });
  assert.is(after.status, 200);
  await waitFor(
    'the rule change to reach every SDK',
    () => cluster.clients.every((c) => c.rules()[0]?.threshold === 300),
    2000,
  );
});

test.run();
