/**
 * Sharded counters against a real redis-server: add / take / total / fill, take never below zero
 * (all or nothing by default, partial on request), and fold moving every unit exactly once, also
 * when a fold died midway or two fold at once; scripts go as EVALSHA, as EVAL once a server lacks them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Redis } from 'ioredis';
import { ShardedCounter, type CounterOptions } from './counters.ts';
import { withLiveRedis } from '../live-redis.test-helper.ts';
import type { OwnSend } from './scripts.ts';

let r: Redis;
/** every command the counters sent, name first */
const sent: string[] = [];
const send: OwnSend = (_key, [name, ...args]) => {
  sent.push(String(name));
  return r.call(String(name), ...args);
};
const counter = (key: string, options: CounterOptions) => new ShardedCounter(send, key, options);

withLiveRedis(test, (c) => {
  r = c;
});

async function shardValues(keys: readonly string[]): Promise<number[]> {
  return (await Promise.all(keys.map((k) => r.get(k)))).map((v) => Number(v ?? 0));
}

test('add lands on one shard, total sums base and shards, fill spreads evenly', async () => {
  const c = counter('likes:1', { shards: 4 });
  await r.set('likes:1', 10);
  for (let i = 0; i < 20; i++) await c.add(1);
  await c.add(-5);
  assert.is(await c.total(), 25);
  assert.is(await r.get('likes:1'), '10', 'the base key is left alone');
  const d = counter('stock:fill', { shards: 4 });
  await d.fill(10);
  assert.equal(await shardValues(d.shards), [3, 3, 2, 2]);
  assert.is(await d.total(), 10);
  assert.throws(() => c.add(1.5), /integer/);
  assert.throws(() => counter('k', { shards: 0 }), /shards/);
  assert.throws(() => counter('a}b', { shards: 2 }), /brace/);
});

test('take never goes below zero on any shard: all or nothing, or partial on request', async () => {
  const c = counter('stock:1', { shards: 5 });
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
  const c = counter('stock:race', { shards: 8 });
  await c.fill(100);
  const results = await Promise.all(Array.from({ length: 150 }, () => c.take(1)));
  assert.is(
    results.reduce((a, b) => a + b, 0),
    100,
  );
  assert.is(await c.total(), 0);
});

test('fold moves every unit into the base key exactly once, finishing a crashed fold', async () => {
  const c = counter('views:1', { shards: 4 });
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

test('scripts go as EVALSHA; after SCRIPT FLUSH one NOSCRIPT, one EVAL, and EVALSHA again', async () => {
  const c = counter('stock:sha', { shards: 1 }); // one shard: every take is one script call
  await c.fill(4);
  await c.take(1); // loads TAKE on this server if an earlier test has not
  sent.length = 0;
  assert.is(await c.take(1), 1);
  assert.equal(sent, ['EVALSHA'], 'a loaded script is sent by its SHA-1');
  await r.script('FLUSH');
  sent.length = 0;
  assert.is(await c.take(1), 1);
  assert.equal(sent, ['EVALSHA', 'EVAL'], 'NOSCRIPT: sent once in full');
  sent.length = 0;
  assert.is(await c.take(1), 1);
  assert.equal(sent, ['EVALSHA']);
  assert.is(await c.total(), 0, 'four takes of four units');
});

test.run();
