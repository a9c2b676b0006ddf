/**
 * The hub's reference tables: CLI flags and HOTKEY_* variables (hub/src/cli-flags.ts), HTTP routes
 * (the route tables of hub/src/http, each route's doc comment), error codes (sdk/src/errors.ts)
 * and close codes (sdk/src/wire/codes.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ENV_ONLY, FLAG_DOCS, OPTIONS } from '../../../hub/src/cli-flags.ts';
import { cell, code, table } from './markdown.ts';
import type { SourceReader } from './source-reader.ts';

type Result = { body: string; problems: string[] };

/** HOTKEY_* variables the hub's sources read (`env.HOTKEY_X`, `env['HOTKEY_X']`, `'HOTKEY_X'` beside env). */
function envReadIn(root: string): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir))) {
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) {
        const text = readFileSync(join(root, path), 'utf8');
        for (const m of text.matchAll(/\benv(?:\.|\[')(HOTKEY_[A-Z0-9_]+)/g)) found.add(m[1] as string);
      }
    }
  };
  walk('hub/src');
  return found;
}

export function cliFlags(root: string): Result {
  const problems: string[] = [];
  const rows: string[][] = [];
  const documented = new Set<string>();
  for (const [flag, doc] of Object.entries(FLAG_DOCS)) {
    const spec = OPTIONS[flag as keyof typeof OPTIONS] as { multiple?: boolean };
    if (doc.env !== undefined) documented.add(doc.env.replace(/=.*/, ''));
    const name = `--${flag}${doc.value === undefined ? '' : ` ${doc.value}`}${spec.multiple ? ' (repeatable)' : ''}`;
    rows.push([code(name), doc.env === undefined ? '' : code(doc.env), cell(doc.default), cell(doc.doc)]);
  }
  for (const [env, doc] of Object.entries(ENV_ONLY)) {
    documented.add(env);
    rows.push(['', code(env), cell(doc.default), cell(doc.doc)]);
  }
  const read = envReadIn(root);
  for (const env of read)
    if (!documented.has(env)) problems.push(`hub/src reads ${env}, which hub/src/cli-flags.ts does not document`);
  for (const env of documented)
    if (!read.has(env)) problems.push(`hub/src/cli-flags.ts documents ${env}, which hub/src never reads`);
  return { body: table(['flag', 'variable', 'default', 'meaning'], rows), problems };
}

/** `/^\/api\/apps\/([^/]+)\/rules$/` → `/api/apps/:app/rules`. */
function pathOf(pattern: ts.Expression): string {
  if (ts.isStringLiteral(pattern)) return pattern.text;
  const source = pattern.getText().replace(/^\/\^?|\$?\/[a-z]*$/g, '');
  return source
    .replace(/\\\//g, '/')
    .replace(/\/apps\/\(\[\^\/\]\+\)/g, '/apps/:app')
    .replace(/\([^)]*\)/g, ':param');
}

const ROUTE_FILES = ['hub/src/http/routes-hub.ts', 'hub/src/http/routes-apps.ts'];

/** Every `{ method, pattern, auth }` literal returned by a route table's `routes()`, with its doc comment. */
export function httpRoutes(reader: SourceReader): Result {
  const problems: string[] = [];
  const rows: string[][] = [];
  for (const file of ROUTE_FILES) {
    const visit = (node: ts.Node): void => {
      if (ts.isMethodDeclaration(node) && node.name.getText() === 'routes' && node.body !== undefined) {
        for (const s of node.body.statements)
          if (ts.isReturnStatement(s) && s.expression && ts.isArrayLiteralExpression(s.expression))
            for (const el of s.expression.elements)
              if (ts.isObjectLiteralExpression(el)) rows.push(route(reader, el, problems));
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(reader.sourceFile(file));
  }
  return { body: table(['route', 'auth', 'answers'], rows), problems };
}

const AUTH: Record<string, string> = {
  none: 'none',
  read: 'read',
  write: 'admin',
};

function route(reader: SourceReader, el: ts.ObjectLiteralExpression, problems: string[]): string[] {
  const field = (name: string) =>
    el.properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText() === name)
      ?.initializer;
  const method = field('method');
  const pattern = field('pattern');
  const auth = field('auth');
  if (
    method === undefined ||
    pattern === undefined ||
    auth === undefined ||
    !ts.isStringLiteral(method) ||
    !ts.isStringLiteral(auth)
  )
    throw new Error(`reference: ${reader.at(el)}: a route without a literal method, pattern and auth`);
  const doc = reader.leadingDoc(el);
  const path = pathOf(pattern);
  if (doc === '') problems.push(`${reader.at(el)}: route ${method.text} ${path} has no doc comment`);
  const verb = method.text === '*' ? 'any' : method.text;
  return [code(`${verb} ${path}`), AUTH[auth.text] ?? auth.text, cell(doc)];
}

/** ErrorCode (sdk/src/errors.ts) with its doc, beside the close code of the same name (sdk/src/wire/codes.ts). */
export function errorCodes(reader: SourceReader): Result {
  const problems: string[] = [];
  const closes = new Map(reader.entries('sdk/src/wire/codes.ts', 'CloseCode').map((c) => [c.name, c.value]));
  const rows = reader.entries('sdk/src/errors.ts', 'ErrorCode').map((e) => {
    if (e.doc === '') problems.push(`${e.at}: ErrorCode.${e.name} has no doc comment`);
    return [
      code(JSON.parse(e.value.replace(/'/g, '"')) as string),
      code(`ErrorCode.${e.name}`),
      closes.get(e.name) ?? '—',
      cell(e.doc),
    ];
  });
  return { body: table(['code', 'name', 'close', 'meaning'], rows), problems };
}

export function closeCodes(reader: SourceReader): Result {
  const problems: string[] = [];
  const rows = reader.entries('sdk/src/wire/codes.ts', 'CloseCode').map((c) => {
    if (c.doc === '') problems.push(`${c.at}: CloseCode.${c.name} has no doc comment`);
    return [c.value, code(`CloseCode.${c.name}`), cell(c.doc)];
  });
  return { body: table(['close code', 'name', 'meaning'], rows), problems };
}
