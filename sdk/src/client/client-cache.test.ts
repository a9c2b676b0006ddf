/**
 * HotKeyClient's local cache: hits and shared loads, invalidations, drops, expiry and the stale
 * bound, sequence gaps, a reconnect.
 */
import { RULE_DEFAULTS } from '../rules.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '../wire/protocol.ts';
import { delay, waitFor } from '../../../test/support/wait.ts';
import { closeAll, deferred } from '../../../test/support/sdk-client.ts';
import { P, setup, teardown, promoted } from '../../../test/support/client-fixture.ts';

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

test('promote: hits come from the cache; concurrent loads share one loader call', async () => {
  const s = await setup();
  let calls = 0;
  const gate = deferred<string>();
  const loader = () => {
    calls++;
    return gate.promise;
  };
  assert.is(await s.hk.get('item:1', () => 'cold'), 'cold'); // not hot: loader every time
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'item:1', ...P });
  await waitFor('hk.isHot(item:1)', () => s.hk.isHot('item:1'));
  const a = s.hk.get('item:1', loader);
  const b = s.hk.get('item:1', loader);
  gate.resolve('v1');
  assert.equal(await Promise.all([a, b]), ['v1', 'v1']);
  assert.is(calls, 1);
  assert.is(await s.hk.get('item:1', loader), 'v1');
  assert.is(calls, 1);
  const st = s.hk.stats();
  assert.is(st.hits, 1);
  assert.is(st.loads, 1);
  assert.is(st.coalesced, 1);
  assert.is(st.misses, 1);
  assert.is(st.cacheSize, 1);
  await teardown(s);
});

test('__proto__ and constructor are ordinary hot keys', async () => {
  const s = await setup();
  for (const [i, key] of ['__proto__', 'constructor'].entries()) {
    s.sock.send({ t: MsgType.Promote, seq: i + 1, key, ...P });
    await waitFor('hk.isHot(key)', () => s.hk.isHot(key));
    assert.is(await s.hk.get(key, () => `v-${key}`), `v-${key}`);
    assert.is(await s.hk.get(key, () => 'reloaded'), `v-${key}`);
  }
  assert.not.ok(s.hk.isHot('toString'));
  assert.is(s.hk.stats().hits, 2);
  await teardown(s);
});

test('loader errors reach the caller and are not cached', async () => {
  const s = await setup();
  await promoted(s);
  const async = await s.hk.get('k', () => Promise.reject(new Error('db down'))).catch((e: Error) => e);
  assert.is((async as Error).message, 'db down');
  const err = await s.hk
    .get('k', () => {
      throw new Error('sync boom');
    })
    .catch((e: Error) => e);
  assert.is((err as Error).message, 'sync boom');
  assert.is(await s.hk.get('k', () => 'ok'), 'ok');
  assert.is(s.hk.stats().loadErrors, 2);
  await teardown(s);
});

test('invalidation during a load: the loaded value is not cached; Applied is sent', async () => {
  const s = await setup();
  await promoted(s);
  const gate = deferred<string>();
  const inflight = s.hk.get('k', () => gate.promise);
  s.sock.send({ t: MsgType.Invalidate, seq: 2, key: 'k' });
  const applied = await s.sock.next(MsgType.Applied);
  assert.is(applied.seq, 2);
  // a get after the invalidation must not join the stale load
  let calls = 0;
  const fresh = s.hk.get('k', () => (calls++, 'new'));
  gate.resolve('old');
  assert.is(await inflight, 'old');
  assert.is(await fresh, 'new');
  assert.is(calls, 1);
  // 'new' was loaded after the invalidation and is cached; 'old' never was
  assert.is(await s.hk.get('k', () => 'loader'), 'new');
  assert.ok(s.hk.isHot('k'), 'an invalidation keeps the key hot');
  await teardown(s);
});

