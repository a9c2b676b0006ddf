/**
 * Benchmark 9 — replica keys: one read-hot key that may not be cached locally (`cache: false`),
 * read through the ioredis wrapper as fast as this box goes, on a real 3-master Redis Cluster.
 * Figure: the busiest master's share of ALL Redis commands (INFO commandstats of each node,
 * reset after the warm-up), side by side in one run:
 * - baseline: the wrapper with replicas off (`replicas: false`: today's behaviour, every read on
 *   the key's master);
 * - ours: replicas on (the default), the hub sizing the copies from the measured QPS.
 * Two SDK instances in this process, each with its own wrapped Cluster client and 32 reads in
 * flight. The rule's per-node budget is 1,000 reads/s (not the 35,000 default): three Redis
 * nodes, the hub and the load share 2 cores here (about 10,000 reads/s in all), a QPS the default
 * would not split.
 */
import { Cluster } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { adapterView } from '@hotkey/sdk/internal';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import type { Hub } from '@hotkey/hub';
import { startHubInProcess } from '../support/hub-in-process.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const KEY = 'item:hot';
const INSTANCES = 2;
const IN_FLIGHT = 32;

interface Phase {
  /** busiest master's share of all commands, % */
  busiest: number;
  /** GETs answered per second */
  readsPerSecond: number;
  perNode: number[];
  copies: number;
}

function commands(rc: RedisCluster, port: number): number {
  let total = 0;
  for (const m of rc.cli(port, 'info', 'commandstats').matchAll(/calls=(\d+)/g)) total += Number(m[1]);
  return total;
}

async function phase(
  hub: Hub,
  rc: RedisCluster,
  wrap: WithHotKeysOptions,
  seconds: number,
  copies: number,
): Promise<Phase> {
  const hks = Array.from(
    { length: INSTANCES },
    (_, i) => new HotKeyClient({ app: 'bench', hubs: hub.url, flushIntervalMs: 50, instanceId: `reader-${i}` }),
  );
  await Promise.all(hks.map((hk) => hk.ready({ signal: AbortSignal.timeout(10_000) })));
  const clients = hks.map((hk) => withHotKeys(new Cluster(rc.nodes), hk, wrap));
  let running = true;
  let reads = 0;
  const loops = clients.flatMap((c) =>
    Array.from({ length: IN_FLIGHT }, async () => {
      while (running) {
        await c.get(KEY);
        reads++;
      }
    }),
  );
  try {
    // warm-up: promoted, and (with replicas) sized to the copies the QPS asks for and filled
    await waitFor(
      `${KEY} hot with ${copies} copies`,
      () => hks.every((hk) => hk.isHot(KEY) && adapterView(hk).replicasOf(KEY) >= copies),
      30_000,
    );
    // the count follows the measured QPS: measure once it held for a second (a busy box wobbles)
    let heldSince = performance.now();
    await waitFor(
      `${KEY} to keep ${copies} copies for 1 s`,
      () => {
        if (!hks.every((hk) => adapterView(hk).replicasOf(KEY) >= copies)) heldSince = performance.now();
        return performance.now() - heldSince >= 1000;
      },
      30_000,
      50,
    );
    for (const port of rc.ports) rc.cli(port, 'config', 'resetstat');
    const before = reads;
    const t0 = performance.now();
    await delay(seconds * 1000);
    const perNode = rc.ports.map((port) => commands(rc, port));
    const elapsed = (performance.now() - t0) / 1000;
    const total = perNode.reduce((a, b) => a + b, 0);
    return {
      busiest: (100 * Math.max(...perNode)) / total,
      readsPerSecond: (reads - before) / elapsed,
      perNode,
      copies: Math.min(...hks.map((hk) => adapterView(hk).replicasOf(KEY))),
    };
  } finally {
    running = false;
    await within('the read loops to stop', Promise.all(loops), 10_000);
    for (const c of clients) c.disconnect();
    await within('clients to close', Promise.all(hks.map((hk) => hk.close())), 10_000);
  }
}

benchMain(async ({ quick }) => {
  const seconds = quick ? 2 : 8;
  const rules = [{ match: 'item:*', threshold: 100, hotMs: 600_000, cache: false, replicas: { perNodeQps: 1000 } }];
  const hub = await startHubInProcess({ config: { apps: { bench: { rules } } } });
  const rc = await RedisCluster.start();
  const seed = new Cluster(rc.nodes);
  try {
    await seed.set(KEY, 'x'.repeat(64));
    const baseline = await phase(hub, rc, { replicas: false }, seconds, 1);
    // the key stays hot at the hub (hotMs): its copy count follows the QPS it measures now
    const ours = await phase(hub, rc, {}, seconds, 3);
    const note = (p: Phase) =>
      `commands per master ${p.perNode.join(' / ')}, hub asked ${p.copies} copies (one per master used)`;
    const rows: BenchRow[] = [
      {
        bench: '9 replica keys cluster 3 masters',
        metric: "busiest master's share of all Redis commands, one read-hot uncached key",
        ours: ours.busiest,
        baseline: baseline.busiest,
        unit: '%',
        better: 'lower',
        target: { reach: 40 },
        note: `${INSTANCES} instances × ${IN_FLIGHT} reads in flight, ${seconds} s; ours: ${note(ours)}; baseline (replicas off): ${note(baseline)}`,
      },
      {
        bench: '9 replica keys cluster 3 masters',
        metric: 'GETs of the key answered per second',
        ours: ours.readsPerSecond,
        baseline: baseline.readsPerSecond,
        unit: 'reads/s',
        better: 'higher',
      },
    ];
    return rows;
  } finally {
    seed.disconnect();
    await within('the hub to close', hub.close(), 10_000);
    await rc.stop();
  }
});
