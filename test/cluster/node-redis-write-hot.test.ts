/**
 * The write-hot modes of the node-redis adapter against a real 3-master Redis Cluster
 * (test/support/redis-cluster.ts), a real redis-server and a real hub, keys made hot by their
 * writes (no promotion by hand):
 * - sharded INCRs of a `createCluster(...)` land on several masters, GET sums them, and the
 *   demotion folds them back into the key (both instances fold at once: the total is exact);
 * - the explicit counter on node-redis: two folds at once apply a transfer record once; takes
 *   never go below zero or oversell;
 * - coalesced increments: merged, and none lost when the client or cluster closes;
 * - a client and a pool route the same way; commands in `multi()` go to the key as they are.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient, createClientPool, createCluster, RESP_TYPES } from 'redis';
import type { HotKeyClient } from '@hotkey/sdk';
import { counter, flushWrites, hotKeyStats, hashSlot, shardNames, withHotKeys } from '@hotkey/sdk/node-redis';
import { hubInProcess } from '../support/e2e.ts';
import { RedisCluster } from '../support/redis-cluster.ts';
import { RedisServer } from '../support/redis-server.ts';
import { connectNoted, destroyAll } from '../support/node-redis.ts';
import { delay, waitFor } from '../support/wait.ts';

const SHARDS = 6;
const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: {
        rules: [
          {
            match: 'nrcnt:*',
            threshold: 60,
            kind: 'write',
            shards: SHARDS,
            cache: false,
            windowMs: 500,
            demoteWindows: 1,
          },
          { match: 'nrctr:*', threshold: 60, kind: 'write', coalesce: true, coalesceMs: 1000, cache: false },
        ],
      },
    },
  },
});

const newCluster = () => createCluster({ rootNodes: rc.nodes.map((n) => ({ socket: n })) });
type Cluster = ReturnType<typeof newCluster>;
let rc: RedisCluster;
let server: RedisServer;
const opened: Array<{ destroy(): void }> = [];
/** an unwrapped cluster client, to read what Redis holds */
let plain: Cluster;

async function cluster(): Promise<Cluster> {
  return connectNoted(newCluster(), opened);
}

function client() {
  return connectNoted(createClient({ socket: { host: '127.0.0.1', port: server.port } }), opened);
}

test.before(async () => {
  [rc, server] = await Promise.all([RedisCluster.start(), RedisServer.start()]);
  plain = await cluster();
});

test.after(async () => {
  destroyAll(opened);
  await delay(20);
  await rc?.stop();
  await server?.stop();
});

/** INCRs of `key` through `c` until every instance of `hks` has it hot by writes; resolves how many. */
async function writeHot(
  c: { incr(key: string): Promise<unknown> },
  key: string,
  hks: readonly HotKeyClient[],
): Promise<number> {
  let n = 0;
  await waitFor(
    `${key} write-hot`,
    async () => {
      await Promise.all(Array.from({ length: 40 }, () => c.incr(key)));
      n += 40;
      return hks.every((hk) => hk.hotKind(key) === 'write');
    },
    5000,
  );
  return n;
}

/** What `key` and its shards hold at Redis, and the masters (ports) of the shards holding units. */
async function atRedis(key: string): Promise<{ sum: number; masters: Set<number>; leftovers: number }> {
  const names = shardNames(key, SHARDS);
  let sum = Number((await plain.get(key)) ?? 0);
  const masters = new Set<number>();
  let leftovers = 0;
  for (const name of names) {
    const v = Number((await plain.get(name)) ?? 0);
    sum += v;
    if (v !== 0) masters.add(plain.slots[hashSlot(name)]!.master.port);
    leftovers += (await plain.exists(name)) + (await plain.exists(`${name}:hk:xfer`));
  }
  return { sum, masters, leftovers };
}

