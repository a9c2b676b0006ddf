/**
 * No broken link in the repository's markdown: every relative link (`[text](path)`,
 * `[text](path#anchor)`, `[text](#anchor)`, a reference definition `[id]: path`, an HTML
 * `href="…"`) names a file or folder that exists, and every `#anchor` into a markdown file names one
 * of its headings, slugged as GitHub slugs them, or an `id`/`name` it declares. Links inside code
 * (fenced blocks, `spans`) are text, not links. node_modules, dist and dot folders are skipped;
 * URLs with a scheme (https:, mailto:) are not fetched.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', 'artifacts']);

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...markdownFiles(path));
    else if (name.endsWith('.md')) out.push(path);
  }
  return out.sort();
}

/** The text with fenced code blocks blanked (line numbers kept) and inline code spans removed. */
function withoutCode(text: string): string {
  let fence: string | undefined;
  const lines = text.split('\n').map((line) => {
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (open && open[0] === fence[0] && open.length >= fence.length && line.trim() === open) fence = undefined;
      return '';
    }
    if (open) {
      fence = open;
      return '';
    }
    return line;
  });
  return lines.join('\n').replace(/(`+)[^`]*?\1/g, '');
}

/**
 * GitHub's heading anchor (github-slugger): the heading's rendered text, lower-cased, with every
 * character that is not a letter, mark, number, connector (`_`), hyphen or space removed, and each
 * space made a hyphen; a repeated slug gets `-1`, `-2`, … in order.
 */
function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images: their alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`+/g, '') // code spans keep their text
    .replace(/(\*\*|__|\*|~~)/g, ''); // emphasis markers (`_` stays: it is kept in slugs)
  return rendered
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file offers: its headings' slugs (made unique as GitHub does) and HTML ids/names. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (open && open[0] === fence[0] && open.length >= fence.length && line.trim() === open) fence = undefined;
      continue;
    }
    if (open) {
      fence = open;
      continue;
    }
    let heading = /^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+\s*)?$/.exec(line)?.[1];
    const next = lines[i + 1];
    if (
      heading === undefined &&
      line.trim() &&
      next !== undefined &&
      /^\s{0,3}(=+|-+)\s*$/.test(next) &&
      !/^\s*[-*+>|]/.test(line)
    )
      heading = line.trim();
    if (heading !== undefined) {
      const base = githubSlug(heading);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/\s(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

/** The relative link targets of a markdown text, with their line numbers. */
function linksOf(text: string): Array<{ target: string; line: number }> {
  const out: Array<{ target: string; line: number }> = [];
  withoutCode(text)
    .split('\n')
    .forEach((line, i) => {
      const targets = [
        ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
        ...[...line.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!),
        ...[...line.matchAll(/\shref="([^"]+)"/g)].map((m) => m[1]!),
      ];
      for (const target of targets)
        if (!/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('//')) out.push({ target, line: i + 1 });
    });
  return out;
}

const anchorCache = new Map<string, Set<string>>();
const anchorsIn = (file: string) => {
  let set = anchorCache.get(file);
  if (!set) anchorCache.set(file, (set = anchorsOf(readFileSync(file, 'utf8'))));
  return set;
};

/** What is wrong with `target` linked from `from`, or undefined. */
function brokenLink(from: string, target: string): string | undefined {
  const hash = target.indexOf('#');
  const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = pathPart === '' ? from : resolve(dirname(from), pathPart.split('?')[0]!);
  if (!existsSync(file)) return `no such file: ${relative(root, file)}`;
  if (anchor === undefined || anchor === '' || !file.endsWith('.md')) return undefined;
  if (anchorsIn(file).has(anchor.toLowerCase()) || anchorsIn(file).has(anchor)) return undefined;
  return `no heading #${anchor} in ${relative(root, file)}`;
}

test('GitHub slugs: punctuation dropped, spaces hyphenated, code and links by their text, repeats numbered', () => {
  assert.is(githubSlug('Options (defaults)'), 'options-defaults');
  assert.is(githubSlug('Run a hub'), 'run-a-hub');
  assert.is(githubSlug('Any other source: `hk.get(key, loader)`'), 'any-other-source-hkgetkey-loader');
  assert.is(githubSlug('NestJS with `@nestjs/cache-manager`'), 'nestjs-with-nestjscache-manager');
  assert.is(githubSlug('Reload (SIGHUP) — and [links](x.md)'), 'reload-sighup--and-links');
  assert.is(githubSlug('snake_case and 10,000 instances'), 'snake_case-and-10000-instances');
  assert.equal([...anchorsOf('# A\n## A\n```\n# B\n```\nC\n---\n<a name="x"></a>\n')], ['a', 'a-1', 'c', 'x']);
  assert.equal(
    linksOf('[a](b.md#c) `[d](e.md)` [f]: g.md\n[h]: i.md "t"\n<a href="j.md">k</a> [l](https://x) [m](#n)').map(
      (l) => l.target,
    ),
    ['b.md#c', 'i.md', '#n', 'j.md'],
  );
});

test('every relative link and #anchor in the repository markdown resolves', () => {
  const files = markdownFiles(root);
  assert.ok(files.length > 5, `found the markdown files (${files.length})`);
  const broken: string[] = [];
  for (const file of files)
    for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
      const why = brokenLink(file, target);
      if (why) broken.push(`${relative(root, file)}:${line} (${target}): ${why}`);
    }
  assert.equal(broken, [], `broken links:\n${broken.join('\n')}`);
});

test.run();
