import { KeyPrivacy } from '../core/observe/key-privacy.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CloseCode, encode, MsgType, PROTOCOL_VERSION } from '@hotkey/sdk/protocol';
import { decodeFeedMessage, type FeedDelta, type FeedMessage, type FeedSnapshot } from '@hotkey/sdk/feed-protocol';
import { DashboardFeed, type FeedSource } from './dashboard-feed.ts';
import { LocalCoordinator } from '../cluster/local-coordinator.ts';
import type { HotKeyRow } from '../core/observe/app-rows.ts';
import type { Peer } from '../core/peer.ts';

/** A socket's sending side that records frames; `bufferedAmount` is set by the test. */
class RecordingPeer implements Peer {
  frames: FeedMessage[] = [];
  closed: { code: number; reason: string } | undefined;
  bufferedAmount = 0;
  send(data: Uint8Array): void {
    this.frames.push(decodeFeedMessage(data));
  }
  close(code: number, reason: string): void {
    this.closed ??= { code, reason };
  }
  last<T extends FeedMessage>(): T {
    return this.frames.at(-1) as T;
  }
}

function setup({ dashboardToken, ...opts }: { dashboardToken?: string; maxRowsPerFrame?: number } = {}) {
  const coordinator = new LocalCoordinator({ selfId: 'hub-1' });
  let hot: HotKeyRow[] = [];
  const source: FeedSource = {
    id: 'hub-1',
    coordinator,
    hotKeys: () => hot.map((r) => ({ ...r })),
    instanceRows: () => [
      { app: 'shop', instance: 'i-1', host: 'web-1', sdk: '0.1.0', lastReport: 5, connectedAt: 1, hub: 'hub-1' },
    ],
    activeApps: () => ['shop'],
    recentEvents: () => [],
    keyPrivacy: new KeyPrivacy(),
  };
  const feed = new DashboardFeed({
    source,
    wallNow: () => 1000,
    intervalMs: 1_000_000,
    ...opts,
    tokens: { adminToken: 'admin', dashboardToken },
  });
  const setHot = (rows: [string, number][]) => {
    hot = rows.map(([key, qps]) => ({
      app: 'shop',
      key,
      qps,
      threshold: 100,
      since: 1,
      instances: 2,
      hub: 'hub-1',
      ttlMs: 1000,
    }));
  };
  const connect = (token = '') => {
    const peer = new RecordingPeer();
    const conn = feed.attach(peer);
    conn.onFrame(
      encode({
        t: MsgType.Hello,
        v: PROTOCOL_VERSION,
        app: '*',
        token,
        instance: 'page',
        sdk: 'dashboard',
        role: 'dashboard',
      }),
      true,
    );
    return { peer, conn };
  };
  return { feed, coordinator, setHot, connect };
}

test('snapshot, then deltas with only moved rows, removals and events', () => {
  const { feed, coordinator, setHot, connect } = setup();
  setHot([
    ['a', 500],
    ['b', 300],
  ]);
  const { peer, conn } = connect();
  const snap = peer.last<FeedSnapshot>();
  assert.is(snap.t, MsgType.FeedSnapshot);
  assert.equal(
    snap.hot.map((r) => [r.key, r.qps, r.hub]),
    [
      ['a', 500, 'hub-1'],
      ['b', 300, 'hub-1'],
    ],
  );
  assert.equal(snap.apps, ['shop']);
  assert.is(snap.hot[0]!.windowMs, 1000); // open mode: the default rule's window
  assert.is(snap.instances.length, 1);

  setHot([
    ['a', 505],
    ['c', 900],
  ]); // a moved by 1 %: not resent
  coordinator.publishEvent({ type: 'promote', app: 'shop', key: 'c', qps: 900, at: 999, hub: 'hub-1', latencyMs: 140 });
  feed.tick();
  const d = peer.last<FeedDelta>();
  assert.is(d.t, MsgType.FeedDelta);
  assert.equal(
    d.hot.map((r) => r.key),
    ['c'],
  );
  assert.equal(d.gone, [{ app: 'shop', key: 'b' }]);
  assert.is(d.hotTotal, 2);
  assert.equal(
    d.events.map((e) => [e.key, e.latencyMs]),
    [['c', 140]],
  );

  setHot([
    ['a', 700],
    ['c', 900],
  ]);
  feed.tick();
  assert.equal(
    peer.last<FeedDelta>().hot.map((r) => [r.key, r.qps]),
    [['a', 700]],
  );
  assert.equal(peer.last<FeedDelta>().events, []);
  conn.onClose();
  assert.is(feed.dashboards, 0);
});