test('sharded INCRs of two cluster instances land on several masters, GET sums them, the demotion folds them once', async () => {
  const key = 'nrcnt:stock';
  const hks = await e2e.sdks(2, () => ({ flushIntervalMs: 20 }));
  const [a, b] = [withHotKeys(await cluster(), hks[0]!), withHotKeys(await cluster(), hks[1]!)];
  await plain.set(key, 1000);
  let expected = 1000 + (await writeHot(a, key, hks)) + (await writeHot(b, key, hks));
  await waitFor('both sharded', () => hotKeyStats(a).writeHot.sharded === 1 && hotKeyStats(b).writeHot.sharded === 1);
  for (let round = 0; round < 6; round++) {
    await Promise.all([
      ...Array.from({ length: 40 }, () => a.incr(key)),
      ...Array.from({ length: 20 }, () => b.incrBy(key, 3)),
      b.decr(key),
    ]);
    expected += 40 + 60 - 1;
    assert.is(Number(await a.get(key)), expected, `round ${round}: GET through a sums key and shards`);
  }
  assert.is(Number(await b.get(key)), expected, 'and through b');
  const now = await atRedis(key);
  assert.is(now.sum, expected, 'Redis holds every increment once');
  assert.ok(now.masters.size >= 2, `shards with units on ${now.masters.size} masters`);
  assert.ok(Number(await plain.get(key)) < expected, 'the key alone is not the total while sharded');
  assert.ok(hotKeyStats(a).writeHot.shardedWrites > 0 && hotKeyStats(a).writeHot.shardedReads > 0);
  // cool down: demoted on both, each instance folds (at once): every unit back in the key, once
  await waitFor('demoted on both', () => hks.every((hk) => hk.hotKind(key) === undefined), 10_000);
  await waitFor('folded', async () => (await atRedis(key)).leftovers === 0, 10_000);
  assert.is(Number(await plain.get(key)), expected, 'the key holds the total, nothing lost or doubled');
  assert.is(Number(await a.get(key)), expected);
  assert.ok(hotKeyStats(a).writeHot.folds >= 1 && hotKeyStats(b).writeHot.folds >= 1, 'both folded');
  assert.is(hotKeyStats(a).writeHot.foldErrors + hotKeyStats(b).writeHot.foldErrors, 0);
});

test('commands in multi() and execAsPipeline() go to the key as they are; GET still sums', async () => {
  const key = 'nrcnt:multi';
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await cluster(), hk!);
  let expected = await writeHot(c, key, [hk!]);
  await waitFor('sharded', () => hotKeyStats(c).writeHot.sharded === 1);
  const baseBefore = Number(await plain.get(key));
  await c.multi().incrBy(key, 7).exec();
  await c.multi().incrBy(key, 5).execAsPipeline();
  expected += 12;
  assert.is(Number(await plain.get(key)), baseBefore + 12, 'the batch wrote the key itself');
  for (let i = 0; i < 20; i++) await c.incr(key);
  expected += 20;
  assert.is(Number(await c.get(key)), expected);
});

test('the explicit counter on a node-redis cluster: two folds at once apply a crashed fold once; takes never oversell', async () => {
  const [hk] = await e2e.sdks(1);
  const wrapped = withHotKeys(await cluster(), hk!);
  const other = await cluster(); // unwrapped: counter() takes both
  const x = counter(wrapped, 'nrstock:{9}', { shards: 8 });
  const y = counter(other, 'nrstock:{9}', { shards: 8 });
  assert.is(new Set(x.shards.map((s) => plain.slots[hashSlot(s)]!.master.port)).size, 3, 'shards on all 3 masters');
  await x.fill(400);
  await y.add(5);
  // a fold that died after moving shard 0 out, before applying it: its record stays beside the shard
  const v0 = Number((await plain.get(x.shards[0]!)) ?? 0);
  await plain.del(x.shards[0]!);
  await plain.hSet(`${x.shards[0]}:hk:xfer`, 'crashed-fold', String(v0));
  await Promise.all([x.fold(), y.fold()]);
  assert.is(await plain.get(x.key), '405', 'every unit in the key once');
  assert.is((await atRedisShards(x.shards)).filter((v) => v !== 0).length, 0, 'shards empty');
  await x.fill(300);
  await plain.set(x.key, 0);
  const taken = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? x : y).take(1 + (i % 3))));
  const sold = taken.reduce((s, t) => s + t, 0);
  assert.ok(sold <= 300, `sold ${sold} of 300`);
  assert.is(await x.total(), 300 - sold, 'nothing lost or doubled');
  for (const v of await atRedisShards([...x.shards, x.key])) assert.ok(v >= 0, `a key went to ${v}`);
  assert.throws(() => counter({} as never, 'k', { shards: 2 }), /node-redis/);
});

async function atRedisShards(names: readonly string[]): Promise<number[]> {
  return Promise.all(names.map(async (n) => Number((await plain.get(n)) ?? 0)));
}

