import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeRange, negotiateVersion, offeredRange } from './versions.ts';

test('a Hello without vmin offers its v alone', () => {
  assert.equal(offeredRange({ v: 1 }), [1, 1]);
  assert.equal(offeredRange({ v: 3, vmin: 2 }), [2, 3]);
});

test('the highest version both sides speak, within both minimums', () => {
  // hub [1, 2]
  assert.is(negotiateVersion({ v: 1 }, 1, 2), 1, 'the previous SDK');
  assert.is(negotiateVersion({ v: 2, vmin: 2 }, 1, 2), 2);
  assert.is(negotiateVersion({ v: 3, vmin: 2 }, 1, 2), 2, 'an SDK one version ahead');
  assert.is(negotiateVersion({ v: 3 }, 1, 2), undefined, 'an SDK ahead that offers nothing older');
  assert.is(negotiateVersion({ v: 0 }, 1, 2), undefined);
  // hub [2, 3] (one version ahead of this SDK)
  assert.is(negotiateVersion({ v: 2, vmin: 2 }, 2, 3), 2);
  assert.is(negotiateVersion({ v: 1 }, 2, 3), undefined, 'two versions apart');
});

test('ranges are named for refusals', () => {
  assert.is(describeRange(2, 2), 'version 2');
  assert.is(describeRange(1, 2), 'versions 1 to 2');
});

test.run();
