import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HotSet } from './hot-set.ts';

const P = { ttlMs: 1000, cacheTtlMs: 500, cache: true, qps: 10 };

test('promote, renew, expire', () => {
  const hot = new HotSet();
  const first = hot.promote('h1', 'k', P, 0);
  assert.ok(first.added);
  const gen = first.state.generation;
  const renewed = hot.promote('h1', 'k', { ...P, ttlMs: 2000 }, 500);
  assert.not.ok(renewed.added);
  assert.is(renewed.state.generation, gen, 'a renewal keeps the cached value valid');
  assert.is(renewed.state.until, 2500);
  assert.equal(hot.expire(2499), []);
  assert.equal(
    hot.expire(2500).map((s) => s.key),
    ['k'],
  );
  assert.is(hot.get('k'), undefined);
});

test('expire finds entries shortened after it last looked (stale mark, shorter renewal)', () => {
  const hot = new HotSet();
  hot.promote('h1', 'a', { ...P, ttlMs: 10_000 }, 0);
  hot.promote('h2', 'b', { ...P, ttlMs: 10_000 }, 0);
  hot.promote('h1', 'c', { ...P, ttlMs: 10_000 }, 0);
  assert.equal(hot.expire(100), []);
  assert.is(hot.markStale('h2', 100, 300), 1);
  hot.promote('h1', 'c', { ...P, ttlMs: 200 }, 100); // a renewal with a shorter lifetime
  assert.equal(hot.expire(299), []);
  assert.equal(
    hot.expire(300).map((s) => s.key),
    ['c'],
  );
  assert.equal(
    hot.expire(400).map((s) => s.key),
    ['b'],
  );
  assert.equal(hot.expire(9_999), []);
  assert.equal(
    hot.expire(10_000).map((s) => s.key),
    ['a'],
  );
  assert.is(hot.size, 0);
});

test('invalidate bumps the generation; demote drops', () => {
  const hot = new HotSet();
  const gen = hot.promote('h1', 'k', P, 0).state.generation;
  assert.ok(hot.invalidate('k'));
  assert.ok(hot.get('k')!.generation > gen);
  assert.not.ok(hot.invalidate('cold'));
  assert.ok(hot.demote('k'));
  assert.not.ok(hot.demote('k'));
});

test('a re-promotion after demotion has a fresh generation', () => {
  const hot = new HotSet();
  const gen = hot.promote('h1', 'k', P, 0).state.generation;
  hot.demote('k');
  assert.ok(hot.promote('h1', 'k', P, 0).state.generation !== gen);
});

test('switching cache off invalidates', () => {
  const hot = new HotSet();
  const gen = hot.promote('h1', 'k', P, 0).state.generation;
  assert.ok(hot.promote('h1', 'k', { ...P, cache: false }, 0).state.generation !== gen);
});

test('snapshot replaces only that hub entries', () => {
  const hot = new HotSet();
  hot.promote('h1', 'a', P, 0);
  hot.promote('h1', 'b', P, 0);
  hot.promote('h2', 'c', P, 0);
  const genB = hot.get('b')!.generation;
  const { removed, touched } = hot.replaceHub(
    'h1',
    [
      { key: 'b', ttlMs: 300, cacheTtlMs: 100, cache: true, qps: 1 },
      { key: 'd', ttlMs: 300, cacheTtlMs: 100, cache: true, qps: 1 },
    ],
    100,
  );
  assert.equal(removed, ['a']);
  assert.equal(touched.sort(), ['a', 'b']);
  assert.equal([...hot.keys()].sort(), ['b', 'c', 'd']);
  assert.ok(hot.get('b')!.generation !== genB, 'cannot vouch for a cached value across a resync');
  assert.is(hot.get('b')!.until, 400);
  assert.is(hot.get('c')!.hub, 'h2');
});

test('stale bound: a cut-off hub keys live at most maxStaleMs', () => {
  const hot = new HotSet();
  hot.promote('h1', 'a', { ...P, ttlMs: 60_000 }, 0);
  hot.promote('h1', 'short', { ...P, ttlMs: 100 }, 0);
  hot.promote('h2', 'b', { ...P, ttlMs: 60_000 }, 0);
  assert.is(hot.markStale('h1', 1000, 3000), 1);
  assert.is(hot.get('a')!.until, 4000);
  assert.is(hot.get('short')!.until, 100, 'never extended');
  assert.equal(
    hot
      .expire(4000)
      .map((s) => s.key)
      .sort(),
    ['a', 'short'],
  );
  assert.ok(hot.get('b'));
});

test('invalidateHub after a sequence gap', () => {
  const hot = new HotSet();
  hot.promote('h1', 'a', P, 0);
  hot.promote('h2', 'b', P, 0);
  const genA = hot.get('a')!.generation;
  const genB = hot.get('b')!.generation;
  assert.equal(hot.invalidateHub('h1'), ['a']);
  assert.ok(hot.get('a')!.generation !== genA);
  assert.is(hot.get('b')!.generation, genB);
});

test('bounded: the oldest promotion leaves', () => {
  const hot = new HotSet({ maxKeys: 2 });
  hot.promote('h', 'a', P, 0);
  hot.promote('h', 'b', P, 0);
  assert.is(hot.promote('h', 'c', P, 0).evicted, 'a');
  assert.is(hot.size, 2);
  assert.equal([...hot.keys()], ['b', 'c']);
});

test.run();