test('dropLocal: a key or a test over cached values, here only; a load in flight is not cached', async () => {
  const s = await setup();
  for (const [i, key] of ['a', 'b', 'c'].entries()) s.sock.send({ t: MsgType.Promote, seq: i + 1, key, ...P });
  await waitFor('a, b, c hot', () => s.hk.isHot('a') && s.hk.isHot('b') && s.hk.isHot('c'));
  for (const key of ['a', 'b', 'c']) await s.hk.get(key, () => ({ ns: key === 'c' ? 'two' : 'one', v: `${key}1` }));
  assert.is(s.hk.dropLocal('a'), 1);
  assert.is(s.hk.dropLocal('a'), 0, 'nothing left to drop');
  assert.equal(await s.hk.get('a', () => ({ ns: 'one', v: 'a2' })), { ns: 'one', v: 'a2' });
  assert.is(
    s.hk.dropLocal((_key, value) => (value as { ns: string }).ns === 'one'),
    2,
  );
  assert.equal(
    await s.hk.get('c', () => ({ ns: 'two', v: 'reloaded' })),
    { ns: 'two', v: 'c1' },
    'c was of another namespace: kept',
  );
  assert.equal(await s.hk.get('b', () => ({ ns: 'one', v: 'b2' })), { ns: 'one', v: 'b2' });
  // a load in flight when its key is dropped is returned to its callers but not cached
  s.hk.dropLocal('b');
  const gate = deferred<string>();
  const inflight = s.hk.get('b', () => gate.promise);
  s.hk.dropLocal('b');
  gate.resolve('old');
  assert.is(await inflight, 'old');
  assert.is(await s.hk.get('b', () => 'new'), 'new');
  assert.ok(s.hk.isHot('b'), 'a dropped key stays hot');
  assert.is(s.sock.received.filter((m) => m.t === MsgType.InvalidateRequest).length, 0, 'no hub round trip');
  assert.throws(() => s.hk.dropLocal(42 as unknown as string), TypeError);
  await teardown(s);
});

test('invalidateAll: drops every value here, flush flag to the hub, resolves on the ack; a flush broadcast drops everything', async () => {
  const s = await setup();
  for (const [i, key] of ['a', 'b'].entries()) s.sock.send({ t: MsgType.Promote, seq: i + 1, key, ...P });
  await waitFor('a, b hot', () => s.hk.isHot('a') && s.hk.isHot('b'));
  await s.hk.get('a', () => 'a1');
  await s.hk.get('b', () => 'b1');
  const done = s.hk.invalidateAll('127.0.0.1:6379/0');
  assert.is(await s.hk.get('a', () => 'a2'), 'a2', 'dropped at once, before the ack');
  const req = await s.sock.next(MsgType.InvalidateRequest);
  assert.equal({ key: req.key, flush: req.flush }, { key: '127.0.0.1:6379/0', flush: true });
  s.sock.send({ t: MsgType.Ack, id: req.id, seq: 3, fenced: [], ms: 0 });
  await done;
  // another instance's flush: everything goes, Applied is sent, the event says flush
  const events: unknown[] = [];
  s.hk.on('invalidate', (key, info) => events.push([key, info.flush]));
  const gate = deferred<string>();
  const inflight = s.hk.get('b', () => gate.promise);
  s.sock.send({ t: MsgType.Invalidate, seq: 3, key: 'cluster(127.0.0.1:7000)', flush: true });
  assert.is((await s.sock.next(MsgType.Applied)).seq, 3);
  gate.resolve('b-old');
  assert.is(await inflight, 'b-old');
  assert.is(await s.hk.get('a', () => 'a3'), 'a3');
  assert.is(await s.hk.get('b', () => 'b3'), 'b3', 'the load in flight at the flush was not cached');
  assert.equal(events, [['cluster(127.0.0.1:7000)', true]]);
  await teardown(s);
});

