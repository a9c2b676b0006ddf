import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeCost, guarded, meanOf, medianOf, minus, scaled } from './estimate.ts';

test('meanOf: mean and standard error of the mean', () => {
  const e = meanOf([1, 2, 3, 4, 5]);
  assert.is(e.value, 3);
  assert.ok(Math.abs(e.se - Math.sqrt(2.5 / 5)) < 1e-12);
  assert.is(e.n, 5);
  assert.equal(meanOf([7]), { value: 7, se: 0, n: 1 });
  assert.ok(Number.isNaN(meanOf([]).value));
});

test('medianOf: a spike moves neither the median nor its standard error', () => {
  const calm = medianOf([10, 11, 9, 10, 12]);
  const spiked = medianOf([10, 11, 9, 10, 60]);
  assert.is(spiked.value, 10);
  // MAD of |0,1,1,0,50| is 1: se = 1.2533 · 1.4826 · 1 / √5, as without the spike
  assert.ok(Math.abs(spiked.se - (1.2533 * 1.4826) / Math.sqrt(5)) < 1e-12);
  assert.is(spiked.se, calm.se);
  assert.ok(meanOf([10, 11, 9, 10, 60]).se > 5 * spiked.se, 'the mean is not so robust');
  assert.is(medianOf([1, 3, 2, 4]).value, 2.5);
});

test('minus and scaled carry the standard error', () => {
  const d = minus({ value: 10, se: 3, n: 4 }, { value: 4, se: 4, n: 5 });
  assert.equal(d, { value: 6, se: 5, n: 4 });
  assert.equal(scaled({ value: 6, se: 5, n: 4 }, -0.5), { value: -3, se: 2.5, n: 4 });
});

test('guarded: a fit clear of its noise is the cost', () => {
  const c = guarded({ value: 10, se: 2, n: 5 });
  assert.ok(c.separable);
  assert.is(c.value, 10);
  assert.match(describeCost(c), /^fit 10\.0 ± 2\.0, n = 5$/);
});

test('guarded: a negative fit is never a negative cost, it is bounded from above', () => {
  const c = guarded({ value: -81.7, se: 50, n: 5 });
  assert.not.ok(c.separable);
  assert.ok(Math.abs(c.value - 18.3) < 1e-9);
  assert.match(describeCost(c), /not separable from noise \(fit -81\.7 ± 50\.0, n = 5\), bounded by 18\.3/);
  // so far below zero that even the bound is: 0, not negative
  assert.is(guarded({ value: -100, se: 10, n: 3 }).value, 0);
});

test('guarded: a positive fit within its noise is bounded, not taken', () => {
  const c = guarded({ value: 3, se: 2, n: 5 });
  assert.not.ok(c.separable);
  assert.is(c.value, 7);
});

test('guarded: a single positive measurement stands; a non-finite one is 0, not separable', () => {
  assert.ok(guarded({ value: 5, se: 0, n: 1 }).separable);
  const nan = guarded({ value: Number.NaN, se: Number.NaN, n: 0 });
  assert.not.ok(nan.separable);
  assert.is(nan.value, 0);
});

test.run();
