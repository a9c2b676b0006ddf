/**
 * Failover under traffic with three hub processes and twelve SDKs: `kill -9` of a hub moves its
 * keys to their new owners, promotions of those keys resume one fence later (H26) and service
 * code sees no error; the hub restarted with the same id rejoins and takes its keys back without
 * a storm of duplicate promotions.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Cluster, httpJson } from './cluster-harness.ts';
import { delay, waitFor } from '../support/wait.ts';
import { fenceMsOf } from '../../hub/src/core/invalidate/ownership-fence.ts';
import { DEFAULT_TUNABLES } from '../../hub/src/core/tunables.ts';

const IDS = ['hub-a', 'hub-b', 'hub-c'];
const SURVIVORS = ['hub-a', 'hub-b'];
const RULES = [{ match: 'item:*', threshold: 200, hotMs: 60_000, cacheTtlMs: 60_000 }];
/**
 * A killed hub sends no marker: the survivors cannot tell it from one cut off from Redis that
 * still acks writes of its keys, so they promote those keys one fence after they drop it (H26).
 * The bound: the drop within a heartbeat or two, the fence, and a window of traffic.
 */
const LOST_PROMOTED_WITHIN_MS = 1000 + fenceMsOf(DEFAULT_TUNABLES.leaseMs) + 1000;
let cluster: Cluster;
let loaderErrors = 0;
let getErrors = 0;
let gets = 0;
let reader: NodeJS.Timeout | undefined;

test.before(async () => {
  cluster = await Cluster.setup(IDS, RULES, 12);
});

test.after(async () => {
  if (reader) clearInterval(reader);
  await cluster?.close();
});

/** Service code reading keys through get() the whole time (4/s per key and SDK, far below the threshold): none may fail. */
function readAll(keys: string[]): void {
  reader = setInterval(() => {
    for (const client of cluster.clients) {
      for (const key of keys) {
        gets++;
        client
          .get(key, async (k) => {
            if (k !== key) loaderErrors++;
            return `value of ${k}`;
          })
          .then(
            (v) => v !== `value of ${key}` && loaderErrors++,
            () => getErrors++,
          );
      }
    }
  }, 250);
}

test('kill -9 of a hub: its keys move, promotions resume within a window and a flush, no caller error', async () => {
  const before = Cluster.keysOwnedBy(IDS, 'hub-c', 2, 'item:pre:'); // hot before the kill
  const lost = Cluster.keysOwnedBy(IDS, 'hub-c', 3, 'item:lost:'); // get hot only after it
  const kept = Cluster.keysOwnedBy(IDS, 'hub-a', 1, 'item:kept:');
  readAll([...before, ...lost, ...kept]);
  cluster.traffic(Object.fromEntries([...before, ...kept].map((k) => [k, 600])));
  await waitFor(
    'pre-kill keys hot everywhere',
    () => cluster.clients.every((c) => [...before, ...kept].every((k) => c.isHot(k))),
    8000,
  );

  const t0 = Date.now();
  cluster.hub('hub-c').child.kill('SIGKILL');
  await cluster.hub('hub-c').exited;
  cluster.traffic(Object.fromEntries([...before, ...kept, ...lost].map((k) => [k, 600])));

  await waitFor('every SDK to drop hub-c', () => cluster.clients.every((c) => !c.hubs().includes('hub-c')), 3000, 10);
  const noticed = Date.now() - t0;
  const promoted = await waitFor(
    'promotions of the lost keys by their new owners',
    async () => {
      const events = (await cluster.history('hub-a', t0)).filter((e) => e.type === 'promote' && lost.includes(e.key));
      return new Set(events.map((e) => e.key)).size === lost.length ? events : undefined;
    },
    6000,
    20,
  );
  const firstPromotion = Math.min(...promoted.map((e) => e.at)) - t0;
  const lastPromotion = Math.max(...promoted.map((e) => e.at)) - t0;
  console.log(
    `# kill -9 → SDKs dropped the hub after ${noticed} ms; lost keys promoted after ${firstPromotion}–${lastPromotion} ms`,
  );
  assert.ok(noticed <= 2000, `SDKs notice within 2 s (${noticed} ms)`);
  assert.ok(
    lastPromotion <= LOST_PROMOTED_WITHIN_MS,
    `lost keys promoted within ${LOST_PROMOTED_WITHIN_MS} ms of the kill (${lastPromotion} ms)`,
  );
  assert.ok(
    firstPromotion >= fenceMsOf(DEFAULT_TUNABLES.leaseMs),
    `held back one fence at least: the killed hub never said it knew (${firstPromotion} ms)`,
  );
  for (const e of promoted) assert.is(e.hub, Cluster.owner(SURVIVORS, e.key), `${e.key} decided by its new owner`);
  await waitFor(
    'every SDK to have the lost keys hot',
    () => cluster.clients.every((c) => lost.every((k) => c.isHot(k))),
    3000,
  );
  await cluster.waitMembers(SURVIVORS, 4000);
  assert.is(getErrors, 0, 'get() never failed');
  assert.is(loaderErrors, 0, 'get() returned the right values');
  assert.ok(gets > 100, `service code kept reading (${gets} gets)`);
});

test('the killed hub restarts with its id, rejoins and takes its keys back without a promotion storm', async () => {
  const moved = Cluster.keysOwnedBy(IDS, 'hub-c', 3, 'item:lost:');
  const t0 = Date.now();
  await cluster.startMember('hub-c', cluster.hub('hub-c').port);
  await cluster.waitMembers(IDS, 5000);
  await waitFor(
    'every SDK to reconnect to hub-c',
    () => cluster.clients.every((c) => c.hubs().includes('hub-c')),
    5000,
  );
  await delay(2500); // hub-c aggregates its keys again, over several windows
  const events = (await cluster.history('hub-a', t0)).filter((e) => moved.includes(e.key));
  const promotions = events.filter((e) => e.type === 'promote');
  console.log(`# after the rejoin: ${JSON.stringify(events.map((e) => [e.type, e.key, e.hub, e.at - t0]))}`);
  for (const key of moved) {
    const mine = promotions.filter((e) => e.key === key);
    assert.ok(mine.length <= 1, `${key}: ${mine.length} promotions after the rejoin (at most one handover)`);
    assert.ok(
      mine.every((e) => e.hub === 'hub-c'),
      `${key} decided by hub-c again`,
    );
  }
  assert.not.ok(
    events.some((e) => e.type === 'demote'),
    `no demotion of keys still hot: ${JSON.stringify(events.filter((e) => e.type === 'demote'))}`,
  );
  for (const client of cluster.clients)
    for (const key of moved) assert.ok(client.isHot(key), `${key} still hot on ${client.instanceId}`);
  const { body } = await httpJson(`${cluster.hub('hub-c').httpUrl}/api/cluster`);
  assert.equal(body.members.map((m: { id: string }) => m.id).sort(), IDS);
  assert.is(getErrors, 0, 'get() never failed');
});

test.run();