test('sequence gap: cached values of that hub are dropped and Resync is sent', async () => {
  const s = await setup();
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'a', ...P });
  await waitFor('hk.isHot(a)', () => s.hk.isHot('a'));
  await s.hk.get('a', () => 'A');
  assert.is(await s.hk.get('a', () => 'reloaded'), 'A');
  s.sock.send({ t: MsgType.Promote, seq: 3, key: 'b', ...P }); // seq 2 is missing
  await s.sock.next(MsgType.Resync);
  assert.is(await s.hk.get('a', () => 'reloaded'), 'reloaded');
  assert.ok(s.hk.isHot('b'), 'the broadcast after the gap still applies');
  assert.is(s.hk.stats().resyncs, 1);
  // the snapshot answers the resync: it replaces the hub's hot set
  s.sock.send({ t: MsgType.Snapshot, seq: 3, hot: [{ key: 'b', ttlMs: 1000, cacheTtlMs: 500, cache: true, qps: 1 }] });
  await waitFor('!hk.isHot(a)', () => !s.hk.isHot('a'));
  s.sock.send({ t: MsgType.Promote, seq: 4, key: 'c', ...P });
  await waitFor('hk.isHot(c)', () => s.hk.isHot('c'));
  assert.is(s.hk.stats().resyncs, 1, 'in sequence again');
  await teardown(s);
});

test('demote drops the key and its value; events fire', async () => {
  const s = await setup();
  const events: string[] = [];
  s.hk.on('promote', (key) => events.push(`promote ${key}`));
  s.hk.on('demote', (key, info) => events.push(`demote ${key} ${info.reason}`));
  s.hk.on('invalidate', (key) => events.push(`invalidate ${key}`));
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  s.sock.send({ t: MsgType.Invalidate, seq: 2, key: 'k' });
  s.sock.send({ t: MsgType.Demote, seq: 3, key: 'k' });
  await waitFor('events.length === 3', () => events.length === 3);
  assert.equal(events, ['promote k', 'invalidate k', 'demote k demote']);
  assert.not.ok(s.hk.isHot('k'));
  await teardown(s);
});

test('hot entries expire at hotMs on the injected clock', async () => {
  const s = await setup();
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P, hotMs: 1000 });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  s.clock.t = 999;
  await waitFor('hk.stats().hotKeys === 1', () => s.hk.stats().hotKeys === 1);
  s.clock.t = 1000;
  await waitFor('hk.stats().hotKeys === 0', () => s.hk.stats().hotKeys === 0);
  await teardown(s);
});

test('cached values end at cacheTtlMs; a value the LRU evicted is loaded again', async () => {
  // no refresh-ahead, no stale-if-error: the plain lifetime (loads.test.ts covers the others)
  const s = await setup(
    { maxEntries: 2 },
    { rules: [{ ...RULE_DEFAULTS, match: '*', threshold: 100, refreshAheadRatio: 1, staleIfErrorMs: 0 }] },
  );
  for (const [seq, key] of ['a', 'b', 'c'].entries())
    s.sock.send({ t: MsgType.Promote, seq: seq + 1, key, ...P, cacheTtlMs: 500 });
  s.sock.send({ t: MsgType.Promote, seq: 4, key: 'probe-499', ...P, hotMs: 499 });
  s.sock.send({ t: MsgType.Promote, seq: 5, key: 'probe-500', ...P, hotMs: 500 });
  await waitFor('hk.isHot(probe-500)', () => s.hk.isHot('probe-500'));
  const loads: string[] = [];
  const loader = (key: string) => {
    loads.push(key);
    return `${key}${loads.length}`;
  };
  assert.is(await s.hk.get('a', loader), 'a1');
  assert.is(await s.hk.get('b', loader), 'b2');
  assert.is(await s.hk.get('a', loader), 'a1'); // a hit: a is now the most recently used
  assert.is(await s.hk.get('c', loader), 'c3'); // evicts b
  assert.is(s.hk.stats().evictions, 1);
  assert.is(await s.hk.get('a', loader), 'a1');
  assert.is(await s.hk.get('b', loader), 'b4', 'the evicted value is not served');
  assert.equal(loads, ['a', 'b', 'c', 'b']);
  s.clock.t = 499;
  await waitFor('!hk.isHot(probe-499)', () => !s.hk.isHot('probe-499')); // the client's clock reads 499
  assert.is(await s.hk.get('b', loader), 'b4');
  s.clock.t = 500;
  await waitFor('!hk.isHot(probe-500)', () => !s.hk.isHot('probe-500'));
  assert.is(await s.hk.get('b', loader), 'b5', 'past cacheTtlMs the loader runs again');
  assert.ok(s.hk.stats().expirations >= 1);
  await teardown(s);
});

