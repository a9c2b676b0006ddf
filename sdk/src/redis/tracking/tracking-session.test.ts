import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_TRACKED_PREFIXES, resolveTrackingOptions, trackedPrefixes } from './tracking-session.ts';

test('prefixes: duplicates and prefixes inside another go (Redis refuses overlaps on one connection)', () => {
  assert.equal([...trackedPrefixes(['item:flash:', 'item:', 'user:', 'item:', 'user:1'])], ['item:', 'user:']);
  assert.equal([...trackedPrefixes(['a', ''])], ['']);
  assert.equal([...trackedPrefixes(undefined)], []);
  assert.equal([...resolveTrackingOptions({}).prefixes], []);
});

test('prefixes: anything but an array of at most 64 strings of at most 1024 characters is a TypeError', () => {
  const bad: Array<[unknown, RegExp]> = [
    ['item:', /must be an array of strings, got "item:"/],
    [{ 0: 'a' }, /must be an array of strings, got object/],
    [[1], /strings only, got number/],
    [['a', null], /strings only, got null/],
    [Array.from({ length: MAX_TRACKED_PREFIXES + 1 }, (_, n) => `p${n}`), /65 prefixes, more than 64/],
    [['x'.repeat(1025)], /1025 characters, more than 1024/],
  ];
  for (const [value, message] of bad)
    assert.throws(
      () => trackedPrefixes(value),
      (e: Error) => e instanceof TypeError && message.test(e.message),
    );
});

test.run();
