import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emptySlot, LocalCache, MISS } from './local-cache.ts';

test('bounded: the least recently used entry leaves and is counted', () => {
  const cache = new LocalCache({ maxEntries: 3 });
  for (const k of ['a', 'b', 'c']) cache.set(k, k.toUpperCase(), 100);
  assert.is(cache.get('a', 0), 'A'); // a becomes most recent
  cache.set('d', 'D', 100);
  assert.is(cache.size, 3);
  assert.is(cache.evictions, 1);
  assert.is(cache.get('b', 0), MISS);
  assert.is(cache.get('a', 0), 'A');
  assert.is(cache.get('d', 0), 'D');
  for (let i = 0; i < 1000; i++) cache.set(`k${i}`, i, 100);
  assert.is(cache.size, 3);
  assert.is(cache.evictions, 1001);
});

test('replacing a key is not an eviction', () => {
  const cache = new LocalCache({ maxEntries: 2 });
  cache.set('a', 1, 100);
  cache.set('a', 2, 100);
  assert.is(cache.evictions, 0);
  assert.is(cache.get('a', 0), 2);
});

test('per-entry expiry against the injected clock', () => {
  const cache = new LocalCache();
  cache.set('short', 's', 50);
  cache.set('long', 'l', 500);
  assert.is(cache.get('short', 49), 's');
  assert.is(cache.get('short', 50), MISS);
  assert.is(cache.has('short'), false);
  assert.is(cache.get('long', 499), 'l');
  assert.is(cache.expirations, 1);
});

test('__proto__, constructor and hasOwnProperty are ordinary keys', () => {
  const cache = new LocalCache({ maxEntries: 4 });
  cache.set('__proto__', 'p', 100);
  cache.set('constructor', 'c', 100);
  cache.set('hasOwnProperty', 'h', 100);
  assert.is(cache.get('__proto__', 0), 'p');
  assert.is(cache.get('constructor', 0), 'c');
  assert.is(cache.get('hasOwnProperty', 0), 'h');
  assert.is(cache.get('toString', 0), MISS);
  assert.ok(cache.delete('__proto__'));
  assert.is(cache.get('__proto__', 0), MISS);
  assert.is(cache.size, 2);
});

test('undefined is a value, not a miss', () => {
  const cache = new LocalCache();
  cache.set('u', undefined, 10);
  assert.is(cache.get('u', 0), undefined);
});

test('a caller-owned slot holds the value and a resolved promise until any removal empties it', async () => {
  const cache = new LocalCache({ maxEntries: 2 });
  const a = emptySlot();
  const b = emptySlot();
  const c = emptySlot();
  cache.set('a', 'A', 100, a);
  assert.is(a.value, 'A');
  assert.is(await a.promise, 'A');
  assert.is(a.expiresAt, 100);
  cache.set('b', 'B', 100, b);
  cache.touch('a'); // a becomes most recent: b is the LRU entry
  cache.set('c', 'C', 100, c);
  assert.is(b.promise, undefined, 'evicted: emptied');
  assert.is(b.value, undefined);
  assert.is(cache.get('b', 0), MISS);
  assert.is(a.value, 'A');
  assert.ok(cache.delete('a'));
  assert.is(a.promise, undefined, 'deleted: emptied');
  // expiry through get empties the slot too
  assert.is(cache.get('c', 100), MISS);
  assert.is(c.promise, undefined);
  assert.is(cache.expirations, 1);
  // a new slot for a key empties the one it replaces; clear empties everything
  const c2 = emptySlot();
  cache.set('c', 1, 100, c);
  cache.set('c', 2, 100, c2);
  assert.is(c.promise, undefined);
  assert.is(await c2.promise, 2);
  assert.is(cache.evictions, 1, 'a replacement is not an eviction');
  cache.clear();
  assert.is(c2.promise, undefined);
  assert.is(cache.size, 0);
});

test('the bound is a maximum, not an allocation: a large maxEntries costs nothing up front', () => {
  // an array-backed LRU allocates its pointer arrays for the bound (here ≥ 8 MB) before the first entry
  const before = process.memoryUsage().arrayBuffers;
  const cache = new LocalCache({ maxEntries: 2_000_000 });
  assert.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024, 'no buffer sized for the bound');
  for (let i = 0; i < 100; i++) cache.set(`k${i}`, i, 100);
  assert.is(cache.size, 100);
  assert.is(cache.evictions, 0);
  for (let i = 0; i < 100; i++) assert.ok(cache.delete(`k${i}`));
  assert.is(cache.size, 0);
  cache.set('again', 1, 100);
  assert.is(cache.get('again', 0), 1);
});

