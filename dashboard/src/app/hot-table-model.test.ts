import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FeedHotRow } from '@hotkey/sdk/feed-protocol';
import { DEFAULT_QUERY, queryRows, readsSpared, topByQps, visibleWindow } from './hot-table-model.ts';

const row = (app: string, key: string, qps: number, since = 0): FeedHotRow => ({
  app,
  key,
  qps,
  threshold: 100,
  windowMs: 1000,
  since,
  hub: 'h',
  instances: 1,
});
const rows = [
  row('shop', 'item:1', 500, 3),
  row('shop', 'item:2', 900, 1),
  row('feed', 'post:9', 700, 2),
  row('feed', 'ITEM:3', 700, 4),
];

test('default query sorts by QPS, highest first, ties by app then key', () => {
  assert.equal(
    queryRows(rows, DEFAULT_QUERY).map((r) => r.key),
    ['item:2', 'ITEM:3', 'post:9', 'item:1'],
  );
});

test('ascending and by other columns', () => {
  assert.equal(
    queryRows(rows, { ...DEFAULT_QUERY, sort: 'since', descending: false }).map((r) => r.since),
    [1, 2, 3, 4],
  );
  assert.equal(
    queryRows(rows, { ...DEFAULT_QUERY, sort: 'key', descending: false }).map((r) => r.key),
    ['ITEM:3', 'item:1', 'item:2', 'post:9'],
  );
});

test('filter is a case-insensitive substring of key or app; app narrows', () => {
  assert.equal(
    queryRows(rows, { ...DEFAULT_QUERY, filter: 'item' }).map((r) => r.key),
    ['item:2', 'ITEM:3', 'item:1'],
  );
  assert.equal(queryRows(rows, { ...DEFAULT_QUERY, filter: ' FEED ' }).length, 2);
  assert.equal(
    queryRows(rows, { ...DEFAULT_QUERY, app: 'shop', filter: 'item' }).map((r) => r.key),
    ['item:2', 'item:1'],
  );
  assert.equal(queryRows(rows, { ...DEFAULT_QUERY, filter: 'nothing' }), []);
});

test('served locally: reads spared sum qps × share; unreported rows count nothing and sort last', () => {
  const saved = [
    { ...row('shop', 'a', 1000), localPct: 99, loadsPerSec: 10 },
    { ...row('shop', 'b', 200), localPct: 50, loadsPerSec: 100 },
    row('shop', 'c', 5000),
  ];
  assert.is(readsSpared(saved), 1090);
  assert.equal(
    queryRows(saved, { ...DEFAULT_QUERY, sort: 'localPct' }).map((r) => r.key),
    ['a', 'b', 'c'],
  );
  assert.equal(
    queryRows(saved, { ...DEFAULT_QUERY, sort: 'loadsPerSec' }).map((r) => r.key),
    ['b', 'a', 'c'],
  );
});

test('topByQps matches a full sort on a random set', () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const many = Array.from({ length: 5000 }, (_, i) => row('a', `k${i}`, Math.floor(rand() * 100_000)));
  const expected = [...many]
    .sort((a, b) => b.qps - a.qps)
    .slice(0, 50)
    .map((r) => r.qps);
  assert.equal(
    topByQps(many, 50).map((r) => r.qps),
    expected,
  );
  assert.equal(topByQps(many, 0), []);
  assert.is(topByQps(many.slice(0, 3), 10).length, 3);
});

test('visible window renders the rows in view plus overscan, clamped to the list', () => {
  assert.equal(visibleWindow(10_000, 0, 280, 28, 5), { start: 0, end: 15, offset: 0, total: 280_000 });
  const mid = visibleWindow(10_000, 28 * 1000 + 3, 280, 28, 5);
  assert.equal(mid, { start: 995, end: 1015, offset: 995 * 28, total: 280_000 });
  const end = visibleWindow(10_000, 10_000_000, 280, 28, 5);
  assert.is(end.end, 10_000);
  assert.ok(end.end - end.start <= 20);
  assert.equal(visibleWindow(0, 0, 280, 28), { start: 0, end: 0, offset: 0, total: 0 });
});

test.run();
