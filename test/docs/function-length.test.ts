/**
 * No long closures in shipped sources (hub/src, sdk/src, dashboard/src, tests aside), measured
 * with the TypeScript compiler API (test/support/function-lengths.ts). The goal is no function
 * over 150 lines and at most 3 over 100; the limits below are today's figures, lowered as the
 * long functions are split, so the count can only go down. A function that grows past a limit
 * fails here, named with its file and line.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { functionsOf, longFunctions } from '../support/function-lengths.ts';

/** The goal: none over 150 lines, at most 3 over 100. */
const GOAL = { over150: 0, over100: 3 };
/** Today's figures, below the goal: the count may only go down. */
const LIMIT = { over150: 0, over100: 0 };

const show = (fs: { file: string; line: number; name: string; lines: number }[]) =>
  fs.map((f) => `${f.lines} lines  ${f.file}:${f.line}  ${f.name}`).join('\n  ');

test('functions over 150 lines: no more than today', () => {
  const long = longFunctions(151);
  assert.ok(long.length <= LIMIT.over150, `${long.length} functions over 150 lines:\n  ${show(long)}`);
  assert.ok(LIMIT.over150 <= GOAL.over150, 'the limit never rises above the goal');
});

test('functions over 100 lines: no more than today', () => {
  const long = longFunctions(101);
  assert.ok(long.length <= LIMIT.over100, `${long.length} functions over 100 lines:\n  ${show(long)}`);
  assert.ok(LIMIT.over100 <= GOAL.over100, 'the limit never rises above the goal');
});

test('the hub and the dashboard have no function over 100 lines outside hub/src/core', () => {
  const long = longFunctions(101, ['hub/src', 'dashboard/src']).filter((f) => !f.file.startsWith('hub/src/core/'));
  assert.equal(show(long), '');
});

test('the measure counts a function from its first token to its closing brace, nested ones whole', () => {
  const fs = functionsOf('test/support/function-lengths.ts');
  const nameOf = fs.find((f) => f.name === 'nameOf');
  assert.ok(nameOf !== undefined && nameOf.lines > 10 && nameOf.lines < 40, JSON.stringify(nameOf));
  const own = fs.find((f) => f.name === 'own');
  assert.ok(own !== undefined && own.line > nameOf.line && own.lines < nameOf.lines);
});

test.run();
