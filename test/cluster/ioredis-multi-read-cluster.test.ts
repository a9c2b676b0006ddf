/**
 * Multi-key reads through a wrapped `Redis.Cluster` on a real 3-master Redis Cluster
 * (sdk/src/ioredis/multi-read.ts): an MGET whose keys share a slot answers its hot cached keys
 * locally and sends the others in one MGET; one whose keys span slots is rejected exactly as a
 * plain Cluster client's is, even when every key is hot and cached; pipelines agree with plain.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Cluster, Redis } from 'ioredis';
import { hashSlot } from '@hotkey/sdk/ioredis';
import { hubInProcess } from '../support/e2e.ts';
import { clientsOf, RedisCluster } from '../support/redis-cluster.ts';
import { promoteOn, warm, wrappedReaders, type Reader } from '../support/staleness.ts';
import { waitFor } from '../support/wait.ts';

const e2e = hubInProcess(test, {
  config: {
    apps: {
      shop: { rules: [{ match: '*', threshold: 1_000_000, windowMs: 600_000, hotMs: 600_000, cacheTtlMs: 600_000 }] },
    },
  },
});
let redisCluster: RedisCluster;
const opened: (Cluster | Redis)[] = [];
const { cluster } = clientsOf(() => redisCluster, opened);

test.before(async () => {
  redisCluster = await RedisCluster.start();
});
test.after(async () => {
  for (const c of opened) c.disconnect();
  await redisCluster?.stop();
});

async function ready(c: Cluster): Promise<Cluster> {
  await waitFor('cluster client ready', () => c.status === 'ready', 10_000);
  return c;
}

/** calls of `command` every master executed so far */
async function calls(c: Cluster, command: string): Promise<number> {
  let n = 0;
  for (const node of c.nodes('master')) {
    const info = await node.info('commandstats');
    n += Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  }
  return n;
}

async function hotAndCached(r: Reader<Cluster>, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await promoteOn(e2e, key, [r]);
    await warm(r, key);
    // and under a live tracking session of its master: a GET of it sends nothing
    await waitFor(
      `${key} served locally`,
      async () => {
        const gets = await calls(r.redis, 'get');
        await r.redis.get(key);
        return (await calls(r.redis, 'get')) === gets;
      },
      5000,
      5,
    );
  }
}

test('an MGET across slots is rejected as a plain client’s is, hot keys or not; one slot is served locally', async () => {
  const plain = await ready(cluster());
  const [r] = await wrappedReaders(e2e, 1, cluster);
  await ready(r!.redis);
  assert.is.not(hashSlot('x:a'), hashSlot('x:b'));
  await plain.set('x:a', 'A');
  await plain.set('x:b', 'B');
  await plain.mset({ '{t}a': '1', '{t}b': '2', '{t}c': '3' });
  await hotAndCached(r!, ['x:a', 'x:b', '{t}a', '{t}b']);
  const reason = (p: Promise<unknown>) =>
    p.then(
      (v) => `resolved ${JSON.stringify(v)}`,
      (e: Error) => e.message,
    );
  const plainReason = await reason(plain.mget('x:a', 'x:b'));
  assert.match(plainReason, /CROSSSLOT/);
  assert.is(await reason(r!.redis.mget('x:a', 'x:b')), plainReason);
  assert.is(await reason(r!.redis.mgetBuffer('x:a', 'x:b')), await reason(plain.mgetBuffer('x:a', 'x:b')));
  // one slot: the hot cached keys locally, the cold one in one MGET
  const keys = ['{t}c', '{t}a', '{t}none', '{t}b'];
  const mgets = await calls(plain, 'mget');
  const gets = await calls(plain, 'get');
  assert.equal(await r!.redis.mget(keys), await plain.mget(keys));
  assert.equal(await r!.redis.mget('{t}a', '{t}b'), ['1', '2']);
  assert.is((await calls(plain, 'mget')) - mgets, 2, 'the plain MGET and the wrapped one of the misses');
  assert.is((await calls(plain, 'get')) - gets, 0);
  const pipeline = (c: Cluster) => c.pipeline().get('{t}a').get('{t}c').mget('{t}b', '{t}c').exec();
  assert.equal(await pipeline(r!.redis), await pipeline(plain));
});

test.run();
