import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileGlob } from './glob.ts';

/** The backtracking reference the matcher replaces: same semantics, exponential on bad input. */
function reference(glob: string): RegExp {
  let source = '';
  for (const ch of glob) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[\\^$.+()|[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

test('literals, ? and * match as a glob does', () => {
  const cases: [string, string, boolean][] = [
    ['item:*', 'item:42', true],
    ['item:*', 'item:', true],
    ['item:*', 'ite', false],
    ['*', '', true],
    ['', '', true],
    ['', 'a', false],
    ['a?c', 'abc', true],
    ['a?c', 'ac', false],
    ['*:flash-*', 'item:flash-1', true],
    ['*:flash-*', 'item:flash', false],
    ['a*b*c', 'aXbYc', true],
    ['a*b*c', 'aXcYb', false],
    ['**x', 'x', true],
    ['x**', 'xyz', true],
    ['a.b', 'aXb', false],
    ['(a)+', '(a)+', true],
    ['é?', 'éa', true],
  ];
  for (const [glob, key, expected] of cases) assert.is(compileGlob(glob).test(key), expected, `${glob} ~ ${key}`);
});

test('agrees with the regular-expression reference on random globs and keys', () => {
  let seed = 7;
  const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) / 65536;
  const pick = (alphabet: string, max: number) => {
    let s = '';
    const n = Math.floor(next() * max);
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(next() * alphabet.length)];
    return s;
  };
  for (let i = 0; i < 5000; i++) {
    const glob = pick('ab*?:', 8);
    const key = pick('ab:', 10);
    assert.is(compileGlob(glob).test(key), reference(glob).test(key), `${glob} ~ ${key}`);
  }
});

test('globs longer than one 32-bit word carry state across words', () => {
  const glob = `${'a?'.repeat(40)}*z`;
  assert.ok(compileGlob(glob).test(`${'ab'.repeat(40)}xyz`));
  assert.not.ok(compileGlob(glob).test(`${'ab'.repeat(40)}xy`));
  assert.ok(compileGlob(`${'x'.repeat(70)}`).test('x'.repeat(70)));
  assert.not.ok(compileGlob(`${'x'.repeat(70)}`).test('x'.repeat(71)));
});

test('a pathological glob against a long key answers without backtracking', () => {
  // `*a` ten times then `b` against 1024 a's: a backtracking regex would not finish within the
  // test runner's deadline; the automaton makes one pass
  const evil = compileGlob(`${'*a'.repeat(10)}b`);
  const colons = compileGlob('*:*:*:*:x');
  assert.not.ok(evil.test('a'.repeat(1024)));
  assert.not.ok(colons.test(':'.repeat(1024)));
  assert.ok(colons.test(`${':'.repeat(1023)}x`));
});

test.run();
