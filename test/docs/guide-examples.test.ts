/**
 * The guides' code cannot drift from what the tests run: every page of docs/guides includes its
 * example between markers, and the block is the example file, byte for byte.
 *
 *   <!-- example: examples/ioredis.ts -->
 *   ```ts
 *   …the file…
 *   ```
 *   <!-- end example -->
 *
 * Every example file is included by a page and run by a test of test/guides (which names its
 * path). `HOTKEY_WRITE_GUIDES=1` copies the files into the pages instead of failing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const guides = join(root, 'docs/guides');
const write = process.env.HOTKEY_WRITE_GUIDES === '1';
const BLOCK = /<!-- example: (\S+) -->\n```ts\n([\s\S]*?)```\n<!-- end example -->/g;

const pages = readdirSync(guides).filter((n) => n.endsWith('.md') && n !== 'README.md');
const examples = readdirSync(join(guides, 'examples')).filter((n) => n.endsWith('.ts'));
const guideTests = readdirSync(join(root, 'test/guides'))
  .filter((n) => n.endsWith('.test.ts'))
  .map((n) => readFileSync(join(root, 'test/guides', n), 'utf8'));

test('each guide page holds its example files exactly as they are', () => {
  const drifted: string[] = [];
  for (const page of pages) {
    const path = join(guides, page);
    const text = readFileSync(path, 'utf8');
    let blocks = 0;
    const updated = text.replace(BLOCK, (whole, file: string, shown: string) => {
      blocks++;
      const code = readFileSync(join(guides, file), 'utf8');
      if (shown === code) return whole;
      drifted.push(`${page}: ${file}`);
      return `<!-- example: ${file} -->\n\`\`\`ts\n${code}\`\`\`\n<!-- end example -->`;
    });
    assert.ok(blocks > 0, `${page} includes an example (<!-- example: examples/….ts -->)`);
    if (write && updated !== text) writeFileSync(path, updated);
  }
  if (!write)
    assert.equal(drifted, [], 'pages whose example differs from its file (HOTKEY_WRITE_GUIDES=1 copies them)');
});

test('every example is on a page and run by a guide test', () => {
  const included = new Set(
    pages.flatMap((p) => [...readFileSync(join(guides, p), 'utf8').matchAll(BLOCK)].map((m) => m[1])),
  );
  for (const file of examples) {
    assert.ok(included.has(`examples/${file}`), `docs/guides/examples/${file} is included by a page`);
    assert.ok(
      guideTests.some((t) => t.includes(`docs/guides/examples/${file}`)),
      `docs/guides/examples/${file} is run by a test in test/guides`,
    );
  }
});

test('the guides map links every page', () => {
  const map = readFileSync(join(guides, 'README.md'), 'utf8');
  for (const page of pages) assert.ok(map.includes(`](${page})`), `docs/guides/README.md links ${page}`);
});

test.run();
