/**
 * Sharded counters against a real redis-server: add / take / total / fill, take never below zero
 * (all or nothing by default, partial on request), and fold moving every unit exactly once, also
 * when a fold died midway or two fold at once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Redis } from 'ioredis';
import { counter } from './counters.ts';
import { withLiveRedis } from '../redis/live-redis.test-helper.ts';

let r: Redis;

withLiveRedis(test, (c) => {
  r = c;
});

async function shardValues(keys: readonly string[]): Promise<number[]> {
  return (await Promise.all(keys.map((k) => r.get(k)))).map((v) => Number(v ?? 0));
}

test('add lands on one shard, total sums base and shards, fill spreads evenly', async () => {
  const c = counter(r, 'likes:1', { shards: 4 });
  await r.set('likes:1', 10);
  for (let i = 0; i < 20; i++) await c.add(1);
  await c.add(-5);
  assert.is(await c.total(), 25);
  assert.is(await r.get('likes:1'), '10', 'the base key is left alone');
  const d = counter(r, 'stock:fill', { shards: 4 });
  await d.fill(10);
  assert.equal(await shardValues(d.shards), [3, 3, 2, 2]);
  assert.is(await d.total(), 10);
  assert.throws(() => c.add(1.5), /integer/);
  assert.throws(() => counter(r, 'k', { shards: 0 }), /shards/);
  assert.throws(() => counter(r, 'a}b', { shards: 2 }), /brace/);
});

test('take never goes below zero on any shard: all or nothing, or partial on request', async () => {
  const c = counter(r, 'stock:1', { shards: 5 });
  await c.fill(7); // 2 2 1 1 1
  await r.set('stock:1', 1); // the base key counts too
  assert.is(await c.take(3), 3);
  assert.is(await c.total(), 5);
  assert.is(await c.take(6), 0, 'short: nothing taken');
  assert.is(await c.total(), 5, 'what a short take had gathered went back');
  assert.is(await c.take(6, { partial: true }), 5);
  assert.is(await c.total(), 0);
  for (const v of await shardValues([...c.shards, c.key])) assert.ok(v >= 0, `a key went to ${v}`);
  assert.is(await c.take(1), 0);
  assert.ok(c.stats.short >= 2 && c.stats.moves > 0);
  const bad = await c.take(0).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.instance(bad, TypeError);
});

test('concurrent takes never sell more than the stock', async () => {
  const c = counter(r, 'stock:race', { shards: 8 });
  await c.fill(100);
  const results = await Promise.all(Array.from({ length: 150 }, () => c.take(1)));
  assert.is(
    results.reduce((a, b) => a + b, 0),
    100,
  );
  assert.is(await c.total(), 0);
});

test('fold moves every unit into the base key exactly once, finishing a crashed fold', async () => {
  const c = counter(r, 'views:1', { shards: 4 });
  await r.set('views:1', 100);
  for (let i = 0; i < 40; i++) await c.add(1);
  // a fold that died after moving shard 0 out, before applying it: its record stays beside the shard
  const v0 = Number((await r.get(c.shards[0]!)) ?? 0);
  await r.del(c.shards[0]!);
  await r.hset(`${c.shards[0]}:hk:xfer`, 'crashed-fold', v0);
  assert.is(await c.total(), 140 - v0, 'units in a transfer record are not visible to total()');
  await Promise.all([c.fold(), c.fold()]); // two folders at once
  assert.is(await r.get('views:1'), '140');
  assert.equal(await shardValues(c.shards), [0, 0, 0, 0]);
  assert.is(await r.exists(...c.shards.map((s) => `${s}:hk:xfer`)), 0, 'no record left');
  await c.fold();
  assert.is(await r.get('views:1'), '140', 'folding again changes nothing');
});

test.run();
