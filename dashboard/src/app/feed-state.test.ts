import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '@hotkey/sdk/protocol';
import {
  decodeFeedMessage,
  encodeFeed,
  type FeedDelta,
  type FeedHotRow,
  type FeedSnapshot,
} from '@hotkey/sdk/feed-protocol';
import { ProtocolError } from '@hotkey/sdk';
import { FeedState } from './feed-state.ts';
import { rowId } from './row-id.ts';

const row = (key: string, qps: number, app = 'shop'): FeedHotRow => ({
  app,
  key,
  qps,
  threshold: 100,
  windowMs: 1000,
  since: 1000,
  hub: 'h1',
  instances: 2,
});
const hub = {
  id: 'h1',
  url: 'ws://127.0.0.1:1',
  startedAt: 1,
  ingestRate: 10,
  connections: 3,
  heapUsed: 1e6,
  rss: 2e6,
  redis: 'none',
  hotCount: 2,
  instanceCount: 1,
  updatedAt: 5,
} as const;
const snapshot = (hot: FeedHotRow[]): FeedSnapshot => ({
  t: MsgType.FeedSnapshot,
  hub: 'h1',
  at: 10,
  apps: ['shop', 'feed'],
  hot,
  hotTotal: hot.length,
  events: [{ type: 'promote', app: 'shop', key: 'a', qps: 150, at: 9, hub: 'h1', latencyMs: 120 }],
  hubs: [hub],
  instances: [{ app: 'shop', instance: 'i1', host: 'web-1', sdk: '0.1.0', hub: 'h1', lastReport: 8, connectedAt: 2 }],
});
const delta = (d: Partial<FeedDelta>): FeedDelta => ({
  t: MsgType.FeedDelta,
  at: 20,
  hot: [],
  gone: [],
  hotTotal: 0,
  events: [],
  ...d,
});

// every frame goes through the real codec, as it does in the page
const wire = <T extends FeedSnapshot | FeedDelta>(m: T) => decodeFeedMessage(encodeFeed(m));

test('snapshot replaces state; deltas upsert, remove and append events', () => {
  const s = new FeedState();
  s.apply(wire(snapshot([row('a', 150), row('b', 120)])));
  assert.is(s.rows.size, 2);
  assert.equal(s.apps, ['feed', 'shop']);
  assert.is(s.events.length, 1);
  assert.is(s.events[0]!.latencyMs, 120);
  assert.is(s.hub, 'h1');

  const v = s.versions.rows;
  s.apply(
    wire(
      delta({
        hot: [row('a', 300), row('c', 200)],
        gone: [{ app: 'shop', key: 'b' }],
        hotTotal: 2,
        events: [{ type: 'demote', app: 'shop', key: 'b', qps: 10, at: 19, hub: 'h1', reason: 'cooled' }],
      }),
    ),
  );
  assert.ok(s.versions.rows > v);
  assert.equal([...s.rows.keys()].sort(), [rowId('shop', 'a'), rowId('shop', 'c')]);
  assert.is(s.rows.get(rowId('shop', 'a'))!.qps, 300);
  assert.is(s.events.at(-1)!.reason, 'cooled');
  assert.equal(s.hubs, [hub]); // absent from the delta: kept

  s.apply(wire(snapshot([row('z', 1)])));
  assert.equal([...s.rows.keys()], [rowId('shop', 'z')]);
  assert.is(s.events.length, 1);
});

test('the same key in two apps is two rows', () => {
  const s = new FeedState();
  s.apply(wire(snapshot([row('k', 1, 'a'), row('k', 2, 'b')])));
  assert.is(s.rows.size, 2);
  s.apply(wire(delta({ gone: [{ app: 'a', key: 'k' }], hotTotal: 1 })));
  assert.is(s.rows.get(rowId('b', 'k'))!.qps, 2);
  assert.is(s.rows.size, 1);
});

test('events and rows are bounded', () => {
  const s = new FeedState({ maxEvents: 5, maxRows: 3 });
  s.apply(wire(snapshot([])));
  for (let i = 0; i < 4; i++) {
    s.apply(
      wire(
        delta({
          hot: [row(`k${i}`, i)],
          events: [1, 2, 3].map((j) => ({
            type: 'invalidate' as const,
            app: 'shop',
            key: `e${i}-${j}`,
            qps: 0,
            at: i,
            hub: 'h1',
          })),
        }),
      ),
    );
  }
  assert.is(s.rows.size, 3);
  assert.is(s.events.length, 5);
  assert.is(s.events.at(-1)!.key, 'e3-3');
  assert.is(s.events[0]!.key, 'e2-2');
});

test('an error frame is kept for the page to show; state survives', () => {
  const s = new FeedState();
  s.apply(wire(snapshot([row('a', 1)])));
  s.apply(
    decodeFeedMessage(encodeFeed({ t: MsgType.Error, code: 'HK_ERR_AUTH', message: 'dashboard token required' })),
  );
  assert.equal(s.lastError, { code: 'HK_ERR_AUTH', message: 'dashboard token required' });
  assert.is(s.rows.size, 1);
});

test('malformed feed frames are protocol errors', () => {
  const pack = (x: unknown) => encodeFeed(x as never);
  const bad = [
    pack({ t: MsgType.FeedDelta, at: 1, hot: [{ app: 'a', key: 'k' }], gone: [], hotTotal: 0, events: [] }),
    pack({
      t: MsgType.FeedDelta,
      at: 1,
      hot: [],
      gone: [],
      hotTotal: 0,
      events: [{ type: 'explode', app: 'a', key: 'k', qps: 0, at: 0, hub: 'h' }],
    }),
    pack({ t: MsgType.FeedDelta, at: 1, hot: [], gone: [{ app: 'a', key: '' }], hotTotal: 0, events: [] }),
    pack({
      t: MsgType.FeedSnapshot,
      hub: 'h',
      at: 1,
      apps: [],
      hot: [],
      hotTotal: 0,
      events: [],
      hubs: [{ ...hub, redis: 'maybe' }],
      instances: [],
    }),
    pack({ t: MsgType.Promote, seq: 1, key: 'k', qps: 1, hotMs: 1, cacheTtlMs: 1, cache: true, at: 1 }),
  ];
  for (const [i, bytes] of bad.entries()) {
    try {
      decodeFeedMessage(bytes);
      assert.unreachable(`frame ${i} accepted`);
    } catch (err) {
      assert.instance(err, ProtocolError);
      assert.is((err as ProtocolError).code, i === 2 ? 'HK_ERR_KEY_TOO_LONG' : 'HK_ERR_PROTOCOL', `frame ${i}`);
    }
  }
});

test.run();
