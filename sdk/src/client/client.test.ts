import { RULE_DEFAULTS } from '../rules.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotKeyClient, type ClientOptions, type ClientStatus } from './client.ts';
import { ErrorCode, HotKeyError } from '../errors.ts';
import { Ownership } from '../ownership.ts';
import { CloseCode, MAX_KEY_LENGTH, MsgType, PROTOCOL_VERSION } from '../wire/protocol.ts';
import { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { delay, waitFor } from '../../../test/support/wait.ts';
import {
  closeAll,
  closeLater,
  connect,
  deferred,
  type Connected,
  type PeerOptions,
} from '../../../test/support/sdk-client.ts';

const P = { qps: 5000, hotMs: 60_000, cacheTtlMs: 10_000, cache: true, at: 0 };

type Setup = Connected;

/** A client with token `s3cret` welcomed by a scripted hub (test/support/sdk-client.ts). */
const setup = (opts: Partial<ClientOptions> = {}, peerOpts: PeerOptions = {}): Promise<Setup> =>
  connect({ token: 's3cret', ...opts }, peerOpts);

// A failed assertion skips a test's own teardown: close whatever it left open.
test.after.each(closeAll);

async function teardown(s: Setup): Promise<void> {
  await s.hk.close();
  await s.peer.close();
}

test('hello carries version, app, token, instance; ready resolves on welcome', async () => {
  const s = await setup();
  assert.is(s.sock.hello.v, PROTOCOL_VERSION);
  assert.is(s.sock.hello.app, 'shop');
  assert.is(s.sock.hello.token, 's3cret');
  assert.is(s.sock.hello.instance, 'i-1');
  assert.is(s.sock.hello.role, 'sdk');
  assert.equal(s.hk.hubs(), ['hub-a']);
  assert.is(s.hk.rules()[0]!.threshold, 100);
  await teardown(s);
});

test('fatal close codes reject ready() and stop retrying', async () => {
  for (const [code, errorCode] of [
    [CloseCode.Auth, ErrorCode.Auth],
    [CloseCode.UnknownApp, ErrorCode.UnknownApp],
    [CloseCode.Version, ErrorCode.Version],
  ] as const) {
    const peer = await new ProtocolPeer({ id: 'hub-x', refuse: { code, errorCode } }).listen();
    const hk = new HotKeyClient({ app: 'shop', hubs: peer.url, reconnectMinMs: 1, reconnectMaxMs: 2 });
    const statuses = hk.status();
    const err = await hk.ready({ signal: AbortSignal.timeout(3000) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.instance(err, HotKeyError);
    assert.is((err as HotKeyError).code, errorCode);
    const seen: ClientStatus['type'][] = [];
    for (;;) {
      const { value } = await statuses.next();
      if (!value) break;
      seen.push(value.type);
      if (value.type === 'error') break;
    }
    assert.equal(seen, ['error'], 'no reconnect after a fatal code');
    await hk.close();
    assert.is(peer.sockets.length, 1);
    await peer.close();
  }
});

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
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
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
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
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

test('reports: keys over the local threshold, counts since the last report', async () => {
  const s = await setup({}, { local: [10] });
  for (let i = 0; i < 9; i++) s.hk.track('cool');
  for (let i = 0; i < 25; i++) s.hk.track('warm');
  const report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['warm']);
  assert.is(report.counts[0]!, 25 - 1); // the first access only entered the sketch
  for (let i = 0; i < 5; i++) s.hk.track('warm');
  const next = await s.sock.next(MsgType.Report);
  assert.equal(next.keys, ['warm']);
  assert.equal(next.counts, [5]);
  assert.ok(s.hk.stats().reports >= 2);
  await teardown(s);
});

test('get() on a hot key counts exactly, also after its counter slot went to another key', async () => {
  const s = await setup({}, { local: [10] });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  /** report counts summed per key until every key in `keys` was reported (all accesses precede) */
  const reported = async (keys: string[]) => {
    const sums = new Map<string, number>();
    while (!keys.every((k) => sums.has(k))) {
      const report = await s.sock.next(MsgType.Report);
      report.keys.forEach((k, i) => sums.set(k, (sums.get(k) ?? 0) + report.counts[i]!));
    }
    return sums;
  };
  // 'ctl' is counted by track() alone: a hot key's get() must count the same
  for (let i = 0; i < 25; i++) await s.hk.get('k', () => 'v');
  for (let i = 0; i < 25; i++) s.hk.track('ctl');
  let sums = await reported(['k', 'ctl']);
  assert.ok(sums.get('ctl')! >= 10, `ctl ${sums.get('ctl')}`);
  assert.is(sums.get('k'), sums.get('ctl'));
  assert.ok(s.hk.stats().hits >= 20);
  // the window empties: both slots are released, then taken by two new keys
  s.clock.t = 5000;
  await waitFor('hk.stats().candidates === 0', () => s.hk.stats().candidates === 0);
  for (let i = 0; i < 12; i++) s.hk.track('other-1');
  for (let i = 0; i < 12; i++) s.hk.track('other-2');
  for (let i = 0; i < 15; i++) await s.hk.get('k', () => 'v');
  for (let i = 0; i < 15; i++) s.hk.track('ctl');
  sums = await reported(['k', 'ctl', 'other-1', 'other-2']);
  assert.is(sums.get('k'), sums.get('ctl'));
  assert.is(sums.get('other-1'), sums.get('other-2'), "no access of k was counted in its old slot's new key");
  assert.ok(s.hk.isHot('k'));
  await teardown(s);
});

test('a key reaching its threshold is reported at once; early reports are spaced, steady keys wait', async () => {
  // no regular flush within the test: every report here is an early one
  const s = await setup({ flushIntervalMs: 60_000 }, { local: [10] });
  s.clock.t = 1000;
  for (let i = 0; i < 11; i++) s.hk.track('a'); // the first access only enters the sketch
  let report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['a']);
  assert.equal(report.counts, [10]);
  // 5 ms later (injected clock) another key crosses: its report waits for the 20 ms gap
  s.clock.t = 1005;
  for (let i = 0; i < 3; i++) s.hk.track('a'); // not at a's next level (20): not urgent
  for (let i = 0; i < 11; i++) s.hk.track('b');
  // the injected clock stands still, so no real wait can make the report due: a short one
  // only gives a wrong implementation the chance to send it
  await delay(40);
  assert.is(s.hk.stats().reports, 1);
  s.clock.t = 1020;
  report = await s.sock.next(MsgType.Report);
  assert.equal(report.keys, ['b'], "a's 3 new accesses wait for the regular flush");
  assert.equal(report.counts, [10]);
  assert.is(s.hk.stats().reports, 2);
  await teardown(s);
});

test('Config replaces rules and local thresholds; counted keys get their new rule', async () => {
  const s = await setup({}, { local: [1000] });
  for (let i = 0; i < 6; i++) s.hk.track('item:1');
  for (let i = 0; i < 6; i++) s.hk.track('user:1');
  const rule = {
    threshold: 100,
    windowMs: 1000,
    hotMs: 30_000,
    cacheTtlMs: 5000,
    cache: true,
    demoteRatio: 0.5,
    demoteWindows: 3,
  };
  s.sock.send({
    t: MsgType.Config,
    rules: [
      { match: 'item:*', ...rule },
      { match: 'slow:*', ...rule, windowMs: 10_000 },
    ],
    local: [3, 20],
    instances: 4,
  });
  await waitFor('hk.rules().length === 2', () => s.hk.rules().length === 2);
  assert.is(s.hk.stats().instances, 4);
  s.hk.track('user:1');
  s.hk.track('item:1');
  for (let i = 0; i < 3; i++) s.hk.track('slow:1'); // 20 per 10 s is 2 per 1 s: reported at 2
  // The real 10 ms tick may fall between the Config and the accesses above, so item:1 can come
  // in two reports (its pre-Config counts, then the last one): add up every report.
  const sums = new Map<string, number>();
  while (!sums.has('slow:1') || !sums.has('item:1')) {
    const report = await s.sock.next(MsgType.Report);
    report.keys.forEach((k, i) => sums.set(k, (sums.get(k) ?? 0) + report.counts[i]!));
  }
  assert.equal([...sums.keys()].sort(), ['item:1', 'slow:1'], 'user:1 matches no rule any more');
  // item:1 is reported at its new threshold (3) only because the counts before the Config carried
  // over under its new rule; at most 6 (7 accesses, the first only in the sketch)
  const item = sums.get('item:1')!;
  assert.ok(item >= 1 && item <= 6, `item:1 ${item}`);
  assert.is(sums.get('slow:1'), 2);
  await teardown(s);
});

test('cluster: connects to members, one report per hub with the keys it owns', async () => {
  const b = await new ProtocolPeer({
    id: 'hub-b',
    local: [1],
    rules: [
      {
        ...RULE_DEFAULTS,
        match: '*',
        threshold: 5,
      },
    ],
  }).listen();
  const bSocketP = b.nextSocket();
  const s = await setup(
    {},
    {
      local: [1],
      members: (self) => [
        { id: 'hub-a', url: self },
        { id: 'hub-b', url: b.url },
      ],
    },
  );
  b.opts.members = () => [
    { id: 'hub-a', url: s.peer.url },
    { id: 'hub-b', url: b.url },
  ];
  const bSock = await bSocketP;
  await waitFor('hk.hubs().length === 2', () => s.hk.hubs().length === 2);
  assert.is(s.peer.sockets.length, 1, 'no duplicate connection to the seed');
  const own = new Ownership(['hub-a', 'hub-b']);
  const keys = Array.from({ length: 40 }, (_, i) => `key:${i}`);
  for (const key of keys) for (let i = 0; i < 3; i++) s.hk.track(key);
  const [ra, rb] = await Promise.all([s.sock.next(MsgType.Report), bSock.next(MsgType.Report)]);
  assert.ok(ra.keys.length > 0 && rb.keys.length > 0);
  assert.is(ra.keys.length + rb.keys.length, 40);
  for (const k of ra.keys) assert.is(own.owner(k), 'hub-a');
  for (const k of rb.keys) assert.is(own.owner(k), 'hub-b');
  // invalidate goes to the owner
  const key = rb.keys[0]!;
  const done = s.hk.invalidate(key);
  const req = await bSock.next(MsgType.InvalidateRequest);
  assert.is(req.key, key);
  bSock.send({ t: MsgType.Ack, id: req.id, seq: 1, fenced: [], ms: 0 });
  await done;
  // losing hub-b moves its keys to hub-a
  b.opts.members = undefined;
  s.sock.send({ t: MsgType.Members, epoch: 2, members: [{ id: 'hub-a', url: s.peer.url }] });
  await waitFor('hk.hubs().length === 1', () => s.hk.hubs().length === 1);
  for (const k of rb.keys) for (let i = 0; i < 3; i++) s.hk.track(k);
  const moved = await s.sock.next(MsgType.Report);
  assert.equal(moved.keys.sort(), [...rb.keys].sort());
  await teardown(s);
  await b.close();
});

test('a hub that comes back under a new URL is reached there, whether met as a member or as the seed', async () => {
  for (const xIsSeed of [false, true]) {
    const rules = [
      {
        ...RULE_DEFAULTS,
        match: '*',
        threshold: 100,
      },
    ];
    const x1 = await new ProtocolPeer({ id: 'hub-x', rules }).listen();
    const y = await new ProtocolPeer({ id: 'hub-y', rules }).listen();
    const members = (xUrl: string) => [
      { id: 'hub-x', url: xUrl },
      { id: 'hub-y', url: y.url },
    ];
    x1.opts.members = () => members(x1.url);
    y.opts.members = () => members(x1.url);
    const ySocketP = y.nextSocket();
    const x1SocketP = x1.nextSocket();
    // a short backoff: the client keeps retrying the old URL throughout
    const hk = new HotKeyClient({ app: 'shop', hubs: xIsSeed ? x1.url : y.url, reconnectMinMs: 5, reconnectMaxMs: 20 });
    closeLater(hk, y, x1);
    const statuses: ClientStatus[] = [];
    void (async () => {
      for await (const st of hk.status()) statuses.push(st);
    })();
    const [ySock] = await Promise.all([ySocketP, x1SocketP]);
    await waitFor(`both hubs welcomed (x is seed: ${xIsSeed})`, () => hk.hubs().length === 2, 3000);

    // hub-x goes away from A (its port now refuses) and restarts at B
    await x1.close();
    await waitFor('hub-x lost', () => hk.hubs().length === 1, 3000);
    assert.equal(hk.hubs(), ['hub-y']);
    const x2 = await new ProtocolPeer({ id: 'hub-x', rules, members: (self) => members(self) }).listen();
    closeLater(hk, x2);
    const x2SocketP = x2.nextSocket();
    ySock.send({ t: MsgType.Members, epoch: 2, members: members(x2.url) });
    await x2SocketP;
    await waitFor(`hub-x welcomed at its new URL (x is seed: ${xIsSeed})`, () => hk.hubs().length === 2, 3000);
    assert.equal(hk.hubs().sort(), ['hub-x', 'hub-y']);
    assert.ok(
      statuses.some((st) => st.type === 'connect' && st.hub === 'hub-x' && st.url === x2.url),
      'connect status names the new URL',
    );
    assert.is(x2.sockets.length, 1, 'one connection to the new URL');
    // the link to the old URL is gone: no more attempts there, so no more 'reconnecting' for it
    const retriesBefore = statuses.filter((st) => st.type === 'reconnecting' && st.url === x1.url).length;
    await delay(100); // several backoff periods (≤ 20 ms each)
    assert.is(
      statuses.filter((st) => st.type === 'reconnecting' && st.url === x1.url).length,
      retriesBefore,
      'the old URL is no longer retried',
    );
    await hk.close();
    await Promise.all([y.close(), x2.close()]);
  }
});

test('invalidate: ack, timeout, unavailable, closed', async () => {
  const s = await setup({ invalidateTimeoutMs: 50 });
  const p = s.hk.invalidate('k');
  const req = await s.sock.next(MsgType.InvalidateRequest);
  s.sock.send({ t: MsgType.Ack, id: req.id, seq: 1, fenced: ['i-9'], ms: 2001 });
  assert.equal(await p, { hub: 'hub-a', fenced: ['i-9'], ms: 2001 }, 'the ack names the fenced instances');
  const timedOut = await s.hk.invalidate('k2').catch((e: HotKeyError) => e);
  assert.is((timedOut as HotKeyError).code, ErrorCode.Timeout);
  const pending = s.hk.invalidate('k3');
  await s.sock.next(MsgType.InvalidateRequest);
  const closing = s.hk.close();
  const closed = await pending.catch((e: HotKeyError) => e);
  assert.is((closed as HotKeyError).code, ErrorCode.Closed);
  await closing;
  assert.is(await s.hk.get('k', () => 'after close'), 'after close');
  assert.is(((await s.hk.invalidate('k').catch((e: HotKeyError) => e)) as HotKeyError).code, ErrorCode.Closed);
  await s.peer.close();

  const down = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1' });
  let cached = 0;
  const err = await down.invalidate('x').catch((e: HotKeyError) => e);
  assert.is((err as HotKeyError).code, ErrorCode.Unavailable);
  assert.is(await down.get('x', () => (cached++, 'loaded')), 'loaded', 'get never waits on the network');
  assert.is(cached, 1);
  await down.close();
});

test('lease: values are served only while the lease (send time + ms - margin) is current', async () => {
  // a 100 ms margin: the lease granted at t=0 for 1000 ms ends at 900. No tick (flushIntervalMs):
  // a tick between the clock moves would ask a renewal at 899 and the peer would grant it
  const s = await setup({ flushIntervalMs: 60_000 }, { leaseMs: 1000 });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  s.clock.t = 899;
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v1', 'within the lease: a hit');
  s.clock.t = 900;
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v2', 'lease over: the loader runs');
  assert.is(await s.hk.get('k', loader), 'v3', 'and is not served from cache either');
  assert.is(s.hk.stats().unleased, 2);
  await teardown(s);
});

test('lease: no grant, no cached value served; a refused renewal lets it lapse', async () => {
  const s = await setup({}, { leaseMs: false });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  assert.is(await s.hk.get('k', loader), 'v2', 'no lease: every read loads');
  const ask = await s.sock.next(MsgType.Lease);
  s.sock.send({ t: MsgType.Grant, id: ask.id, ms: 500 });
  await waitFor(
    'a hit under the lease',
    async () => (await s.hk.get('k', loader)) === `v${loads}` && s.hk.stats().hits > 0,
  );
  s.clock.t = 500; // the next ask is due at leaseMs / 4; the hub refuses it (no Grant)
  await s.sock.next(MsgType.Lease);
  await new Promise((r) => setImmediate(r));
  const before = loads;
  await s.hk.get('k', loader);
  assert.is(loads, before + 1, 'the lease lapsed: the loader runs');
  await teardown(s);
});

test('lease: every get() reads the clock itself, so no read that begins after a stall trusts an older reading', async () => {
  // no tick for a minute: only get() itself can notice that time moved (a SIGSTOP, a long GC)
  const s = await setup({ flushIntervalMs: 60_000 }, { leaseMs: 1000 });
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  let loads = 0;
  const loader = () => `v${++loads}`;
  assert.is(await s.hk.get('k', loader), 'v1');
  assert.is(await s.hk.get('k', loader), 'v1');
  // Three reactions run in one microtask checkpoint: a read, a stall that outlasts the lease (the
  // process stopped; the hub fenced it and acknowledged a write meanwhile), then a read that
  // begins after the stall. A clock read once per task would still be the first read's.
  const reads: Promise<string>[] = [];
  const queued = Promise.resolve();
  void queued.then(() => reads.push(s.hk.get('k', loader)));
  void queued.then(() => (s.clock.t = 5000));
  void queued.then(() => reads.push(s.hk.get('k', loader)));
  await queued;
  const [before, after] = await Promise.all(reads);
  assert.is(before, 'v1', 'the read before the stall: a hit');
  assert.is(after, 'v2', 'the read after the stall: the lease ended, so the loader runs');
  s.clock.t = 6000; // "resumed" again, before any timer ran
  await new Promise((r) => setImmediate(r));
  assert.is(await s.hk.get('k', loader), 'v3', 'the first read of a later task reads the clock too');
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
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('hk.isHot(k)', () => s.hk.isHot('k'));
  const gate = deferred<string>();
  const miss = s.hk.get('k', () => gate.promise); // the read went to Redis before the write
  s.sock.send({ t: MsgType.Invalidate, seq: 2, key: 'k' });
  await s.sock.next(MsgType.Applied);
  gate.resolve('old'); // the old value arrives after the invalidation
  assert.is(await miss, 'old', 'that caller gets what it read');
  assert.is(await s.hk.get('k', () => 'new'), 'new', 'but the fill was discarded: the next read loads');
  await teardown(s);
});

test('a dead hub is noticed within the liveness timeout', async () => {
  const s = await setup({ pingIntervalMs: 50, livenessTimeoutMs: 150, reconnectMinMs: 5000, reconnectMaxMs: 5000 });
  const started = performance.now();
  (s.sock.ws as unknown as { _socket: { pause(): void } })._socket.pause(); // no more pongs
  await waitFor('disconnect', () => s.hk.hubs().length === 0, 2000);
  assert.ok(performance.now() - started < 1000);
  await teardown(s);
});

test('network faults never throw without an error listener; status reports them', async () => {
  const hk = new HotKeyClient({ app: 'shop', hubs: 'ws://127.0.0.1:1', reconnectMinMs: 1, reconnectMaxMs: 5 });
  const st = hk.status();
  const seen = new Set<string>();
  for (;;) {
    const { value } = await st.next();
    if (!value) break;
    seen.add(value.type);
    if (seen.has('error') && seen.has('reconnecting')) break;
  }
  await hk.close();
  assert.ok(seen.has('error'));
  const ended = await st.next();
  assert.ok(ended.done || ended.value?.type === 'closed');
});

test('misuse throws TypeError at once', () => {
  const t = (fn: () => unknown) => assert.throws(fn, (e: unknown) => e instanceof TypeError);
  t(() => new HotKeyClient({ app: '', hubs: ['ws://127.0.0.1:1'] }));
  t(() => new HotKeyClient({ app: 'a', hubs: [] }));
  t(() => new HotKeyClient({ app: 'a', hubs: ['http://x'] }));
  t(() => new HotKeyClient({ app: 'a', hubs: 'ws://127.0.0.1:1', flushIntervalMs: 0 }));
  const hk = new HotKeyClient({ app: 'a', hubs: 'ws://127.0.0.1:1' });
  t(() => hk.get(42 as unknown as string, () => 1));
  t(() => hk.get('x'.repeat(MAX_KEY_LENGTH + 1), () => 1));
  t(() => hk.get('', () => 1));
  t(() => hk.get('k', 'nope' as unknown as () => 1));
  t(() => hk.track(null as unknown as string));
  t(() => hk.invalidate({} as unknown as string));
  void hk.close();
});

test.run();