test('10 000 hot keys reach the page in bounded frames, hottest first', () => {
  const { feed, setHot, connect } = setup({ maxRowsPerFrame: 3000 });
  setHot(Array.from({ length: 10_000 }, (_, i): [string, number] => [`k${i}`, 10_000 - i]));
  const { peer } = connect();
  const snap = peer.last<FeedSnapshot>();
  assert.is(snap.hot.length, 3000);
  assert.is(snap.hotTotal, 10_000);
  assert.is(snap.hot[0]!.key, 'k0');
  const have = new Set(snap.hot.map((r) => r.key));
  for (let i = 0; i < 5; i++) {
    feed.tick();
    const d = peer.last<FeedDelta>();
    assert.ok(d.hot.length <= 3000);
    for (const r of d.hot) have.add(r.key);
  }
  assert.is(have.size, 10_000);
  feed.tick();
  assert.is(peer.last<FeedDelta>().hot.length, 0); // nothing moved: an empty delta
});

test('when more rows change than fit in a frame, new rows and every changed row still get through', () => {
  const { feed, setHot, connect } = setup({ maxRowsPerFrame: 1000 });
  const rows = (round: number): [string, number][] =>
    Array.from({ length: 3000 }, (_, i): [string, number] => [`k${i}`, (3000 - i) * (round % 2 ? 1.1 : 1)]);
  setHot(rows(0));
  const { peer } = connect();
  for (let i = 0; i < 3; i++) feed.tick(); // 3000 rows catch up through 1000-row frames
  // then every row moves by 10 % each round, and a new, coldest row appears
  const seen = new Map<string, number>();
  const added: [string, number][] = [];
  for (let round = 1; round <= 8; round++) {
    added.push([`new${round}`, 1]);
    setHot([...rows(round), ...added]);
    feed.tick();
    for (const r of peer.last<FeedDelta>().hot) seen.set(r.key, round);
  }
  for (let round = 1; round <= 8; round++) assert.ok(seen.has(`new${round}`), `new${round} never sent`);
  // 3000 changed rows through 1000-row frames: none waits more than 3000 / 1000 + 1 rounds
  // (the coldest rows move by at most 1/s, under the change threshold: never resent)
  for (let i = 0; i < 2900; i++)
    assert.ok((seen.get(`k${i}`) ?? 0) >= 8 - 4, `k${i} last sent in round ${seen.get(`k${i}`)}`);
});

test('dashboard token: wrong or missing refused with 4003; the admin token also opens the feed', () => {
  const { connect } = setup({ dashboardToken: 'read' });
  const bad = connect('nope').peer;
  assert.is(bad.closed?.code, CloseCode.Auth);
  assert.is(bad.frames[0]!.t, MsgType.Error);
  assert.is((bad.frames[0] as { code: string }).code, 'HK_ERR_AUTH');
  assert.is(connect('').peer.closed?.code, CloseCode.Auth);
  assert.is(connect('read').peer.last().t, MsgType.FeedSnapshot);
  assert.is(connect('admin').peer.last().t, MsgType.FeedSnapshot);
});

test('a non-Hello first frame or a text frame is a protocol error', () => {
  const { feed } = setup();
  const p1 = new RecordingPeer();
  feed.attach(p1).onFrame(encode({ t: MsgType.Resync }), true);
  assert.is(p1.closed?.code, CloseCode.Protocol);
  const p2 = new RecordingPeer();
  feed.attach(p2).onFrame(new Uint8Array([1, 2, 3]), false);
  assert.is(p2.closed?.code, CloseCode.Protocol);
  const p3 = new RecordingPeer();
  feed
    .attach(p3)
    .onFrame(encode({ t: MsgType.Hello, v: PROTOCOL_VERSION, app: 'shop', instance: 'i', sdk: 's' }), true);
  assert.is(p3.closed?.code, CloseCode.Protocol);
});

test('a slow page skips rounds, then catches up; past the hard limit it is dropped, others are not', () => {
  const { feed, setHot, connect } = setup();
  setHot([['a', 100]]);
  const slow = connect().peer;
  const fast = connect().peer;
  slow.bufferedAmount = 2 << 20;
  setHot([['a', 200]]);
  feed.tick();
  assert.is(slow.frames.length, 1);
  assert.equal(
    fast.last<FeedDelta>().hot.map((r) => r.qps),
    [200],
  );
  slow.bufferedAmount = 0;
  feed.tick();
  assert.equal(
    slow.last<FeedDelta>().hot.map((r) => r.qps),
    [200],
  ); // caught up by the diff
  slow.bufferedAmount = 64 << 20;
  feed.tick();
  assert.is(slow.closed?.code, CloseCode.SlowConsumer);
  assert.is(feed.stats.slowDropped, 1);
  assert.is(fast.closed, undefined);
  assert.is(feed.dashboards, 1);
});

test.run();
