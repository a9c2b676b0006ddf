/**
 * `withHotKeys` on a `Redis.Cluster`, against a real 3-master Redis Cluster started here
 * (`redis-server --cluster-enabled yes` ×3 + `redis-cli --cluster create`) and a real hub:
 * the wrapped cluster is the cluster (instanceof, events, duplicate), hot reads on any slot are
 * local, writes (direct, pipeline, multi) invalidate, and a plain cluster client sees the same
 * results for everything else.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Cluster, Redis } from 'ioredis';
import { HotKeyClient } from '@hotkey/sdk';
import { withHotKeys } from '@hotkey/sdk/ioredis';
import { clientsOf, RedisCluster } from '../support/redis-cluster.ts';
import { promotingHub, type PromotingHub } from '../support/promoting-hub.ts';

let redisCluster: RedisCluster;
let fixture: PromotingHub;
let hk: HotKeyClient;
const opened: (Cluster | Redis)[] = [];

const { cluster } = clientsOf(() => redisCluster, opened);

const promote = (key: string): Promise<void> => fixture.promote(key);

test.before(async () => {
  redisCluster = await RedisCluster.start();
  fixture = await promotingHub(undefined, 'hotkey-ioredis-cluster-');
  hk = fixture.hk;
});

test.after(async () => {
  for (const c of opened) c.disconnect();
  await fixture?.close();
  await redisCluster?.stop();
});

test('a wrapped Cluster is the Cluster: instanceof, events, chaining, duplicate', async () => {
  const plain = cluster();
  const wrapped: Cluster = withHotKeys(cluster(), hk);
  await Promise.all([plain.set('x', '1'), wrapped.set('x', '1')]);
  assert.ok(wrapped instanceof Cluster);
  assert.is(wrapped.constructor, plain.constructor);
  assert.is(String(wrapped), String(plain));
  assert.equal(Object.keys(wrapped).sort(), Object.keys(plain).sort());
  assert.ok(wrapped.on('error', () => {}) === wrapped);
  assert.is(wrapped.status, plain.status);
  const dup = wrapped.duplicate();
  opened.push(dup);
  assert.ok(dup instanceof Cluster);
  assert.is(await dup.get('x'), '1');
  assert.not.ok(wrapped instanceof Redis);
});

test('hot reads on keys of every master are local; writes, pipelines and multi invalidate', async () => {
  const plain = cluster();
  // tracking off: the behind-our-back writes below prove the reads were local (with tracking on,
  // Redis reports them: ioredis-tracking-cluster.test.ts)
  const wrapped = withHotKeys(cluster(), hk, { tracking: false });
  const keys = ['{a}k', '{b}k', '{c}k', '{d}k', '{e}k']; // spread over slots, so over the masters
  for (const key of keys) {
    await plain.set(key, 'v1');
    await promote(key);
    assert.is(await wrapped.get(key), 'v1');
    await plain.set(key, 'behind-our-back');
    assert.is(await wrapped.get(key), 'v1', `${key} served locally`);
    assert.is(await plain.get(key), 'behind-our-back');
  }
  await wrapped.set('{a}k', 'v2');
  assert.is(await wrapped.get('{a}k'), 'v2');
  await wrapped.pipeline().set('{b}k', 'v3').exec();
  assert.is(await wrapped.get('{b}k'), 'v3');
  await wrapped.multi().set('{c}k', 'v4').exec();
  assert.is(await wrapped.get('{c}k'), 'v4');
  await wrapped.del('{d}k');
  assert.is(await wrapped.get('{d}k'), null);
  // MGET answers the hot cached key locally, as GET does (multi-read.ts); the cold one from Redis
  assert.equal(await wrapped.mget('{e}k', '{e}z'), ['v1', null]);
  // everything not served locally answers as the plain cluster client does
  assert.equal(await wrapped.exists('{a}k'), await plain.exists('{a}k'));
});

test.run();
