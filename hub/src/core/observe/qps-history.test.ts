import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { QpsHistory, type QpsSample } from './qps-history.ts';

const cold = () => 0;
const hot = (...rows: [string, number][]): QpsSample[] => rows.map(([key, qps]) => ({ app: 'shop', key, qps }));

/** an injected clock: the test decides every sample time */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

test('one sample per step, oldest first, with the sample times', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 10 });
  const c = clock();
  for (let i = 1; i <= 4; i++) {
    assert.ok(h.due(c.now()));
    h.sample(c.now(), hot(['a', i * 100]), cold);
    assert.not.ok(h.due(c.now() + 500), 'the same step is not due twice');
    h.sample(c.now() + 500, hot(['a', 9999]), cold); // ignored: same step
    c.advance(1000);
  }
  assert.equal(h.points('shop', 'a'), [
    [1_000_000, 100],
    [1_001_000, 200],
    [1_002_000, 300],
    [1_003_000, 400],
  ]);
  assert.equal(h.points('shop', 'missing'), []);
  assert.equal(h.points('other-app', 'a'), []);
});

test('the ring keeps the last `steps` samples and wraps', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 5 });
  const c = clock();
  for (let i = 1; i <= 12; i++) {
    h.sample(c.now(), hot(['a', i]), cold);
    c.advance(1000);
  }
  const points = h.points('shop', 'a');
  assert.equal(
    points.map(([, q]) => q),
    [8, 9, 10, 11, 12],
  );
  assert.is(points[4]![0] - points[0]![0], 4000);
});

test('steps the hub missed (a stall) are absent, not stale values', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 10 });
  const c = clock();
  h.sample(c.now(), hot(['a', 1]), cold);
  c.advance(1000);
  h.sample(c.now(), hot(['a', 2]), cold);
  c.advance(3000); // two steps skipped
  h.sample(c.now(), hot(['a', 5]), cold);
  assert.equal(
    h.points('shop', 'a').map(([, q]) => q),
    [1, 2, 5],
  );
  // a stall longer than the ring: only samples inside it are shown
  c.advance(9000);
  h.sample(c.now(), hot(['a', 14]), cold);
  assert.equal(
    h.points('shop', 'a').map(([, q]) => q),
    [5, 14],
  );
});

test('a demoted key keeps its curve, sampled from coldQps, until retainMs ends', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 60, retainMs: 3000 });
  const c = clock();
  let coldCalls = 0;
  const decaying = (app: string, key: string) => {
    coldCalls++;
    assert.equal([app, key], ['shop', 'a']);
    return 40;
  };
  h.sample(c.now(), hot(['a', 500]), decaying);
  c.advance(1000);
  h.sample(c.now(), hot(['a', 600]), decaying);
  assert.is(coldCalls, 0, 'hot keys are not asked for');
  for (let i = 0; i < 3; i++) {
    c.advance(1000);
    h.sample(c.now(), [], decaying);
  }
  assert.equal(
    h.points('shop', 'a').map(([, q]) => q),
    [500, 600, 40, 40, 40],
  );
  assert.is(h.size, 1);
  c.advance(1000);
  h.sample(c.now(), [], decaying);
  assert.is(h.size, 0, 'dropped once retainMs has passed since it was last hot');
  assert.equal(h.points('shop', 'a'), []);
});

test('a key hot again within retainMs continues its history', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 60, retainMs: 5000 });
  const c = clock();
  h.sample(c.now(), hot(['a', 500]), cold);
  c.advance(1000);
  h.sample(c.now(), [], () => 10);
  c.advance(1000);
  h.sample(c.now(), hot(['a', 700]), cold);
  assert.equal(
    h.points('shop', 'a').map(([, q]) => q),
    [500, 10, 700],
  );
});

test('bounded by maxKeys: the hottest keys are kept, a reused slot starts a fresh history', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 10, maxKeys: 3 });
  const c = clock();
  h.sample(c.now(), hot(['a', 10], ['b', 20], ['c', 30], ['d', 5], ['e', 1]), cold);
  assert.is(h.size, 3);
  assert.equal(h.points('shop', 'd'), [], 'cooler than every tracked key');
  c.advance(1000);
  // x is hotter than the coolest tracked key (a): it takes a's slot with no trace of a's values
  h.sample(c.now(), hot(['a', 10], ['b', 20], ['c', 30], ['x', 25]), cold);
  assert.is(h.size, 3);
  assert.equal(h.points('shop', 'a'), []);
  assert.equal(
    h.points('shop', 'x').map(([, q]) => q),
    [25],
  );
  assert.equal(
    h.points('shop', 'c').map(([, q]) => q),
    [30, 30],
  );
});

test('when full, a key that stopped being hot gives way before any hot key', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 10, maxKeys: 2 });
  const c = clock();
  h.sample(c.now(), hot(['a', 1000], ['b', 5]), cold);
  c.advance(1000);
  h.sample(c.now(), hot(['b', 5]), () => 900); // a demoted, still busy
  c.advance(1000);
  h.sample(c.now(), hot(['b', 5], ['n', 6]), () => 900);
  assert.equal(h.points('shop', 'a'), [], 'the demoted key went first, whatever its QPS');
  assert.equal(
    h.points('shop', 'b').map(([, q]) => q),
    [5, 5, 5],
  );
  assert.equal(
    h.points('shop', 'n').map(([, q]) => q),
    [6],
  );
});

test('memory stays bounded under heavy churn of hot keys', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 20, maxKeys: 100, retainMs: 60_000 });
  const c = clock();
  for (let round = 0; round < 50; round++) {
    const rows = Array.from({ length: 500 }, (_, i): [string, number] => [`k${round}:${i}`, 1000 + i]);
    h.sample(c.now(), hot(...rows), () => 1);
    c.advance(1000);
    assert.ok(h.size <= 100, `size ${h.size}`);
  }
  // the last round's 100 hottest are the ones kept
  assert.equal(
    h.points('shop', 'k49:499').map(([, q]) => q),
    [1499],
  );
  assert.equal(h.points('shop', 'k49:399'), []);
});

test('apps are separate, and bad QPS values are stored as 0', () => {
  const h = new QpsHistory({ stepMs: 100, steps: 10 });
  h.sample(
    100,
    [
      { app: 'a', key: 'k', qps: 5 },
      { app: 'b', key: 'k', qps: Number.NaN },
      { app: 'c', key: 'k', qps: -3 },
    ],
    cold,
  );
  assert.equal(h.points('a', 'k'), [[100, 5]]);
  assert.equal(h.points('b', 'k'), [[100, 0]]);
  assert.equal(h.points('c', 'k'), [[100, 0]]);
});

test('a clock that steps back is ignored', () => {
  const h = new QpsHistory({ stepMs: 1000, steps: 10 });
  h.sample(5000, hot(['a', 1]), cold);
  assert.not.ok(h.due(3000));
  h.sample(3000, hot(['a', 2]), cold);
  assert.equal(h.points('shop', 'a'), [[5000, 1]]);
});

test.run();
