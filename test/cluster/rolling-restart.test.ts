/**
 * A rolling restart of a 3-hub cluster under load: six SDKs read three keys through `get()` (one
 * owned by each hub, hot throughout) and invalidate them, while each hub in turn gets SIGTERM and
 * comes back on its port, the next only once the cluster lists it again (the supported order,
 * docs/operations/upgrades.md). Checked: no `get()` or `invalidate()` rejects (nothing reaches service code),
 * every key is hot again on every SDK within HOT_GAP_BOUND_MS of losing it, and a key that begins
 * to surge mid-restart is promoted on every SDK all the same.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Cluster } from './cluster-harness.ts';
import { waitFor } from '../support/wait.ts';

const IDS = ['hub-a', 'hub-b', 'hub-c'];
const RULES = [{ match: 'item:*', threshold: 200, hotMs: 60_000, cacheTtlMs: 60_000 }];
/**
 * The documented bound (docs/operations/upgrades.md): a key a hub lets go of is hot again once its new owner
 * promoted it (from the handed-over window at once, else from its own within one window): under a
 * second; 4 s allows for a loaded 2-core machine (one run here saw 2.9 s).
 */
const HOT_GAP_BOUND_MS = 4000;
let cluster: Cluster;

test.after(async () => {
  await cluster?.close();
});

test('rolling restart of three hubs: no error reaches service code, hot keys stay (or soon come back) hot', async () => {
  cluster = await Cluster.setup(IDS, RULES, 6);
  const keys = IDS.map((id) => Cluster.keysOwnedBy(IDS, id, 1, 'item:roll:')[0]!);
  const surge = Cluster.keysOwnedBy(IDS, 'hub-b', 1, 'item:surge:')[0]!;
  cluster.traffic(Object.fromEntries(keys.map((k) => [k, 900])));
  await waitFor('the keys hot on every SDK', () => cluster.clients.every((c) => keys.every((k) => c.isHot(k))), 10_000);
  // The cluster just formed: each join moved keys, and a key's new owner acks its writes only one
  // ownership fence (2.75 s) after the move (docs/concepts/consistency.md). Writes issued now would wait out
  // that fence and then the restart's own moves on top (the leave, then the rejoin a second later,
  // each a fence): past the SDK's 5 s invalidation timeout. A fleet is not restarted seconds after
  // it formed; the restart starts once one write of each key acks at the owner's normal pace.
  await waitFor(
    'a write of each key acked within 500 ms (the formation fence is over)',
    async () => {
      const t = performance.now();
      await Promise.all(keys.map((k) => cluster.clients[0]!.invalidate(k)));
      return performance.now() - t < 500;
    },
    15_000,
  );

  const errors: string[] = [];
  let running = true;
  let reads = 0;
  let writes = 0;
  let slowestAck = 0;
  const values = new Map(keys.map((k) => [k, 0]));
  const loops = cluster.clients.map(async (client, i) => {
    let n = 0;
    while (running) {
      const key = keys[n % keys.length]!;
      try {
        await client.get(key, (k) => values.get(k));
        reads++;
        if (++n % 40 === i) {
          values.set(key, values.get(key)! + 1);
          const asked = performance.now();
          await client.invalidate(key);
          slowestAck = Math.max(slowestAck, performance.now() - asked);
          writes++;
        }
      } catch (err) {
        errors.push(`${client.instanceId} ${key}: ${(err as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  });
  const t0 = performance.now();
  // the longest time each key was not hot on each SDK, sampled every 20 ms
  const since = new Map<string, number>();
  const longest = new Map<string, number>();
  const sampler = setInterval(() => {
    const now = performance.now();
    for (const client of cluster.clients)
      for (const key of [...keys]) {
        const id = `${client.instanceId} ${key}`;
        if (client.isHot(key)) {
          const from = since.get(id);
          if (from !== undefined) longest.set(id, Math.max(longest.get(id) ?? 0, now - from));
          if (from !== undefined && now - from > 1000)
            console.log(`# gap ${id} ${Math.round(from - t0)}..${Math.round(now - t0)} ms`);
          since.delete(id);
        } else if (!since.has(id)) since.set(id, now);
      }
  }, 20);

  for (const id of IDS) {
    const port = cluster.hub(id).port;
    const exit = await cluster.hub(id).stop('SIGTERM', 8000);
    assert.is(exit.code, 0, `${id} exits cleanly`);
    if (id === 'hub-b') cluster.traffic(Object.fromEntries([...keys, surge].map((k) => [k, 900])));
    console.log(`# ${id} stopped at ${Math.round(performance.now() - t0)} ms`);
    await cluster.startMember(id, port);
    console.log(`# ${id} started at ${Math.round(performance.now() - t0)} ms`);
    await cluster.waitMembers(IDS, 15_000);
  }
  const restartMs = performance.now() - t0;
  await waitFor(
    'every key hot on every SDK after the restart',
    () => cluster.clients.every((c) => [...keys, surge].every((k) => c.isHot(k))),
    HOT_GAP_BOUND_MS * 2,
  );
  clearInterval(sampler);
  running = false;
  await Promise.all(loops);
  cluster.stopTraffic();
  const now = performance.now();
  for (const [id, from] of since) longest.set(id, Math.max(longest.get(id) ?? 0, now - from));

  const gaps = [...longest.values()].sort((a, b) => a - b);
  console.log(
    `# rolling restart of 3 hubs in ${Math.round(restartMs)} ms: ${reads} reads, ${writes} acked invalidations (slowest ${Math.round(slowestAck)} ms); ` +
      `a key not hot on an SDK for at most ${Math.round(gaps.at(-1) ?? 0)} ms (${gaps.length} gaps, median ${Math.round(gaps[Math.floor(gaps.length / 2)] ?? 0)} ms)`,
  );
  assert.equal(errors, [], 'no get() or invalidate() rejected');
  // load ran throughout (not a throughput claim: a write of a moved key waits out the ownership
  // fence, so how many fit in the restart depends on how fast the hubs came back)
  const n = cluster.clients.length;
  assert.ok(writes >= n && reads >= 10 * n, `reads ${reads}, writes ${writes}`);
  for (const [id, ms] of longest) assert.ok(ms <= HOT_GAP_BOUND_MS, `${id} not hot for ${Math.round(ms)} ms`);
});

test.run();
