/**
 * Function lengths of the shipped sources, measured with the TypeScript compiler API: every
 * function declaration, method, constructor, accessor, arrow function and function expression
 * in hub/src, sdk/src and dashboard/src (tests aside), with its length in lines from its first
 * token to its closing brace. A function's length includes the functions nested in it, so a long
 * closure counts whole.
 *
 *   node --import tsx test/support/function-lengths.ts [minLines=100]
 *
 * prints the functions of at least `minLines` lines, longest first.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The folders whose sources ship in a package. */
export const SHIPPED = ['hub/src', 'sdk/src', 'dashboard/src'];

export interface FunctionLength {
  /** path from the repository root */
  file: string;
  /** a readable name: `Class.method`, the variable an arrow is bound to, or `(anonymous)` */
  name: string;
  /** first line, 1-based */
  line: number;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      if (name === 'node_modules' || name === 'dist') continue;
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) out.push(path);
    }
  };
  walk(dir);
  return out.sort();
}

function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const own = (n: ts.Node): string | undefined => {
    const name = (n as { name?: ts.Node }).name;
    return name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name))
      ? name.text
      : undefined;
  };
  if (ts.isConstructorDeclaration(node)) return `${className(node) ?? '(class)'}.constructor`;
  if (ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)) {
    const cls = className(node);
    return cls ? `${cls}.${own(node) ?? '?'}` : (own(node) ?? '(method)');
  }
  const direct = own(node);
  if (direct) return direct;
  const parent = node.parent;
  if (
    parent &&
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
  )
    return own(parent) ?? '(anonymous)';
  if (parent && ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

function className(node: ts.Node): string | undefined {
  const p = node.parent;
  return p && (ts.isClassDeclaration(p) || ts.isClassExpression(p)) ? p.name?.text : undefined;
}

/** Every function of `file` (a path from the repository root) with its length. */
export function functionsOf(file: string): FunctionLength[] {
  const text = readFileSync(join(root, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ file, name: nameOf(node, sf), line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The functions of the shipped sources of at least `minLines` lines, longest first. */
export function longFunctions(minLines: number, dirs: string[] = SHIPPED): FunctionLength[] {
  return dirs
    .flatMap((dir) => sourceFiles(join(root, dir)).map((path) => relative(root, path)))
    .flatMap(functionsOf)
    .filter((f) => f.lines >= minLines)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const min = Number(process.argv[2] ?? 100);
  for (const f of longFunctions(min)) console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
}
