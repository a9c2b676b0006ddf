import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CountMinSketch } from './count-min-sketch.ts';

test('increment returns the new estimate; estimate reads it without counting', () => {
  const s = new CountMinSketch({ width: 1024, depth: 4 });
  assert.is(s.estimate('a'), 0);
  assert.is(s.increment('a'), 1);
  assert.is(s.increment('a'), 2);
  assert.is(s.estimate('a'), 2);
  assert.is(s.estimate('a'), 2, 'estimate does not count');
  assert.is(s.estimate('b'), 0);
});

test('never under-counts, and over-counts little on a sparse sketch', () => {
  const s = new CountMinSketch({ width: 4096, depth: 4 });
  const truth = new Map<string, number>();
  for (let i = 0; i < 2000; i++) {
    const key = `k${i % 500}`;
    s.increment(key);
    truth.set(key, (truth.get(key) ?? 0) + 1);
  }
  let over = 0;
  for (const [key, n] of truth) {
    const e = s.estimate(key);
    assert.ok(e >= n, `${key}: estimate ${e} under the true ${n}`);
    over += e - n;
  }
  assert.ok(over / truth.size < 1, `mean over-count ${over / truth.size}`);
});

test('width rounds up to a power of two', () => {
  assert.is(new CountMinSketch({ width: 1000 }).width, 1024);
  assert.is(new CountMinSketch({ width: 1 }).width, 1);
  assert.is(new CountMinSketch().width, 16384);
  assert.is(new CountMinSketch().depth, 4);
});

test('halve ages every counter and the noise floor; clear forgets everything', () => {
  const s = new CountMinSketch({ width: 16, depth: 2 });
  for (let i = 0; i < 9; i++) s.increment('a');
  assert.is(s.estimate('a'), 9);
  s.halve();
  assert.is(s.estimate('a'), 4);
  s.halve();
  assert.is(s.estimate('a'), 2);
  for (let i = 0; i < 64; i++) s.increment(`x${i}`);
  assert.ok(s.noiseFloor >= 4, `noise floor ${s.noiseFloor} after 64 distinct keys over 16 counters`);
  const floor = s.noiseFloor;
  s.halve();
  assert.is(s.noiseFloor, floor >> 1);
  s.clear();
  assert.is(s.estimate('a'), 0);
  assert.is(s.noiseFloor, 0);
});

test('counters saturate at 65535 instead of wrapping', () => {
  const s = new CountMinSketch({ width: 1, depth: 1 });
  for (let i = 0; i < 70_000; i++) s.increment('a');
  assert.is(s.estimate('a'), 0xffff);
  assert.is(s.increment('a'), 0xffff);
});

test('options are validated', () => {
  assert.throws(() => new CountMinSketch({ width: 0 }), TypeError);
  assert.throws(() => new CountMinSketch({ depth: 1.5 }), TypeError);
});

test.run();
