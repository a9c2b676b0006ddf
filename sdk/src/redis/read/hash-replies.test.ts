import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { flatHash, hashOf, inReplyOrder, pickFields } from './hash-replies.ts';

test('every HGETALL reply shape gives one cached form: a frozen own copy, in reply order', () => {
  const expected = { b: '2', a: '1' };
  const shapes: unknown[] = [
    ['b', '2', 'a', '1'],
    new Map([
      ['b', '2'],
      ['a', '1'],
    ]),
    { b: '2', a: '1' },
    Object.assign(Object.create(null), { b: '2', a: '1' }),
  ];
  for (const reply of shapes) {
    const hash = hashOf(reply)!;
    assert.equal({ ...hash }, expected);
    assert.equal(Object.keys(hash), ['b', 'a'], 'reply order');
    assert.ok(Object.isFrozen(hash));
    assert.is.not(hash, reply, 'a copy: the caller holding the reply cannot change the cache');
    assert.is(hashOf(hash), hash, 'a cached form is taken as it is');
  }
  const flat = ['f', 'v'];
  const hash = hashOf(flat)!;
  flat[1] = 'changed';
  assert.is(hash.f, 'v');
});

test('a field named __proto__ is a field; what is no hash of strings is refused', () => {
  const hash = hashOf(['__proto__', 'p', 'x', 'y'])!;
  assert.ok(Object.hasOwn(hash, '__proto__'));
  assert.is(Object.getPrototypeOf(hash), Object.prototype);
  assert.equal(Object.keys(hash), ['__proto__', 'x']);
  for (const bad of [
    null,
    'str',
    3,
    ['odd'],
    [Buffer.from('f'), 'v'],
    ['f', Buffer.from('v')],
    { f: 1 },
    Buffer.from('x'),
  ])
    assert.is(hashOf(bad), undefined, String(bad));
});

test('fields picked from a cached hash: null for a missing one, undefined when one cannot be given', () => {
  const hash = hashOf(['a', '1', 'b', '2'])!;
  assert.equal(pickFields(hash, ['b', 'none', 'a']), ['2', null, '1']);
  assert.equal(pickFields(hash, ['toString', 'constructor']), [null, null], 'no inherited names');
  assert.is(
    pickFields(hash, ['a', 'b'], (v) => (v === '2' ? undefined : v)),
    undefined,
  );
});

test("a cached hash as Redis's flat reply: every field, __proto__ included; undefined when a value cannot be given", () => {
  const hash = hashOf(['__proto__', 'p', 'x', 'y'])!;
  assert.equal(flatHash(hash), ['__proto__', 'p', 'x', 'y']);
  assert.equal(
    flatHash(hash, (v) => `<${String(v)}>`),
    ['__proto__', '<p>', 'x', '<y>'],
  );
  assert.is(
    flatHash(hash, (v) => (v === 'y' ? undefined : v)),
    undefined,
  );
  assert.equal(flatHash(hashOf([])!), []);
});

test('reply order is kept unless a field name is an array index (an object lists those first)', () => {
  assert.ok(inReplyOrder(hashOf(['x', '1', '01', '2', '-1', '3', '4294967295', '4'])!));
  for (const index of ['0', '10', '4294967294']) {
    const hash = hashOf(['x', '1', index, '2'])!;
    assert.not.ok(inReplyOrder(hash), index);
    assert.equal(Object.keys(hash), [index, 'x']);
  }
});

test.run();
