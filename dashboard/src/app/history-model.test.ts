import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FeedEvent } from '@hotkey/sdk/feed-protocol';
import { summarizeHistory } from './history-model.ts';

const ev = (type: FeedEvent['type'], key: string, at: number, qps = 0, latencyMs?: number): FeedEvent => ({
  type,
  app: 'shop',
  key,
  qps,
  at,
  hub: 'h',
  ...(latencyMs === undefined ? {} : { latencyMs }),
});

test('hot time pairs promotions with demotions; an open promotion counts until now', () => {
  const events = [
    ev('promote', 'a', 1000, 500, 100),
    ev('promote', 'a', 1500, 800), // renewal while hot
    ev('invalidate', 'a', 1600),
    ev('demote', 'a', 3000, 10),
    ev('promote', 'a', 5000, 600, 300),
    ev('promote', 'b', 9000, 200),
  ];
  const [a, b] = summarizeHistory(events, 10_000);
  assert.equal(a, {
    app: 'shop',
    key: 'a',
    promotions: 3,
    invalidations: 1,
    peakQps: 800,
    hotMs: 2000 + 5000,
    firstAt: 1000,
    lastAt: 5000,
    meanLatencyMs: 200,
  });
  assert.is(b!.key, 'b');
  assert.is(b!.hotMs, 1000);
  assert.is(b!.meanLatencyMs, undefined);
});

test('sorted by promotions then peak QPS, and limited', () => {
  const events = [
    ev('promote', 'x', 1, 10),
    ev('promote', 'y', 1, 50),
    ev('promote', 'z', 1, 5),
    ev('demote', 'z', 2),
    ev('promote', 'z', 3, 5),
  ];
  assert.equal(
    summarizeHistory(events, 10).map((s) => s.key),
    ['z', 'y', 'x'],
  );
  assert.equal(
    summarizeHistory(events, 10, 2).map((s) => s.key),
    ['z', 'y'],
  );
});

test.run();
