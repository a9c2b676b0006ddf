import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashBytes, hashString, KeyIndex } from './key-index.ts';

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

const utf8 = new TextEncoder();

/** `key`'s bytes inside a larger buffer (as in a frame: an offset, other bytes around) */
function embedded(key: string): [Uint8Array, number, number] {
  const bytes = utf8.encode(key);
  const buffer = new Uint8Array(bytes.length + 7).fill(0x61);
  buffer.set(bytes, 3);
  return [buffer, 3, bytes.length];
}

function lookupBytes(index: KeyIndex, key: string): number {
  return index.getBytes(...embedded(key));
}

test('a string and its UTF-8 bytes hash alike (ASCII, 2-, 3- and 4-byte characters, every tail length)', () => {
  const keys = [
    '',
    'a',
    'ab',
    'abc',
    'abcd',
    'abcde',
    'é',
    'aé',
    'abcé',
    'ü:€:𝄞',
    '🔥🔥',
    '日本語のキー',
    'x'.repeat(1024),
  ];
  for (const key of keys)
    for (const seed of [0, 1, 0xdeadbeef]) {
      const bytes = utf8.encode(key);
      assert.is(hashString(key, seed), hashBytes(bytes, 0, bytes.length, seed), `${key.slice(0, 12)} seed ${seed}`);
    }
});

test('getBytes agrees with get under random sets and deletes: short, long (past the inline bytes) and multibyte keys', () => {
  const random = lcg(7);
  const index = new KeyIndex(7);
  const reference = new Map<string, number>();
  const shapes = [
    (i: number) => `k:${i}`,
    (i: number) => `user:${i}:profile:settings:${i % 7}`, // longer than a bucket's inline bytes
    (i: number) => `ключ:${i}`,
    (i: number) => `🔥${i}`,
  ];
  for (let op = 0; op < 30_000; op++) {
    const key = shapes[op % shapes.length]!(Math.floor(random() * 800));
    const r = random();
    if (r < 0.6) {
      index.set(key, op);
      reference.set(key, op);
    } else if (r < 0.85) {
      index.delete(key);
      reference.delete(key);
    } else {
      assert.is(lookupBytes(index, key), reference.get(key) ?? -1, `bytes of ${key} at op ${op}`);
    }
  }
  for (const [key, value] of reference) {
    assert.is(index.get(key), value, key);
    assert.is(lookupBytes(index, key), value, key);
  }
});

test('keys whose hashes collide (fixed seed) stay apart, by string and by bytes', () => {
  // found by search: same length, same 32-bit hash under seed 0
  const [a, b] = ['k:138767', 'k:176429'];
  assert.is(hashString(a, 0), hashString(b, 0));
  const index = new KeyIndex(0);
  index.set(a, 1);
  assert.is(index.get(b), undefined);
  assert.is(lookupBytes(index, b), -1);
  index.set(b, 2);
  assert.is(index.get(a), 1);
  assert.is(index.get(b), 2);
  assert.is(lookupBytes(index, a), 1);
  assert.is(lookupBytes(index, b), 2);
  index.delete(a);
  assert.is(lookupBytes(index, a), -1);
  assert.is(lookupBytes(index, b), 2);
});

test('a key with a lone surrogate is its own key, apart from U+FFFD (what UTF-8 would turn it into)', () => {
  const index = new KeyIndex(3);
  index.set('a\ud800', 1);
  index.set('a\ufffd', 2);
  index.set('a\ud83d\udd25', 3); // a surrogate pair: 🔥
  assert.is(index.get('a\ud800'), 1);
  assert.is(lookupBytes(index, 'a\ufffd'), 2);
  assert.is(lookupBytes(index, 'a🔥'), 3);
  assert.is(index.size, 3);
});

test('bytes compare exactly after buckets are reused by keys of other lengths, and trailing NULs count', () => {
  // a 16-bucket table (never more than 7 keys): every round reuses buckets that held other keys
  const random = lcg(11);
  const index = new KeyIndex(0);
  for (let round = 0; round < 300; round++) {
    const keys = new Set<string>();
    while (keys.size < 7) {
      const length = Math.floor(random() * 22);
      keys.add(
        Array.from({ length }, () => String.fromCharCode(random() < 0.2 ? 0 : 97 + Math.floor(random() * 3))).join(''),
      );
    }
    const values = [...keys].map((key, i) => [key, round * 10 + i] as const);
    for (const [key, value] of values) index.set(key, value);
    for (const [key, value] of values) {
      assert.is(lookupBytes(index, key), value, JSON.stringify(key));
      if (!keys.has(`${key}\u0000`)) assert.is(lookupBytes(index, `${key}\u0000`), -1, `${JSON.stringify(key)} + NUL`);
      if (key.length > 0 && !keys.has(key.slice(0, -1)))
        assert.is(lookupBytes(index, key.slice(0, -1)), -1, `${JSON.stringify(key)} less its last byte`);
    }
    for (const [key] of values) index.delete(key);
    assert.is(index.size, 0);
  }
});

test.run();