test('coalesced INCRs of a cluster: merged, and none lost when the cluster closes', async () => {
  const key = 'nrctr:{c}';
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const c = withHotKeys(await cluster(), hk!);
  await writeHot(c, key, [hk!]);
  const base = Number(await plain.get(key));
  const { coalescedFlushes: flushes, coalescedIncrements: merged } = hotKeyStats(c).writeHot;
  const pending = Array.from({ length: 50 }, () => c.incr(key));
  // a cluster command reaches its node after a slot lookup (one sent after close() is refused,
  // as node-redis refuses it): close once all 50 wait in the batch, before its 1 s window ends
  await waitFor('50 in the batch', () => hotKeyStats(c).writeHot.coalescedIncrements === merged + 50, 800);
  await c.close();
  const replies = (await Promise.all(pending)) as number[];
  assert.is(Number(await plain.get(key)), base + 50, 'every increment landed once');
  assert.equal(
    [...replies].sort((p, q) => p - q),
    Array.from({ length: 50 }, (_, i) => base + 1 + i),
    'one serial history',
  );
  assert.is(hotKeyStats(c).writeHot.coalescedFlushes, flushes + 1, 'one INCRBY');
});

test('a client routes the same way: sharded GET sums, INCRBY in a raw MULTI goes to the key, coalesced increments flushed by flushWrites and close()', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  // RESP3: the core reads its replies the same way
  const c = withHotKeys(
    await connectNoted(createClient({ RESP: 3, socket: { host: '127.0.0.1', port: server.port } }), opened),
    hk!,
  );
  const raw = await client();
  let expected = await writeHot(c, 'nrcnt:one', [hk!]);
  await waitFor('sharded', () => hotKeyStats(c).writeHot.sharded === 1);
  await Promise.all(Array.from({ length: 50 }, () => c.incrBy('nrcnt:one', 2)));
  expected += 100;
  assert.is(Number(await c.get('nrcnt:one')), expected);
  assert.ok(Number(await raw.get('nrcnt:one')) < expected, 'the units are in the shards');
  const bytes = await c.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }).get('nrcnt:one');
  assert.ok(
    Buffer.isBuffer(bytes) && Number(String(bytes)) === expected,
    'the sum, mapped to a Buffer as node-redis maps it',
  );
  assert.type(await c.withTypeMapping({ [RESP_TYPES.NUMBER]: String }).incr('nrcnt:one'), 'string');
  expected += 1;
  // a raw MULTI's commands go to the key as they are, queued
  const keyBefore = Number(await raw.get('nrcnt:one'));
  await c.sendCommand(['MULTI']);
  assert.is(await c.sendCommand(['INCRBY', 'nrcnt:one', '4']), 'QUEUED');
  assert.equal(await c.sendCommand(['EXEC']), [keyBefore + 4]);
  expected += 4;
  assert.is(Number(await c.get('nrcnt:one')), expected);
  await writeHot(c, 'nrctr:one', [hk!]);
  const base = Number(await raw.get('nrctr:one'));
  const first = Array.from({ length: 10 }, () => c.incr('nrctr:one'));
  await flushWrites(c);
  await Promise.all(first);
  assert.is(Number(await raw.get('nrctr:one')), base + 10, 'flushWrites sent them');
  const last = Array.from({ length: 10 }, () => c.incr('nrctr:one'));
  await c.close();
  await Promise.all(last);
  assert.is(Number(await raw.get('nrctr:one')), base + 20, 'close() sent them first');
  assert.throws(() => hotKeyStats(raw), /not wrapped with withHotKeys/);
  assert.throws(() => flushWrites(raw), /not wrapped with withHotKeys/);
});

test('a pool routes the same way: sharded INCRs, GET sums; close() sends merged increments first', async () => {
  const [hk] = await e2e.sdks(1, () => ({ flushIntervalMs: 20 }));
  const p = withHotKeys(
    await connectNoted(createClientPool({ socket: { host: '127.0.0.1', port: server.port } }), opened),
    hk!,
  );
  assert.is(hotKeyStats(p).writeHot.sharded, 0, 'nothing before its first command');
  let expected = await writeHot(p, 'nrcnt:pool', [hk!]);
  await waitFor('sharded', () => hotKeyStats(p).writeHot.sharded === 1);
  await Promise.all(Array.from({ length: 30 }, () => p.incr('nrcnt:pool')));
  expected += 30;
  assert.is(Number(await p.get('nrcnt:pool')), expected);
  assert.ok(hotKeyStats(p).writeHot.shardedWrites >= 30);
  await writeHot(p, 'nrctr:pool', [hk!]);
  const base = Number(await p.get('nrctr:pool'));
  const merged = hotKeyStats(p).writeHot.coalescedIncrements;
  const pending = Array.from({ length: 10 }, () => p.incr('nrctr:pool'));
  await waitFor('10 in the batch', () => hotKeyStats(p).writeHot.coalescedIncrements === merged + 10, 800);
  await p.close();
  await Promise.all(pending);
  const raw = await client();
  assert.is(Number(await raw.get('nrctr:pool')), base + 10, 'close() sent them first');
});

test.run();
