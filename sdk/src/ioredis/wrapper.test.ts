import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { HotKeyClient } from '../client/client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { withHotKeys } from '../ioredis.ts';
import { waitFor } from '../../../test/support/wait.ts';
import type { RedisServer } from '../../../test/support/redis-server.ts';
import { type AckingPeer, startAckingPeer } from '../redis/acking-peer.test-helper.ts';

let server: RedisServer;
let hk: HotKeyClient;
let raw: Redis;
let r: Redis;
let fx: AckingPeer;

test.before(async () => {
  fx = await startAckingPeer();
  ({ server, hk } = fx);
  raw = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await raw.connect();
  // tracking off: these tests write behind the wrapper's back to prove a read was answered
  // locally (with tracking on, Redis tells the wrapper: test/e2e/ioredis-tracking.test.ts)
  r = withHotKeys(new Redis(server.url, { maxRetriesPerRequest: 1 }), hk, { tracking: false });
});

test.after(async () => {
  raw?.disconnect();
  r?.disconnect();
  await fx?.close();
});

test('reads of a hot key come from the local cache; writes invalidate', async () => {
  await raw.set('s', 'v1');
  assert.is(await r.get('s'), 'v1');
  await fx.promote('s');
  assert.is(await r.get('s'), 'v1'); // loads and caches
  await raw.set('s', 'behind-our-back');
  assert.is(await r.get('s'), 'v1', 'served locally');
  await r.set('s', 'v2'); // resolves after the cluster-wide ack
  assert.is(await r.get('s'), 'v2');
  assert.ok(hk.stats().hits + hk.stats().coalesced >= 1); // coalesced: the load may still wait for its PTTL
});

test('hget on a hot hash loads it once for every field; hset and del invalidate', async () => {
  await raw.hset('h', { a: '1', b: '2' });
  assert.is(await r.hget('h', 'a'), '1');
  await fx.promote('h');
  const loadsBefore = hk.stats().loads;
  assert.is(await r.hget('h', 'a'), '1');
  assert.is(await r.hget('h', 'b'), '2');
  assert.is(await r.hget('h', 'zz'), null);
  assert.equal(await r.hgetall('h'), { a: '1', b: '2' });
  assert.is(hk.stats().loads - loadsBefore, 1);
  await r.hset('h', 'a', '10');
  assert.is(await r.hget('h', 'a'), '10');
  await r.del('h');
  assert.is(await r.hget('h', 'a'), null);
  assert.equal(await r.hgetall('h'), {});
});

test('every command is counted once, also when queued before the connection is ready', async () => {
  const lazy = new Redis(server.url, { lazyConnect: true });
  const r = withHotKeys(lazy, hk);
  // hot keys go through hk.get (counted in its stats); cold ones through hk.track
  for (const key of ['q1', 'q2', 'q3']) await fx.promote(key);
  const before = hk.stats().misses + hk.stats().hits + hk.stats().loads + hk.stats().coalesced;
  try {
    assert.is(lazy.status, 'wait');
    // the first command connects; all three wait in the offline queue and are replayed once ready
    const got = await Promise.all([r.get('q1'), r.get('q2'), r.get('q3')]);
    assert.equal(got, [null, null, null]);
    const after = hk.stats().misses + hk.stats().hits + hk.stats().loads + hk.stats().coalesced;
    assert.is(after - before, 3);
  } finally {
    lazy.disconnect();
  }
});

test('multi-key writes invalidate every key; other commands pass through', async () => {
  await fx.promote('m1');
  await fx.promote('m2');
  await raw.mset('m1', 'a', 'm2', 'b');
  assert.is(await r.get('m1'), 'a');
  assert.is(await r.get('m2'), 'b');
  await r.mset('m1', 'A', 'm2', 'B');
  assert.is(await r.get('m1'), 'A');
  assert.is(await r.get('m2'), 'B');
  assert.is(await r.exists('m1'), 1);
  assert.is(await r.ping(), 'PONG');
});

test('a hot value never outlives its TTL in Redis (PTTL read with the value)', async () => {
  await fx.promote('ttl:s');
  await fx.promote('ttl:h');
  await raw.set('ttl:s', 'v', 'PX', 300);
  await raw.hset('ttl:h', { f: '1' });
  await raw.pexpire('ttl:h', 300);
  assert.is(await r.get('ttl:s'), 'v'); // loads, caches with expiresAt ≤ 300 ms
  assert.is(await r.hget('ttl:h', 'f'), '1');
  const hits = hk.stats().hits;
  assert.is(await r.get('ttl:s'), 'v');
  assert.is(await r.hget('ttl:h', 'f'), '1');
  assert.is(hk.stats().hits - hits, 2, 'served locally while Redis still has them');
  await waitFor('Redis to expire ttl:s and ttl:h', async () => (await raw.exists('ttl:s', 'ttl:h')) === 0, 3000);
  assert.is(await raw.exists('ttl:s', 'ttl:h'), 0);
  assert.is(await r.get('ttl:s'), null, 'the rule keeps values 60 s; Redis expired this one');
  assert.is(await r.hget('ttl:h', 'f'), null);
  assert.equal(await r.hgetall('ttl:h'), {});
});

test('with enableAutoPipelining, hot GETs are still local and writes still invalidate', async () => {
  const auto = withHotKeys(new Redis(server.url, { enableAutoPipelining: true, maxRetriesPerRequest: 1 }), hk, {
    tracking: false,
  });
  try {
    await fx.promote('auto:1');
    await auto.set('auto:1', 'a');
    assert.equal(await Promise.all([auto.get('auto:1'), auto.get('auto:1'), auto.get('auto:0')]), ['a', 'a', null]);
    await raw.set('auto:1', 'behind-our-back');
    assert.is(await auto.get('auto:1'), 'a', 'served locally');
    await auto.set('auto:1', 'b');
    assert.is(await auto.get('auto:1'), 'b');
  } finally {
    auto.disconnect();
  }
});

test('withHotKeys returns the client itself; twice with one hk is a no-op, with another a TypeError', async () => {
  const c = new Redis(server.url, { lazyConnect: true });
  const other = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1' });
  try {
    assert.is(withHotKeys(c, hk), c);
    assert.is(withHotKeys(c, hk), c);
    assert.throws(() => withHotKeys(c, other), TypeError);
    assert.throws(() => withHotKeys({} as Redis, hk), TypeError);
  } finally {
    c.disconnect();
    await other.close();
  }
});

test('a write whose invalidation no hub acknowledges rejects HK_ERR_UNACKED, after it was held its deadline', async () => {
  const lonely = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1', invalidateTimeoutMs: 300 });
  const errors: string[] = [];
  const r = withHotKeys(raw, lonely, { onInvalidateError: (_e, key) => errors.push(key) });
  const t0 = performance.now();
  const err = (await r.set('w', '1').catch((e: unknown) => e)) as HotKeyError;
  assert.instance(err, HotKeyError);
  assert.is(err.code, ErrorCode.Unacked);
  assert.is((err.cause as HotKeyError).code, ErrorCode.Timeout, 'held until its deadline, not failed at once');
  assert.ok(performance.now() - t0 >= 250, 'held, not rejected at once');
  assert.is(await raw.get('w'), '1', 'the write itself was applied');
  assert.equal(errors, ['w']);
  await lonely.close();
  // a closed hk makes the wrapped client a plain one: the write resolves
  assert.is(await r.set('w', '2'), 'OK');
});

test.run();
