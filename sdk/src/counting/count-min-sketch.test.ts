import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CountMinSketch, INITIAL_WIDTH } from './count-min-sketch.ts';

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

test('grows by doubling as keys arrive, never past its width, and never under-counts across a resize', () => {
  const s = new CountMinSketch({ width: 16 * INITIAL_WIDTH, depth: 4 });
  assert.is(s.currentWidth, INITIAL_WIDTH, 'starts small');
  const truth = new Map<string, number>();
  const widths = new Set<number>();
  for (let i = 0; i < 40 * INITIAL_WIDTH; i++) {
    const key = `k${(i * 7919) % (20 * INITIAL_WIDTH)}`;
    s.increment(key);
    truth.set(key, (truth.get(key) ?? 0) + 1);
    widths.add(s.currentWidth);
  }
  assert.equal(
    [...widths],
    [1, 2, 4, 8, 16].map((f) => f * INITIAL_WIDTH),
    'doubles one step at a time',
  );
  assert.is(s.currentWidth, s.width, 'stops at the bound');
  for (const [key, n] of truth) assert.ok(s.estimate(key) >= n, `${key}: estimate ${s.estimate(key)} under ${n}`);
});

test('an idle sketch folds back to its initial width, still never under-counting', () => {
  const s = new CountMinSketch({ width: 8 * INITIAL_WIDTH, depth: 4 });
  for (let i = 0; i < 4 * INITIAL_WIDTH; i++) s.increment(`flood:${i}`);
  for (let i = 0; i < 50; i++) s.increment('steady');
  assert.is(s.currentWidth, 8 * INITIAL_WIDTH);
  const seen: number[] = [];
  for (let i = 0; i < 12; i++) {
    s.halve();
    seen.push(s.currentWidth);
    // true count after i + 1 halvings, rounded down each time: the estimate must stay at or above it
    assert.ok(s.estimate('steady') >= 50 >> (i + 1), `estimate ${s.estimate('steady')} after ${i + 1} halvings`);
  }
  assert.is(s.currentWidth, INITIAL_WIDTH, `shrank step by step: ${seen.join(', ')}`);
  assert.ok(seen[0]! > INITIAL_WIDTH, 'not all at once while counts remain');
  // and it grows again when keys come back; clear returns to the initial width at once
  for (let i = 0; i < 2 * INITIAL_WIDTH; i++) s.increment(`again:${i}`);
  assert.ok(s.currentWidth > INITIAL_WIDTH);
  s.clear();
  assert.is(s.currentWidth, INITIAL_WIDTH);
  assert.is(s.estimate('again:1'), 0);
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
