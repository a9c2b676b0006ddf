/**
 * Writes from anywhere on a real 3-master Redis Cluster: wrapped `Redis.Cluster` clients on three
 * instances cache hot keys living on every master; writes by a plain Cluster client and by
 * `redis-cli -c` drop them (per-node tracking connections); a killed tracking connection of one
 * node stops the serving of that node's values only; FLUSHDB on one master drops that node's
 * values; tracking state on each node holds its hot keys only.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { clientsOf, RedisCluster } from '../support/redis-cluster.ts';
import {
  measureStaleness,
  promoteOn,
  readsNew,
  summary,
  warm,
  wrappedReaders,
  type Reader,
} from '../support/staleness.ts';
import { delay, waitFor, within } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});

let rc: RedisCluster;
let plain: Cluster;
const opened: (Cluster | Redis)[] = [];
/** one hot key per master: port → key */
const keyOn = new Map<number, string>();

const { cluster, node } = clientsOf(() => rc, opened);

const readers = (n: number): Promise<Reader<Cluster>[]> => wrappedReaders(e2e, n, cluster);
const promote = (key: string, on: readonly Reader[]): Promise<void> => promoteOn(e2e, key, on);

async function named(port: number, name: string): Promise<{ id: string; line: string }[]> {
  const list = (await node(port).client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => ({ id: /(?:^|\s)id=(\d+)/.exec(line)![1]!, line }));
}

test.before(async () => {
  rc = await RedisCluster.start();
  plain = cluster();
  await plain.set('warm-up', '1');
  // a key on each master, by asking the cluster which node serves it
  for (const tag of 'abcdefghijklmnop') {
    const key = `{${tag}}item`;
    const slot = Number(await plain.cluster('KEYSLOT', key));
    const owner = plain.slots[slot]?.[0];
    const port = Number(owner?.split(':')[1]);
    if (!keyOn.has(port)) keyOn.set(port, key);
  }
  assert.is(keyOn.size, 3, 'a key on every master');
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  await delay(20);
  await rc?.stop();
});

test('outside writes (plain Cluster client) drop hot values of every master on every instance: 200 writes', async () => {
  const group = await readers(3);
  const keys = [...keyOn.values()];
  for (const key of keys) {
    await plain.set(key, 'v0');
    await promote(key, group);
  }
  const ms = await measureStaleness({
    readers: group,
    keys,
    writes: 200,
    write: (key, value) => plain.set(key, value),
  });
  const s = summary(ms);
  console.log(
    `# cluster (3 masters), plain Cluster writer → 3 instances: staleness p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, max ${s.max.toFixed(2)} ms over ${s.n} writes`,
  );
  assert.is(s.n, 200);
  assert.ok(s.max < 2000, 'every write dropped within 2 s');
  // tracking state: each master tracks its own hot key (and no cold one)
  for (const port of keyOn.keys()) {
    for (let i = 0; i < 50; i++) await group[0]!.redis.get(`cold:${i}`);
    const info = await node(port).info('stats');
    const tracked = Number(/^tracking_total_keys:(\d+)/m.exec(info)?.[1]);
    assert.ok(tracked <= 1, `node ${port} tracks ${tracked} keys`);
  }
});

test('redis-cli -c writes on any master are seen', async () => {
  const group = await readers(2);
  for (const [port, key] of keyOn) {
    await promote(key, group);
    for (let i = 1; i <= 3; i++) {
      for (const r of group) await warm(r, key);
      const cli = spawn('redis-cli', ['-c', '-p', String(port), 'set', key, `cli-${port}-${i}`], { stdio: 'ignore' });
      await within('redis-cli to exit', once(cli, 'exit'), 5000);
      for (const r of group) await readsNew(r, key, `cli-${port}-${i}`, 2000);
    }
  }
});

test("a killed tracking connection of one master: its values are not served until it is back; the other masters' still are", async () => {
  for (const c of opened.splice(1)) c.disconnect();
  await e2e.closeClients();
  const [victimPort, victimKey] = [...keyOn][0]!;
  await waitFor(
    'earlier tracking connections gone',
    async () => (await named(victimPort, 'hotkey-invalidations')).length === 0,
    5000,
  );
  const [r] = await readers(1);
  for (const key of keyOn.values()) {
    await plain.set(key, 'v0');
    await promote(key, [r!]);
    await warm(r!, key);
  }
  const [victim] = await named(victimPort, 'hotkey-invalidations');
  assert.ok(victim, 'the victim node has our invalidation subscriber');
  const admin = node(victimPort);
  const connected = Number(/^connected_clients:(\d+)/m.exec(await admin.info('clients'))?.[1]);
  await admin.config('SET', 'maxclients', String(connected - 1)); // it stays down while we look
  try {
    await admin.client('KILL', 'ID', victim.id);
    for (let i = 1; i <= 10; i++) {
      await plain.set(victimKey, `down-${i}`);
      assert.is(await r!.redis.get(victimKey), `down-${i}`, `read ${i} of the victim node's key`);
      await delay(10);
    }
    for (const key of [...keyOn.values()].slice(1)) await warm(r!, key, 1000); // still local
  } finally {
    await admin.config('SET', 'maxclients', '10000');
  }
  await waitFor(
    'the subscriber back',
    async () => (await named(victimPort, 'hotkey-invalidations')).length === 1,
    5000,
  );
  await warm(r!, victimKey, 5000);
  await plain.set(victimKey, 'after');
  await readsNew(r!, victimKey, 'after', 2000);
});

test("FLUSHDB on one master from outside drops that node's values on every instance", async () => {
  const group = await readers(2);
  for (const key of keyOn.values()) {
    await plain.set(key, 'v');
    await promote(key, group);
    for (const r of group) await warm(r, key);
  }
  const [port, key] = [...keyOn][1]!;
  await node(port).flushdb();
  for (const r of group) {
    await waitFor(`${key} gone`, async () => (await r.redis.get(key)) === null, 2000, 1);
    for (const other of keyOn.values()) if (other !== key) assert.is(await r.redis.get(other), 'v');
  }
});

test('FLUSHDB through a wrapped Cluster (one master, ioredis picks it): no instance serves a flushed value after it resolves', async () => {
  const group = await readers(2);
  for (const key of keyOn.values()) {
    await plain.set(key, 'v');
    await promote(key, group);
    for (const r of group) await warm(r, key);
  }
  assert.is(await group[0]!.redis.flushdb(), 'OK');
  for (const r of group) {
    for (const key of keyOn.values()) assert.is(await r.redis.get(key), await plain.get(key), `${key} as Redis has it`);
  }
});

test.run();