test('eviction order follows get and touch, across deletes and clear', () => {
  const cache = new LocalCache({ maxEntries: 3 });
  cache.set('a', 1, 100);
  cache.set('b', 2, 100);
  cache.set('c', 3, 100);
  cache.touch('a'); // order, oldest first: b c a
  cache.get('b', 0); // c a b
  cache.delete('a'); // c b
  cache.set('d', 4, 100); // c b d
  cache.set('e', 5, 100); // evicts c
  assert.is(cache.get('c', 0), MISS);
  assert.equal(
    ['b', 'd', 'e'].map((k) => cache.get(k, 0)),
    [2, 4, 5],
  );
  cache.set('f', 6, 100); // evicts b (d, e were read after it)
  assert.is(cache.has('b'), false);
  assert.is(cache.evictions, 2);
  cache.clear();
  for (const k of ['x', 'y', 'z', 'w']) cache.set(k, k, 100);
  assert.is(cache.size, 3);
  assert.is(cache.has('x'), false);
});

test('growth: a full map below maxEntries doubles (capped there), keeps every entry and its recency, never evicts', () => {
  const cache = new LocalCache({ maxEntries: 300 });
  assert.is(cache.capacity, 64);
  const slots = Array.from({ length: 300 }, () => emptySlot());
  for (let i = 0; i < 64; i++) cache.set(`k${i}`, i, 100, slots[i]);
  assert.is(cache.capacity, 64, 'a full map grows only for a key it does not hold');
  cache.set('k0', 0, 100, slots[0]);
  assert.is(cache.capacity, 64);
  cache.touch('k1'); // k1 is now the most recent; k2 the least
  for (let i = 64; i < 300; i++) cache.set(`k${i}`, i, 100, slots[i]);
  assert.is(cache.capacity, 300, '64 → 128 → 256 → 300 (the bound)');
  assert.is(cache.size, 300);
  assert.is(cache.evictions, 0);
  for (let i = 0; i < 300; i++) assert.ok(slots[i]?.promise !== undefined, `k${i} kept through the rebuilds`);
  // full at the bound: the next keys evict in recency order carried across every rebuild
  cache.set('n0', 'n', 100);
  cache.set('n1', 'n', 100);
  assert.is(cache.capacity, 300);
  assert.is(cache.evictions, 2);
  assert.is(cache.has('k2'), false);
  assert.is(cache.has('k3'), false);
  assert.is(slots[2]?.promise, undefined, 'an evicted slot is emptied');
  assert.ok(cache.has('k0'));
  assert.ok(cache.has('k1'));
  assert.is(cache.get('k4', 0), 4);
});

test('shrink: deletes leaving the map under a quarter full halve it, never below 64; clear starts over', () => {
  const cache = new LocalCache({ maxEntries: 10_000 });
  for (let i = 0; i < 1024; i++) cache.set(`k${i}`, i, 100);
  assert.is(cache.capacity, 1024);
  for (let i = 0; i < 700; i++) cache.delete(`k${i}`);
  assert.is(cache.capacity, 1024, 'a third full is not under a quarter');
  for (let i = 700; i < 800; i++) cache.delete(`k${i}`);
  assert.is(cache.size, 224);
  assert.is(cache.capacity, 512, 'under a quarter full: halved, once');
  for (let i = 800; i < 1024; i++) assert.is(cache.get(`k${i}`, 0), i);
  for (let i = 800; i < 1020; i++) cache.delete(`k${i}`);
  assert.is(cache.capacity, 64);
  // recency survives a shrink: the four left were read in order k1020..k1023; fill to evict
  cache.touch('k1020');
  for (let i = 0; i < 10_000 - 4; i++) cache.set(`f${i}`, i, 100);
  cache.set('last', 1, 100);
  assert.is(cache.evictions, 1);
  assert.is(cache.has('k1021'), false, 'the least recent leaves first');
  assert.ok(cache.has('k1020'));
  cache.clear();
  assert.is(cache.size, 0);
  assert.is(cache.capacity, 64);
});

test('loads one mnemonist structure, not the package root (which loads them all)', () => {
  const req = createRequire(import.meta.url);
  const loaded = Object.keys(req.cache).filter((file) => /[\\/]mnemonist[\\/]/.test(file));
  assert.ok(
    loaded.some((file) => file.endsWith('lru-map-with-delete.js')),
    'the cache runs on mnemonist',
  );
  const others = loaded.filter(
    (file) => !/(lru-map|lru-cache|lru-map-with-delete|typed-arrays|iterables)\.js$/.test(file),
  );
  assert.equal(others, [], 'nothing but the LRU map and its helpers');
});

test('bad maxEntries is a TypeError', () => {
  assert.throws(
    () => new LocalCache({ maxEntries: 0 }),
    (e: unknown) => e instanceof TypeError,
  );
  assert.throws(
    () => new LocalCache({ maxEntries: 1.5 }),
    (e: unknown) => e instanceof TypeError,
  );
});

test.run();
