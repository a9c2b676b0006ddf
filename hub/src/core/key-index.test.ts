import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KeyIndex } from './key-index.ts';

/** a deterministic random source, so a failure replays */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x1_0000_0000;
  };
}

test('agrees with a Map under random sets, overwrites and deletes (growth and backward-shift deletion)', () => {
  for (const seed of [1, 2, 3]) {
    const random = lcg(seed);
    // seed 0 on a tiny key space: long probe runs, many wrap-arounds at the table's end
    const index = new KeyIndex(seed === 3 ? 0 : seed);
    const reference = new Map<string, number>();
    const space = seed === 3 ? 40 : 5000;
    for (let op = 0; op < 40_000; op++) {
      const key = `k:${Math.floor(random() * space)}`;
      const r = random();
      if (r < 0.55) {
        const value = Math.floor(random() * 1e6);
        index.set(key, value);
        reference.set(key, value);
      } else if (r < 0.85) {
        assert.is(index.delete(key), reference.delete(key), `delete ${key} at op ${op}`);
      } else {
        assert.is(index.get(key), reference.get(key), `get ${key} at op ${op}`);
      }
      assert.is(index.size, reference.size);
    }
    for (const [key, value] of reference) assert.is(index.get(key), value, key);
    assert.equal(new Map(index), reference, 'iteration yields exactly the stored pairs');
    index.clear();
    assert.is(index.size, 0);
    assert.is(index.get([...reference.keys()][0] ?? 'k:0'), undefined);
  }
});

test('keys that look like object internals and the empty key are ordinary keys', () => {
  const index = new KeyIndex();
  for (const [i, key] of ['__proto__', 'constructor', '', 'toString', 'a\u0000b', '🔥'].entries()) index.set(key, i);
  assert.is(index.get('__proto__'), 0);
  assert.is(index.get(''), 2);
  assert.is(index.get('🔥'), 5);
  assert.ok(index.has('constructor'));
  assert.not.ok(index.has('hasOwnProperty'));
});

test.run();
