/**
 * The layout page stays complete: every source file of hub/src, sdk/src and dashboard/src (tests
 * aside) is named in its section of docs/internals/layout.md, and every file a section names
 * exists. A new file without its line fails here, naming the file, so the layout a newcomer reads
 * is the tree.
 *
 * The `hub/src` section lists files in one bullet per folder (`- \`core/\` — …`), by their path
 * inside it; files at the top of src/ anywhere in the section. The `sdk/src` section lists one
 * `src/…` path a line. The `dashboard/src` section names files by their path in src/ or in app/.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Source files under `dir`, relative to it: TypeScript, not tests. */
function sources(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(relative(dir, path));
    }
  };
  walk(dir);
  return out.sort();
}

const LAYOUT = 'docs/internals/layout.md';

/** The text of the layout page's section on `pkg/src` (its heading: ``## `pkg/src` ``). */
function layoutSection(pkg: string): string {
  const text = readFileSync(join(root, LAYOUT), 'utf8');
  const heading = `\n## \`${pkg}/src\`\n`;
  const start = text.indexOf(heading);
  assert.ok(start >= 0, `${LAYOUT} has a "## \`${pkg}/src\`" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start + heading.length, end < 0 ? undefined : end);
}

const backticked = (text: string): string[] => [...text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!);

const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** The dashboard's section; a name is a file of dashboard/src or of dashboard/src/app. */
function dashboardLayout(): { named: Set<string>; stale: string[] } {
  const named = new Set<string>();
  const stale: string[] = [];
  for (const token of backticked(layoutSection('dashboard'))) {
    if (!token.endsWith('.ts') || token.includes('/')) continue;
    const path = [token, `app/${token}`].find((p) => isFile(join(root, 'dashboard/src', p)));
    if (path === undefined) stale.push(token);
    else named.add(path);
  }
  return { named, stale };
}

/** The hub's section: path inside src/ → named; a folder's files are named in its bullet. */
function hubLayout(): { named: Set<string>; stale: string[] } {
  const section = layoutSection('hub');
  const named = new Set<string>();
  const stale: string[] = [];
  // a top-level bullet `- \`folder/\` —` starts a folder's part; nested bullets stay in it
  const parts = section.split(/\n(?=- `)/);
  const exists = (path: string) => isFile(join(root, 'hub/src', path));
  for (const part of parts) {
    const folder = /^- `([\w-]+)\/`/.exec(part)?.[1];
    for (const token of backticked(part)) {
      if (!/^[\w./-]+\.ts$/.test(token) || token.startsWith('sdk/') || token.startsWith('hub/')) continue;
      const inFolder = folder !== undefined && !token.startsWith(`${folder}/`) ? `${folder}/${token}` : token;
      if (exists(inFolder)) named.add(inFolder);
      else if (exists(token)) named.add(token);
      else stale.push(folder ? `${folder}/: ${token}` : token);
    }
  }
  return { named, stale };
}

/** The SDK's section: the `src/…` path that starts each line of its block. */
function sdkLayout(): { named: Set<string>; stale: string[] } {
  const section = layoutSection('sdk');
  const named = new Set<string>();
  const stale: string[] = [];
  for (const m of section.matchAll(/^src\/(\S+\.ts)\s/gm)) {
    const path = m[1]!;
    if (isFile(join(root, 'sdk/src', path))) named.add(path);
    else stale.push(path);
  }
  return { named, stale };
}

for (const [pkg, layout] of [
  ['hub', hubLayout],
  ['sdk', sdkLayout],
  ['dashboard', dashboardLayout],
] as const) {
  test(`${LAYOUT} names every source file of ${pkg}/src`, () => {
    const { named } = layout();
    const missing = sources(join(root, pkg, 'src')).filter((path) => !named.has(path));
    assert.equal(missing, [], `not in ${LAYOUT}, ${pkg}/src: ${missing.join(', ')}`);
  });

  test(`every file ${LAYOUT} names in ${pkg}/src exists`, () => {
    const { stale } = layout();
    assert.equal(stale, [], `named in ${LAYOUT} but not in ${pkg}/src: ${stale.join(', ')}`);
  });
}

test.run();
