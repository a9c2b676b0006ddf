/**
 * The reference pages say what the code says: the generated sections of docs/reference/*.md are
 * regenerated in memory from the sources (test/support/reference) and compared with the files; a
 * difference fails naming the page, the section and the first line that differs. The sources must
 * give every public option a doc comment and a `@default` that agrees with its defaults object.
 * `pnpm docs:reference` rewrites the pages.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { drift, generate } from '../support/reference/pages.ts';
import { checkOptions, literalOf } from '../support/reference/options-sections.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const generated = await generate(root);

test('every public option, route and code has a doc comment, and every @default agrees with its defaults object', () => {
  assert.equal(generated.problems, [], `fix the sources:\n${generated.problems.join('\n')}`);
});

test('the reference pages match the code (pnpm docs:reference rewrites them)', () => {
  const drifted = drift(root, generated);
  assert.equal(drifted, [], `run \`pnpm docs:reference\`:\n${drifted.join('\n')}`);
});

test('a page whose table lost a row, or lacks its markers, is named with its section', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'hotkey-reference-'));
  try {
    mkdirSync(join(scratch, 'docs'), { recursive: true });
    cpSync(join(root, 'docs/reference'), join(scratch, 'docs/reference'), { recursive: true });
    const tunables = join(scratch, 'docs/reference/hub-tunables.md');
    writeFileSync(tunables, readFileSync(tunables, 'utf8').replace(/^\| `tickMs` .*\n/m, ''));
    const errors = join(scratch, 'docs/reference/errors.md');
    writeFileSync(errors, readFileSync(errors, 'utf8').replace('<!-- generated:begin close-codes -->', ''));
    const drifted = drift(scratch, generated).filter((d) => /hub-tunables|errors/.test(d));
    assert.is(drifted.length, 2, drifted.join('\n'));
    assert.match(
      drifted[0] ?? '',
      /^docs\/reference\/hub-tunables\.md, section hub-tunables, table line \d+:\n {2}page: \| `statusIntervalMs`/,
    );
    assert.match(drifted[1] ?? '', /^docs\/reference\/errors\.md: no generated section "close-codes"/);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('a @default that disagrees with the defaults object, or is missing, is a problem', () => {
  const option = { type: 'number', doc: 'd', optional: true, at: 'x.ts:1' };
  const defaults = [{ prefix: '', values: { a: 100, b: 1 << 20, c: 5 }, name: 'DEFAULTS' }];
  const problems = checkOptions(
    'Example',
    [
      { ...option, name: 'a', default: '100' },
      { ...option, name: 'b', default: '1048576 (1 MiB)' },
      { ...option, name: 'c', default: '50' },
      { ...option, name: 'd', default: undefined },
      { ...option, name: 'e', default: 'silent', doc: '' },
    ],
    defaults,
  );
  assert.equal(problems, [
    'x.ts:1: Example option c says @default 50, but DEFAULTS.c is 5',
    'x.ts:1: Example option d has no @default',
    'x.ts:1: Example option e has no doc comment',
  ]);
  assert.is(literalOf("'invalidate'"), 'invalidate');
  assert.is(literalOf('true ({ failures: 5 })'), true);
  assert.is(literalOf('10_000'), 10_000);
});

test.run();
