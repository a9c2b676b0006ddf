/**
 * The README layouts stay complete: every source file of hub/src, sdk/src and dashboard/src
 * (tests aside) is named in its README's layout, and every file a layout names exists. A new file
 * without its line fails here, naming the file, so the layout a newcomer reads is the tree.
 *
 * hub/README.md lists files in one bullet per folder (`- \`core/\` — …`), by their path inside it;
 * files at the top of src/ anywhere in the section. sdk/README.md lists one `src/…` path a line.
 * README.md's "Layout of `dashboard/src`" paragraph names files by their path in src/ or in app/.
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

/** The text of the README's `## Layout` section. */
function layoutSection(readme: string): string {
  const text = readFileSync(join(root, readme), 'utf8');
  const start = text.indexOf('\n## Layout\n');
  assert.ok(start >= 0, `${readme} has a "## Layout" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

const backticked = (text: string): string[] => [...text.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!);

const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** README.md: the dashboard's paragraph; a name is a file of dashboard/src or of dashboard/src/app. */
function dashboardLayout(): { named: Set<string>; stale: string[] } {
  const text = readFileSync(join(root, 'README.md'), 'utf8');
  const start = text.indexOf('Layout of `dashboard/src`:');
  assert.ok(start >= 0, 'README.md has a "Layout of `dashboard/src`" paragraph');
  const end = text.indexOf('\n\n', start);
  const named = new Set<string>();
  const stale: string[] = [];
  for (const token of backticked(text.slice(start, end < 0 ? undefined : end))) {
    if (!token.endsWith('.ts') || token.includes('/')) continue;
    const path = [token, `app/${token}`].find((p) => isFile(join(root, 'dashboard/src', p)));
    if (path === undefined) stale.push(token);
    else named.add(path);
  }
  return { named, stale };
}

/** hub/README.md: path inside src/ → named; a folder's files are named in its bullet. */
function hubLayout(): { named: Set<string>; stale: string[] } {
  const section = layoutSection('hub/README.md');
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

/** sdk/README.md: the `src/…` path that starts each line of the layout's block. */
function sdkLayout(): { named: Set<string>; stale: string[] } {
  const section = layoutSection('sdk/README.md');
  const named = new Set<string>();
  const stale: string[] = [];
  for (const m of section.matchAll(/^src\/(\S+\.ts)\s/gm)) {
    const path = m[1]!;
    if (isFile(join(root, 'sdk/src', path))) named.add(path);
    else stale.push(path);
  }
  return { named, stale };
}

for (const [pkg, readme, layout] of [
  ['hub', 'hub/README.md', hubLayout],
  ['sdk', 'sdk/README.md', sdkLayout],
  ['dashboard', 'README.md', dashboardLayout],
] as const) {
  test(`${readme}'s layout names every source file of ${pkg}/src`, () => {
    const { named } = layout();
    const missing = sources(join(root, pkg, 'src')).filter((path) => !named.has(path));
    assert.equal(missing, [], `not in ${readme}'s layout: ${missing.join(', ')}`);
  });

  test(`every file ${readme}'s layout of ${pkg}/src names exists`, () => {
    const { stale } = layout();
    assert.equal(stale, [], `named in ${readme}'s layout but not in ${pkg}/src: ${stale.join(', ')}`);
  });
}

test.run();
