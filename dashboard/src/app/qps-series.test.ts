import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { QpsSeries } from './qps-series.ts';

test('samples wrap in a fixed ring, oldest first', () => {
  const s = new QpsSeries({ capacity: 3 });
  for (let t = 1; t <= 5; t++) s.sample(t * 1000, [['a', t * 10]]);
  assert.equal(s.values('a'), [30, 40, 50]);
  assert.equal(s.times('a'), [3000, 4000, 5000]);
  assert.equal(s.values('a', 2), [40, 50]);
  assert.equal(s.values('missing'), []);
});

test('rows that leave are forgotten unless pinned; pinned rows read 0', () => {
  const s = new QpsSeries({ capacity: 4 });
  s.sample(1, [
    ['a', 1],
    ['b', 2],
  ]);
  s.pin('b');
  s.sample(2, [['a', 3]]);
  assert.equal(s.values('b'), [2, 0]);
  s.sample(3, []);
  assert.equal(s.values('a'), []);
  assert.is(s.size, 1);
  s.pin(undefined);
  s.sample(4, []);
  assert.is(s.size, 0);
});

test('the number of tracked rows is bounded', () => {
  const s = new QpsSeries({ capacity: 2, maxSeries: 100 });
  s.sample(
    1,
    Array.from({ length: 1000 }, (_, i): [string, number] => [`k${i}`, i]),
  );
  assert.is(s.size, 100);
});

test('a reused slot starts a fresh history', () => {
  const s = new QpsSeries({ capacity: 4, maxSeries: 1 });
  s.sample(1, [['a', 5]]);
  s.sample(2, [['a', 6]]);
  s.sample(3, [['b', 7]]);
  assert.equal(s.values('b'), [7]);
  assert.equal(s.times('b'), [3]);
  assert.equal(s.values('a'), []);
});

test.run();