test('stale bound: cut off from the hub, cached values serve at most maxStaleMs', async () => {
  const s = await setup({ maxStaleMs: 3000, reconnectMinMs: 5000, reconnectMaxMs: 5000 });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  s.sock.send({ t: MsgType.Promote, seq: 2, key: 'probe', ...P, hotMs: 3050 });
  await waitFor('hk.isHot(k) && hk.isHot(probe)', () => s.hk.isHot('k') && s.hk.isHot('probe'));
  await s.hk.get('k', () => 'cached');
  s.clock.t = 100;
  s.sock.ws.terminate();
  await waitFor('hk.hubs().length === 0', () => s.hk.hubs().length === 0);
  s.clock.t = 3099;
  // 'probe' expires at 3050: once it is gone, the client's clock has reached 3099
  await waitFor('!hk.isHot(probe)', () => !s.hk.isHot('probe'));
  assert.is(await s.hk.get('k', () => 'loader'), 'cached', 'still within the bound');
  s.clock.t = 3100;
  await waitFor('!hk.isHot(k)', () => !s.hk.isHot('k'));
  assert.is(await s.hk.get('k', () => 'loader'), 'loader');
  await teardown(s);
});

test('reconnect: a value cached under the old link is not served under the new one (promote or snapshot)', async () => {
  const s = await setup({ reconnectMinMs: 10, reconnectMaxMs: 20 });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'a', ...P });
  s.sock.send({ t: MsgType.Promote, seq: 2, key: 'b', ...P });
  await waitFor('hk.isHot(b)', () => s.hk.isHot('b'));
  assert.is(await s.hk.get('a', () => 'old-a'), 'old-a');
  assert.is(await s.hk.get('b', () => 'old-b'), 'old-b');
  const next = s.peer.nextSocket();
  s.peer.opts = { ...s.peer.opts, snapshot: false };
  s.sock.ws.terminate();
  const sock2 = await next;
  await waitFor('granted again', () => sock2.grants >= 1);
  sock2.send({
    t: MsgType.Snapshot,
    seq: 0,
    hot: [{ key: 'a', ttlMs: 60_000, cacheTtlMs: 10_000, cache: true, qps: 1 }],
  });
  sock2.send({ t: MsgType.Promote, seq: 1, key: 'b', ...P });
  await waitFor('b promoted again', () => s.hk.isHot('b') && s.hk.isHot('a'));
  await delay(20);
  assert.is(await s.hk.get('a', () => 'new-a'), 'new-a', 'the snapshot does not resurrect the old value');
  assert.is(await s.hk.get('b', () => 'new-b'), 'new-b', 'a promotion does not extend the old entry with its value');
  assert.is(await s.hk.get('b', () => 'loader'), 'new-b', 'the new value is cached under the new lease');
  await teardown(s);
});

test('Lettuce #3481: an invalidation between a miss and its fill wins, also when the fill completes right after it', async () => {
  const s = await setup();
  await promoted(s);
  const gate = deferred<string>();
  const miss = s.hk.get('k', () => gate.promise); // the read went to Redis before the write
  s.sock.send({ t: MsgType.Invalidate, seq: 2, key: 'k' });
  await s.sock.next(MsgType.Applied);
  gate.resolve('old'); // the old value arrives after the invalidation
  assert.is(await miss, 'old', 'that caller gets what it read');
  assert.is(await s.hk.get('k', () => 'new'), 'new', 'but the fill was discarded: the next read loads');
  await teardown(s);
});

test.run();
