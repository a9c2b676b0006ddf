/**
 * The public exports of every package entry, read with the TypeScript compiler API from the
 * sources the `@hotkey/source` condition of each package's `exports` map names: a value (class,
 * function, constant) is listed by its name, a type-only export as `type Name`.
 *
 *   node --import tsx test/support/public-api.ts            prints them as JSON
 *   node --import tsx test/support/public-api.ts --write    records them in test/docs/public-api.json
 *
 * `--write` is for a release: the record is the API as last released, and test/docs/public-api.test.ts
 * asks the CHANGELOG's [Unreleased] section to name every export added or removed since.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const RECORD = join(root, 'test/docs/public-api.json');

/** The published packages, by folder. */
export const PACKAGES = ['sdk', 'hub', 'dashboard'];

/** Each published entry (`@hotkey/sdk`, `@hotkey/sdk/rules`, …) with its source file. */
export function entries(): Map<string, string> {
  const out = new Map<string, string>();
  for (const dir of PACKAGES) {
    const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as {
      name: string;
      exports: Record<string, string | Record<string, string>>;
    };
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue; // ./package.json
      const source = target['@hotkey/source'];
      if (source === undefined) throw new Error(`${pkg.name} ${subpath}: no @hotkey/source condition`);
      out.set(subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, join(root, dir, source));
    }
  }
  return out;
}

/** Every entry's exports, sorted: values by name, type-only exports as `type Name`. */
export function publicApi(): Record<string, string[]> {
  const all = entries();
  const program = ts.createProgram([...all.values()], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    customConditions: ['@hotkey/source'],
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const out: Record<string, string[]> = {};
  for (const [entry, file] of all) {
    const sf = program.getSourceFile(file);
    const moduleSymbol = sf && checker.getSymbolAtLocation(sf);
    if (moduleSymbol === undefined) throw new Error(`${entry}: cannot read ${file}`);
    out[entry] = checker
      .getExportsOfModule(moduleSymbol)
      .map((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        return target.flags & ts.SymbolFlags.Value ? symbol.name : `type ${symbol.name}`;
      })
      .sort();
  }
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const api = publicApi();
  const text = `${JSON.stringify(api, null, 2)}\n`;
  if (process.argv.includes('--write')) writeFileSync(RECORD, text);
  else process.stdout.write(text);
}
