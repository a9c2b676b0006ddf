/**
 * Rolling restart of 3 hubs under load: three `hotkey-hub --redis` processes on a real
 * redis-server, four SDKs in this process reading three hot keys (one owned by each hub) through
 * `get()` with a loader that GETs from Redis. Each hub in turn gets SIGTERM and comes back on its
 * port, the next once the cluster lists it again. The figure: hot-key reads that reached Redis
 * (loader calls) per second during the restart, against a steady run of the same length on the
 * same cluster right after it (side by side, one run).
 */
import { Redis } from 'ioredis';
import type { HotKeyClient } from '@hotkey/sdk';
import { Cluster } from '../cluster/cluster-harness.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { delay, waitFor } from '../support/wait.ts';

const IDS = ['h1', 'h2', 'h3'];
const SDKS = 4;

/** Reads the keys on every SDK until `stop()`; counts reads and loader calls (reads that reached Redis). */
function readers(clients: HotKeyClient[], keys: string[], redis: Redis) {
  let running = true;
  const counts = { reads: 0, loads: 0 };
  const loader = (key: string) => {
    counts.loads++;
    return redis.get(key);
  };
  const loops = clients.map(async (client) => {
    let n = 0;
    while (running) {
      try {
        await client.get(keys[n++ % keys.length]!, loader);
        counts.reads++;
      } catch {
        // a failed load is not a read
      }
      if (n % 16 === 0) await delay(1);
    }
  });
  return {
    counts,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

benchMain(async ({ quick }) => {
  const cluster = await Cluster.setup(
    IDS,
    [{ match: 'item:*', threshold: 200, hotMs: 60_000, cacheTtlMs: 60_000 }],
    SDKS,
  );
  const redis = new Redis({ port: cluster.redis.port, host: '127.0.0.1' });
  try {
    const keys = IDS.map((id) => Cluster.keysOwnedBy(IDS, id, 1, 'item:roll:')[0]!);
    for (const k of keys) await redis.set(k, 'v'.repeat(100));
    const run = readers(cluster.clients, keys, redis);
    await waitFor('keys hot on every SDK', () => cluster.clients.every((c) => keys.every((k) => c.isHot(k))), 15_000);
    await delay(1000);

    const restarts = quick ? IDS.slice(0, 1) : IDS;
    let before = { ...run.counts };
    let t0 = performance.now();
    for (const id of restarts) {
      const port = cluster.hub(id).port;
      await cluster.hub(id).stop('SIGTERM', 8000);
      await cluster.startMember(id, port);
      await cluster.waitMembers(IDS, 15_000);
    }
    // until every SDK has every key hot again: the restart's cost is all in
    await waitFor('keys hot again', () => cluster.clients.every((c) => keys.every((k) => c.isHot(k))), 15_000);
    const rollMs = performance.now() - t0;
    const roll = { reads: run.counts.reads - before.reads, loads: run.counts.loads - before.loads };

    before = { ...run.counts };
    t0 = performance.now();
    await delay(rollMs);
    const steadyMs = performance.now() - t0;
    const steady = { reads: run.counts.reads - before.reads, loads: run.counts.loads - before.loads };
    await run.stop();

    const perS = (n: number, ms: number) => (n * 1000) / ms;
    const note = `3 hubs + redis-server, ${SDKS} SDKs, 3 hot keys; ${restarts.length} hub(s) restarted in ${(rollMs / 1000).toFixed(1)} s, steady run as long`;
    const rows: BenchRow[] = [
      {
        bench: '25 rolling restart',
        metric: 'hot-key reads that reached Redis, per s (baseline: steady run)',
        ours: perS(roll.loads, rollMs),
        baseline: perS(steady.loads, steadyMs),
        unit: 'GET/s',
        better: 'lower',
        note,
      },
      {
        bench: '25 rolling restart',
        metric: 'share of hot-key reads that reached Redis (baseline: steady run)',
        ours: (100 * roll.loads) / Math.max(1, roll.reads),
        baseline: (100 * steady.loads) / Math.max(1, steady.reads),
        unit: '%',
        better: 'lower',
        note: `${roll.reads} reads during the restart, ${steady.reads} steady`,
      },
    ];
    return rows;
  } finally {
    redis.disconnect();
    await cluster.close();
  }
});
