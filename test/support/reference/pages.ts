/**
 * The generated reference: which section of which page each table goes to, and the pages as the
 * code says they should read. `pnpm docs:reference` writes them (generate.ts);
 * test/docs/reference.test.ts compares them with the files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closeCodes, cliFlags, errorCodes, httpRoutes } from './hub-sections.ts';
import { section, splice } from './markdown.ts';
import { hubHistogramBuckets, hubMetrics, sdkMetrics } from './metrics-sections.ts';
import { hubTunables, sdkOptions, withHotKeysOptions } from './options-sections.ts';
import { SourceReader } from './source-reader.ts';

/** The files the TypeScript program starts from; the files they import by relative path are read too. */
const ENTRIES = [
  'sdk/src/options.ts',
  'sdk/src/ioredis.ts',
  'sdk/src/node-redis.ts',
  'sdk/src/errors.ts',
  'sdk/src/wire/codes.ts',
  'hub/src/core/tunables.ts',
  'hub/src/http/routes-hub.ts',
  'hub/src/http/routes-apps.ts',
];

export interface Generated {
  /** page path (from the repository root) → section name → its generated text */
  sections: Map<string, Map<string, string>>;
  /** what the sources lack or contradict (a missing doc or @default, a default that disagrees) */
  problems: string[];
}

export async function generate(root: string): Promise<Generated> {
  const reader = new SourceReader(root, ENTRIES);
  const problems: string[] = [];
  const take = (r: { body: string; problems: string[] }) => {
    problems.push(...r.problems);
    return r.body;
  };
  const page = (name: string, entries: [string, string][]): [string, Map<string, string>] => [
    `docs/reference/${name}`,
    new Map(entries),
  ];
  const sections = new Map([
    page('sdk-options.md', [['sdk-options', take(sdkOptions(reader))]]),
    page('with-hot-keys.md', [['with-hot-keys', take(withHotKeysOptions(reader))]]),
    page('hub-tunables.md', [['hub-tunables', take(hubTunables(reader))]]),
    page('cli.md', [['cli-flags', take(cliFlags(root))]]),
    page('http-api.md', [['http-routes', take(httpRoutes(reader))]]),
    page('metrics.md', [
      ['hub-metrics', hubMetrics(root)],
      ['hub-histograms', hubHistogramBuckets()],
      ['sdk-metrics', await sdkMetrics()],
    ]),
    page('errors.md', [
      ['error-codes', take(errorCodes(reader))],
      ['close-codes', take(closeCodes(reader))],
    ]),
  ]);
  return { sections, problems };
}

/** The page at `path` with its generated sections replaced. */
export function rendered(root: string, path: string, sections: Map<string, string>): string {
  let text = readFileSync(join(root, path), 'utf8');
  for (const [name, body] of sections) text = splice(text, path, name, body);
  return text;
}

/** One line per section whose text in the page differs from the code's: page, section, first differing line. */
export function drift(root: string, generated: Generated): string[] {
  const out: string[] = [];
  for (const [path, sections] of generated.sections) {
    const text = readFileSync(join(root, path), 'utf8');
    for (const [name, body] of sections) {
      const current = section(text, name);
      if (current === undefined) {
        out.push(
          `${path}: no generated section "${name}" (markers <!-- generated:begin ${name} --> … <!-- generated:end -->)`,
        );
        continue;
      }
      if (current === body) continue;
      const have = current.split('\n');
      const want = body.split('\n');
      const i = want.findIndex((line, k) => line !== have[k]);
      const at = i < 0 ? have.length : i;
      out.push(
        `${path}, section ${name}, table line ${at + 1}:\n  page: ${have[at] ?? '(missing)'}\n  code: ${want[at] ?? '(none)'}`,
      );
    }
  }
  return out;
}
