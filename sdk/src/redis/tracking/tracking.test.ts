import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { slotOf } from './tracking.ts';

test("slotOf is Redis Cluster's CRC16 mod 16384, honouring the first non-empty {hash tag}", () => {
  // values from CLUSTER KEYSLOT on Redis 7.0
  assert.is(slotOf('foo'), 12182);
  assert.is(slotOf('somekey'), 11058);
  assert.is(slotOf('{user1000}.following'), slotOf('user1000'));
  assert.is(slotOf('{user1000}.following'), slotOf('{user1000}.followers'));
  assert.is.not(slotOf('foo{}{bar}'), slotOf('bar'), 'an empty first tag: the whole key is hashed');
  assert.is(slotOf('{a}item'), slotOf('a'));
});

test.run();
