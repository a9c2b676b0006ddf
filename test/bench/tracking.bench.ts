/**
 * Benchmark 8 — writes from anywhere: the staleness of a hot value after a write by a client
 * without the SDK (plain ioredis), from the write's reply until every instance reads the new
 * value. Three instances (each its own HotKeyClient and wrapped client, in this process) read the
 * hot keys; one writer writes them one at a time (test/support/staleness.ts). On a standalone
 * redis-server and on a real 3-master Redis Cluster, with server-assisted tracking (ours).
 *
 * Baseline: the TTL-only behaviour (tracking off), where a value written behind the SDK's back is
 * served until its `cacheTtlMs` (5 s, the rule default) runs out: measured with writes at random
 * moments of each cached value's life, many keys at once.
 */
import { Cluster, Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys, type WithHotKeysOptions } from '@hotkey/sdk/ioredis';
import type { Hub } from '@hotkey/hub';
import { startHubInProcess } from '../support/hub-in-process.ts';
import { benchMain, type BenchRow } from './harness.ts';
import { RedisServer } from '../support/redis-server.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { measureStaleness, summary, warm, type Reader } from '../support/staleness.ts';
import { promoteInProcess } from '../support/promote.ts';
import { delay, within } from '../support/wait.ts';

const INSTANCES = 3;

interface Setup {
  readers: Reader[];
  close: () => Promise<void>;
}

async function setup(hub: Hub, connect: () => Redis | Cluster, wrap: WithHotKeysOptions): Promise<Setup> {
  const hks = Array.from(
    { length: INSTANCES },
    (_, i) => new HotKeyClient({ app: 'bench', hubs: hub.url, flushIntervalMs: 20, instanceId: `reader-${i}` }),
  );
  await Promise.all(hks.map((hk) => hk.ready({ signal: AbortSignal.timeout(5000) })));
  const readers = hks.map((hk) => ({ hk, redis: withHotKeys(connect(), hk, wrap) }));
  return {
    readers,
    close: async () => {
      for (const r of readers) r.redis.disconnect();
      await within('clients to close', Promise.all(hks.map((hk) => hk.close())), 10_000);
    },
  };
}

const promote = (hub: Hub, readers: readonly Reader[], key: string): Promise<void> =>
  promoteInProcess(
    hub,
    'bench',
    key,
    readers.map((r) => r.hk),
  );

/** Ours: sequential outside writes over `keys`, each one's staleness. */
async function tracked(
  hub: Hub,
  connect: () => Redis | Cluster,
  writer: Redis | Cluster,
  keys: string[],
  writes: number,
): Promise<number[]> {
  const s = await setup(hub, connect, {});
  try {
    for (const key of keys) {
      await writer.set(key, 'v0');
      await promote(hub, s.readers, key);
    }
    return await measureStaleness({ readers: s.readers, keys, writes, write: (key, value) => writer.set(key, value) });
  } finally {
    await s.close();
  }
}

/**
 * Baseline, TTL-only: every key is cached on every reader, then written once at a random moment
 * of its cached life; the staleness is until every reader reads the new value (polled every 5 ms).
 */
async function ttlOnly(
  hub: Hub,
  server: RedisServer,
  writer: Redis,
  keys: number,
  cacheTtlMs: number,
): Promise<number[]> {
  const s = await setup(hub, () => new Redis(server.url), { tracking: false });
  try {
    const names = Array.from({ length: keys }, (_, i) => `base:${i}`);
    for (const key of names) {
      await writer.set(key, 'v0');
      await promote(hub, s.readers, key);
    }
    return await Promise.all(
      names.map(async (key, i) => {
        for (const r of s.readers) await warm(r, key);
        await delay(Math.random() * cacheTtlMs);
        const value = `new-${i}`;
        await writer.set(key, value);
        const wrote = performance.now();
        for (;;) {
          const got = await Promise.all(s.readers.map((r) => r.redis.get(key)));
          if (got.every((v) => v === value)) return performance.now() - wrote;
          if (performance.now() - wrote > cacheTtlMs + 5000) throw new Error(`${key} stale past its cacheTtlMs`);
          await delay(5);
        }
      }),
    );
  } finally {
    await s.close();
  }
}

benchMain(async ({ quick }) => {
  const writes = quick ? 50 : 200;
  const cacheTtlMs = quick ? 1000 : 5000;
  // a 10-minute window: a key promoted by hand is not demoted for cooling during the run
  const rules = [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs }];
  const hub = await startHubInProcess({ config: { apps: { bench: { rules } } } });
  const server = await RedisServer.start();
  const rc = await RedisCluster.start();
  const writer = new Redis(server.url);
  const clusterWriter = new Cluster(rc.nodes);
  try {
    const standalone = summary(
      await tracked(hub, () => new Redis(server.url), writer, ['item:1', 'item:2', 'item:3'], writes),
    );
    await clusterWriter.set('warm-up', '1');
    const clusterKeys = ['{a}item', '{b}item', '{c}item', '{d}item', '{e}item', '{f}item'];
    const cluster = summary(await tracked(hub, () => new Cluster(rc.nodes), clusterWriter, clusterKeys, writes));
    const baseline = summary(await ttlOnly(hub, server, writer, quick ? 10 : 40, cacheTtlMs));
    const note = `${INSTANCES} instances, ${writes} writes by plain ioredis, one at a time; baseline: tracking off, cacheTtlMs ${cacheTtlMs}, ${baseline.n} writes at random moments of the cached life`;
    const rows: BenchRow[] = [];
    for (const [name, s] of [
      ['standalone', standalone],
      ['cluster 3 masters', cluster],
    ] as const) {
      rows.push(
        {
          bench: `8 outside writes ${name}`,
          metric: 'write reply → every instance reads the new value, p99',
          ours: s.p99,
          baseline: baseline.p99,
          unit: 'ms',
          better: 'lower',
          target: { reach: 50 },
          note: `${note}; ours max ${s.max.toFixed(1)} ms`,
        },
        {
          bench: `8 outside writes ${name}`,
          metric: 'same, p50',
          ours: s.p50,
          baseline: baseline.p50,
          unit: 'ms',
          better: 'lower',
        },
      );
    }
    return rows;
  } finally {
    writer.disconnect();
    clusterWriter.disconnect();
    await within('the hub to close', hub.close(), 10_000);
    await server.stop();
    await rc.stop();
  }
});
