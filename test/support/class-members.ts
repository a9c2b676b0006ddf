/**
 * The public members a class declares itself (inherited ones aside), read with the TypeScript
 * compiler API from its source: methods, properties and accessors that are neither `#private`
 * nor marked `private` or `protected`; the constructor and index signatures are not members a
 * caller names. A getter with its setter, or a method with its overloads, counts once.
 *
 *   node --import tsx test/support/class-members.ts sdk/src/client/client.ts HotKeyClient
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The names of the public members class `className` in `file` (from the repository root) declares, in source order. */
export function publicMembers(file: string, className: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const cls = source.statements.find(
    (s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === className,
  );
  if (cls === undefined) throw new Error(`${file}: no class ${className}`);
  const names: string[] = [];
  for (const member of cls.members) {
    if (ts.isConstructorDeclaration(member) || ts.isIndexSignatureDeclaration(member)) continue;
    if (ts.isClassStaticBlockDeclaration(member) || ts.isSemicolonClassElement(member)) continue;
    const name = member.name;
    if (name === undefined || ts.isPrivateIdentifier(name)) continue;
    const hidden = ts
      .getModifiers(member as ts.HasModifiers)
      ?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
    if (hidden === true) continue;
    const text = ts.isIdentifier(name) || ts.isStringLiteral(name) ? name.text : name.getText(source);
    if (!names.includes(text)) names.push(text);
  }
  return names;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, className] = process.argv.slice(2);
  if (file === undefined || className === undefined) throw new TypeError('usage: class-members.ts FILE CLASS');
  const names = publicMembers(file, className);
  console.log(`${names.length} public members: ${names.join(', ')}`);
}
