import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashSlot, keySlot, sameSlotName, shardNames, SLOTS } from './hash-slots.ts';

test('hashSlot matches the Redis Cluster specification examples and hash tags', () => {
  // "123456789" has CRC16-XMODEM 0x31C3 (the spec's check value); 12739 = 0x31C3 % 16384
  assert.is(hashSlot('123456789'), 0x31c3 % SLOTS);
  assert.is(hashSlot('foo'), 12182);
  assert.is(hashSlot('bar'), 5061);
  assert.is(hashSlot('{user1000}.following'), hashSlot('user1000'));
  assert.is(hashSlot('foo{{bar}}zap'), hashSlot('{bar'));
  assert.is(hashSlot('foo{bar}{zap}'), hashSlot('bar'));
  assert.is(hashSlot('é'), hashSlot(new TextEncoder().encode('é')), 'UTF-8 bytes');
});

test('keySlot, the deprecated name, is hashSlot', () => {
  assert.is(keySlot, hashSlot);
});

test('shard names fall into N equal slot ranges, differ per key and keep the key readable', () => {
  for (const n of [1, 2, 3, 20, 64]) {
    const names = shardNames('item:stock:1001', n);
    assert.is(names.length, n);
    assert.is(new Set(names).size, n);
    names.forEach((name, i) => {
      const slot = hashSlot(name);
      assert.ok(slot >= Math.floor((i * SLOTS) / n) && slot < Math.floor(((i + 1) * SLOTS) / n), `${name} → ${slot}`);
      assert.ok(name.endsWith('item:stock:1001'));
    });
  }
  assert.not.equal(shardNames('a', 3), shardNames('b', 3));
  // a key with its own hash tag: ours comes first and decides
  const tagged = shardNames('{user}:likes', 3);
  assert.is(new Set(tagged.map(hashSlot)).size, 3);
  assert.throws(() => shardNames('k', 0), /shards/);
});

test('sameSlotName keeps the slot, or refuses a key whose braces make it unreliable', () => {
  assert.is(hashSlot(sameSlotName('stock:1', ':x')!), hashSlot('stock:1'));
  assert.is(hashSlot(sameSlotName('{u}:n', ':x')!), hashSlot('{u}:n'));
  assert.is(sameSlotName('a}b', ':x'), undefined);
  assert.is(sameSlotName('a{}b', ':x'), undefined);
});

test.run();
