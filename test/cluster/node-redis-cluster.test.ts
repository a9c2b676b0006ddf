/**
 * The node-redis adapter on a `createCluster(...)` client, against a real 3-master Redis Cluster
 * (`redis-server --cluster-enabled yes` ×3, test/support/redis-cluster.ts) and a real hub: hot
 * reads of keys on every master are local (counted at each master), writes through the cluster's
 * dispatch (methods, sendCommand, multi().exec(), execAsPipeline) invalidate before they settle,
 * and an outside write to any master is heard through tracking.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createCluster } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { connectNoted, destroyAll, keyPerMaster, servedLocally } from '../support/node-redis.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

const newCluster = () => createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) });
const newNode = (port: number) => createClient({ socket: { host: '127.0.0.1', port } });
type Cluster = ReturnType<typeof newCluster>;
let rc: RedisCluster;
const opened: Array<{ destroy(): void }> = [];
let plain: Cluster;
/** one plain connection per master, to count what reaches it */
let nodes: Array<ReturnType<typeof newNode>>;

async function cluster(): Promise<Cluster> {
  return connectNoted(newCluster(), opened);
}

async function getsAtRedis(): Promise<number> {
  let sum = 0;
  for (const n of nodes) sum += Number(/^cmdstat_get:calls=(\d+)/m.exec(await n.info('commandstats'))?.[1] ?? 0);
  return sum;
}

const promote = (key: string, on: readonly HotKeyClient[]) => promoteInProcess(e2e.hub, 'shop', key, on);

/** A key on each master (by the cluster's slot map). */
const keysOnEveryMaster = (c: Cluster, prefix: string): string[] => [...keyPerMaster(c, rc, prefix).values()];

test.before(async () => {
  rc = await RedisCluster.start();
  plain = await cluster();
  nodes = await Promise.all(
    rc.ports.map(async (port) => {
      const n = newNode(port);
      n.on('error', () => {});
      opened.push(n);
      await n.connect();
      return n;
    }),
  );
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await rc?.stop();
});

test('hot reads of keys on every master are local; an outside write to any master is heard', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await cluster(), hk!);
  const keys = keysOnEveryMaster(c, 'nrc:read');
  for (const key of keys) await plain.set(key, `${key}=1`);
  for (const key of keys) await promote(key, [hk!]);
  for (const key of keys) await servedLocally(c, key, `${key}=1`, getsAtRedis);
  const before = await getsAtRedis();
  for (let i = 0; i < 20; i++) for (const key of keys) assert.is(await c.get(key), `${key}=1`);
  assert.is(await getsAtRedis(), before, '60 hot reads, no GET at any master');
  for (const key of keys) await plain.set(key, `${key}=2`);
  for (const key of keys)
    await waitFor(`${key}: the outside write is seen`, async () => (await c.get(key)) === `${key}=2`, 2000);
});

test('writes through the cluster invalidate before they settle: another instance reads the new value', async () => {
  const [writerHk, readerHk] = await e2e.sdks(2, () => ({ flushIntervalMs: 20 }));
  const writer = withHotKeys(await cluster(), writerHk!);
  const reader = withHotKeys(await cluster(), readerHk!, { tracking: false });
  const keys = keysOnEveryMaster(writer, 'nrc:write');
  for (const key of keys) await plain.set(key, 'v0');
  for (const key of keys) await promote(key, [writerHk!, readerHk!]);
  const paths: Array<[string, (key: string, value: string) => Promise<unknown>]> = [
    ['set()', (k, v) => writer.set(k, v)],
    ['sendCommand', (k, v) => writer.sendCommand(k, false, ['SET', k, v])],
    ['multi().exec()', (k, v) => writer.multi().set(k, v).exec()],
    ['execAsPipeline', (k, v) => writer.multi().set(k, v).execAsPipeline()],
    [
      'duplicate()',
      async (k, v) => {
        const dup = writer.duplicate();
        dup.on('error', () => {});
        opened.push(dup);
        await dup.connect();
        return dup.set(k, v);
      },
    ],
  ];
  for (const key of keys) {
    await servedLocally(reader, key, 'v0', getsAtRedis);
    for (const [name, write] of paths) {
      const value = `${name} ${key}`;
      await write(key, value);
      assert.is(await reader.get(key), value, `${name} on ${key}: the reader's first read after the write`);
      await servedLocally(reader, key, value, getsAtRedis);
    }
  }
});

test.run();
