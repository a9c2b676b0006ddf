/**
 * Hash reads through the node-redis adapter on a `createCluster(...)` client against a real
 * 3-master Redis Cluster: HGET, HGETALL and HMGET of hot hashes on every master are answered
 * locally (counted at each master), in the replies a plain cluster client gets, and an outside
 * write to any master is heard through tracking.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createCluster } from 'redis';
import { hashSlot } from '@hotkey/sdk/ioredis';
import { withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { destroyAll } from '../support/node-redis.ts';
import { promoteInProcess } from '../support/promote.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { form } from '../support/reply-form.ts';
import { delay, waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

const newCluster = () => createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) });
type Cluster = ReturnType<typeof newCluster>;
let rc: RedisCluster;
const opened: Array<{ destroy(): void }> = [];
const newMaster = (port: number) => createClient({ socket: { host: '127.0.0.1', port } });
let masters: Array<ReturnType<typeof newMaster>>;

async function connected<
  C extends { on(e: 'error', l: () => void): unknown; connect(): Promise<unknown>; destroy(): void },
>(c: C): Promise<C> {
  c.on('error', () => {});
  opened.push(c);
  await c.connect();
  return c;
}

/** HGET + HGETALL + HMGET calls executed so far, summed over the masters */
async function hashReadsAtRedis(): Promise<number> {
  let sum = 0;
  for (const m of masters) {
    const info = await m.info('commandstats');
    for (const name of ['hget', 'hgetall', 'hmget'])
      sum += Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  }
  return sum;
}

test.before(async () => {
  rc = await RedisCluster.start();
  masters = await Promise.all(rc.ports.map((port) => connected(newMaster(port))));
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await rc?.stop();
});

test('hot hashes on every master: HGET, HGETALL, HMGET local and as a plain cluster client answers; outside writes heard', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await connected(newCluster()), hk!);
  const plain = await connected(newCluster());
  const byPort = new Map<number, string>();
  for (let i = 0; byPort.size < rc.ports.length && i < 1000; i++) {
    const port = c.slots[hashSlot(`nrch:${i}`)]?.master.port;
    if (port !== undefined && !byPort.has(port)) byPort.set(port, `nrch:${i}`);
  }
  const keys = [...byPort.values()];
  assert.is(keys.length, 3, 'a hash on every master');
  const reads: Array<[string, (c: Cluster, key: string) => Promise<unknown>]> = [
    ['hGetAll', (cl, k) => cl.hGetAll(k)],
    ['hGet', (cl, k) => cl.hGet(k, 'a')],
    ['hmGet', (cl, k) => cl.hmGet(k, ['b', 'none', 'a'])],
  ];
  for (const key of keys) {
    await plain.hSet(key, { b: `${key}.b`, a: `${key}.a` });
    await promoteInProcess(e2e.hub, 'shop', key, [hk!]);
  }
  await waitFor('every hash read served locally', async () => {
    const before = await hashReadsAtRedis();
    for (const key of keys) for (const [, read] of reads) await read(c, key);
    return (await hashReadsAtRedis()) === before;
  });
  const before = await hashReadsAtRedis();
  const local = [];
  for (let i = 0; i < 5; i++)
    for (const key of keys) for (const [, read] of reads) local.push(form(await read(c, key)));
  assert.is(await hashReadsAtRedis(), before, '45 hot hash reads, none at any master');
  let at = 0;
  for (let i = 0; i < 5; i++)
    for (const key of keys)
      for (const [name, read] of reads) assert.equal(local[at++], form(await read(plain, key)), name);
  for (const key of keys) await plain.hSet(key, 'a', 'outside');
  for (const key of keys)
    await waitFor(`${key}: the outside write is seen`, async () => (await c.hGet(key, 'a')) === 'outside', 2000);
});

test.run();
