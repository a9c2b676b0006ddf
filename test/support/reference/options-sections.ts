/**
 * The option tables: `new HotKeyClient(options)`, `withHotKeys(client, hk, options)` and the hub
 * tunables, read from their interfaces. Each option's default is its `@default` JSDoc tag; where a
 * defaults object holds the value too (DEFAULT_CLIENT_OPTIONS, DEFAULT_SURGE_LOCAL,
 * BREAKER_DEFAULTS, DEFAULT_TUNABLES), the tag must say that value, or the generator reports a problem.
 */
import { DEFAULT_TUNABLES } from '../../../hub/src/core/tunables.ts';
import { FLAG_DOCS } from '../../../hub/src/cli-flags.ts';
import { DEFAULT_CLIENT_OPTIONS, DEFAULT_SURGE_LOCAL } from '../../../sdk/src/options.ts';
import { BREAKER_DEFAULTS } from '../../../sdk/src/redis/breaker/breaker.ts';
import { cell, code, table } from './markdown.ts';
import type { OptionDoc, SourceReader } from './source-reader.ts';

/** The entry points whose exports the withHotKeys options are looked up in. */
export const ADAPTER_ENTRIES = [
  { file: 'sdk/src/ioredis.ts', label: 'ioredis and iovalkey (`@hotkey/sdk/ioredis`)' },
  { file: 'sdk/src/node-redis.ts', label: 'node-redis (`@hotkey/sdk/node-redis`)' },
] as const;

/** The literal a `@default` text starts with (`8388608 (8 MiB)` → 8388608), or NOT_LITERAL. */
const NOT_LITERAL = Symbol('not a literal');
export function literalOf(text: string): unknown {
  const number = /^(-?[\d_]+(?:\.\d+)?)(?=$|[\s(,;:])/.exec(text);
  if (number?.[1] !== undefined) return Number(number[1].replaceAll('_', ''));
  const word = /^(true|false|undefined)\b/.exec(text)?.[1];
  if (word !== undefined) return word === 'undefined' ? undefined : word === 'true';
  const quoted = /^'([^']*)'/.exec(text)?.[1];
  return quoted ?? NOT_LITERAL;
}

/**
 * Problems of `options`: a missing doc, a missing `@default` on an optional option, a `@default`
 * that disagrees with `defaults` (keyed by the option name after `prefix`).
 */
export function checkOptions(
  what: string,
  options: readonly OptionDoc[],
  defaults: readonly { prefix: string; values: Readonly<Record<string, unknown>>; name: string }[],
): string[] {
  const problems: string[] = [];
  for (const o of options) {
    if (o.doc === '') problems.push(`${o.at}: ${what} option ${o.name} has no doc comment`);
    if (o.optional && o.default === undefined) problems.push(`${o.at}: ${what} option ${o.name} has no @default`);
    for (const d of defaults) {
      if (!o.name.startsWith(d.prefix)) continue;
      const key = o.name.slice(d.prefix.length);
      if (key.includes('.') || !Object.hasOwn(d.values, key) || o.default === undefined) continue;
      const value = d.values[key];
      const said = literalOf(o.default);
      if (said !== value)
        problems.push(
          `${o.at}: ${what} option ${o.name} says @default ${o.default}, but ${d.name}.${key} is ${String(value)}`,
        );
    }
  }
  return problems;
}

function optionRows(options: readonly OptionDoc[]): string[][] {
  return options.map((o) => [
    code(o.name),
    code(o.type),
    o.default === undefined ? (o.optional ? '' : 'required') : cell(o.default),
    cell(o.doc),
  ]);
}

const OPTION_HEAD = ['option', 'type', 'default', 'meaning'];

export function sdkOptions(reader: SourceReader): { body: string; problems: string[] } {
  const options = reader.options('sdk/src/options.ts', 'ClientOptions');
  const problems = checkOptions('ClientOptions', options, [
    { prefix: '', values: DEFAULT_CLIENT_OPTIONS, name: 'DEFAULT_CLIENT_OPTIONS' },
    { prefix: 'surgeLocal.', values: DEFAULT_SURGE_LOCAL, name: 'DEFAULT_SURGE_LOCAL' },
  ]);
  return { body: table(OPTION_HEAD, optionRows(options)), problems };
}

/**
 * The `withHotKeys` options of each adapter. When the adapters export one interface (or two that
 * read the same), one table; otherwise one table per adapter.
 */
export function withHotKeysOptions(reader: SourceReader): { body: string; problems: string[] } {
  const found = ADAPTER_ENTRIES.map((e) => {
    return { ...e, options: reader.options(e.file, 'WithHotKeysOptions') };
  });
  const defaults = [{ prefix: 'breaker.', values: BREAKER_DEFAULTS, name: 'BREAKER_DEFAULTS' }];
  const problems = found.flatMap((f) => checkOptions('WithHotKeysOptions', f.options, defaults));
  const tables = found.map((f) => table(OPTION_HEAD, optionRows(f.options)));
  const same = tables.every((t) => t === tables[0]);
  if (same) return { body: `Both adapters:\n\n${tables[0]}`, problems: [...new Set(problems)] };
  const body = found.map((f, i) => `${f.label}:\n\n${tables[i]}`).join('\n\n');
  return { body, problems };
}

export function hubTunables(reader: SourceReader): { body: string; problems: string[] } {
  const options = reader.options('hub/src/core/tunables.ts', 'HubTunables');
  const problems = checkOptions('HubTunables', options, [
    { prefix: '', values: DEFAULT_TUNABLES as unknown as Record<string, unknown>, name: 'DEFAULT_TUNABLES' },
  ]);
  for (const o of options)
    if (o.default === undefined) problems.push(`${o.at}: HubTunables option ${o.name} has no @default`);
  const flags = new Map<string, string>();
  for (const [flag, doc] of Object.entries(FLAG_DOCS))
    if (doc.tunable !== undefined) flags.set(doc.tunable, `\`--${flag}\`, \`${doc.env}\``);
  const rows = options.map((o) => [code(o.name), cell(o.default ?? ''), flags.get(o.name) ?? '', cell(o.doc)]);
  return { body: table(['tunable', 'default', 'flag, variable', 'meaning'], rows), problems };
}
