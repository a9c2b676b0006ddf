/**
 * What the reference pages read from the sources through the TypeScript compiler API: the
 * properties of an exported interface (type, doc text, `@default`), the entries of an object
 * literal with their doc comments, the leading doc comment of a node. One program over the entry
 * files; a name is looked up where a module exports it, so an interface that moves between files
 * is still found as long as its entry point exports it.
 */
import { join } from 'node:path';
import ts from 'typescript';

export interface OptionDoc {
  /** the property name, dotted for a nested option (`tracking.pingMs`) */
  name: string;
  type: string;
  doc: string;
  /** the `@default` tag's text; undefined when the tag is missing */
  default: string | undefined;
  optional: boolean;
  /** where it is declared, for error messages (`sdk/src/options.ts:81`) */
  at: string;
}

export interface EntryDoc {
  name: string;
  /** the initializer's source text */
  value: string;
  doc: string;
  at: string;
}

const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

export class SourceReader {
  readonly #root: string;
  readonly #program: ts.Program;
  readonly #checker: ts.TypeChecker;

  /**
   * A program over `entries` and the files they import by relative path: declarations and doc
   * comments are all this reads, so neither node_modules' types nor the standard library are
   * parsed (they would take seconds).
   */
  constructor(root: string, entries: readonly string[]) {
    this.#root = root;
    const options: ts.CompilerOptions = {
      noLib: true,
      types: [],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      noEmit: true,
    };
    const host = ts.createCompilerHost(options);
    host.resolveModuleNameLiterals = (literals, containingFile) =>
      literals.map((literal) =>
        literal.text.startsWith('.')
          ? ts.resolveModuleName(literal.text, containingFile, options, host)
          : { resolvedModule: undefined },
      );
    this.#program = ts.createProgram(
      entries.map((f) => join(root, f)),
      options,
      host,
    );
    this.#checker = this.#program.getTypeChecker();
  }

  sourceFile(file: string): ts.SourceFile {
    const sf = this.#program.getSourceFile(join(this.#root, file));
    if (sf === undefined) throw new Error(`reference: ${file} is not in the program`);
    return sf;
  }

  /** `file:line` of a node, relative to the repository. */
  at(node: ts.Node): string {
    const sf = node.getSourceFile();
    const line = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    return `${sf.fileName.slice(this.#root.length).replace(/^\//, '')}:${line}`;
  }

  /** The declaration `name` exported by module `file` (through re-exports and aliases), or undefined. */
  exported(file: string, name: string): ts.Declaration | undefined {
    const moduleSymbol = this.#checker.getSymbolAtLocation(this.sourceFile(file));
    if (moduleSymbol === undefined) return undefined;
    let symbol = this.#checker.getExportsOfModule(moduleSymbol).find((s) => s.name === name);
    if (symbol === undefined) return undefined;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = this.#checker.getAliasedSymbol(symbol);
    return symbol.declarations?.[0];
  }

  /**
   * The properties of interface `name` exported by `file`, in declaration order (inherited ones
   * included). A property whose type names another `…Options` interface of the sources is
   * followed by that interface's properties, dotted (`tracking.pingMs`).
   */
  options(file: string, name: string): OptionDoc[] {
    const decl = this.exported(file, name);
    if (decl === undefined || !ts.isInterfaceDeclaration(decl))
      throw new Error(`reference: ${file} exports no interface ${name}`);
    return this.#properties(this.#checker.getTypeAtLocation(decl), '', new Set([name]));
  }

  #properties(type: ts.Type, prefix: string, seen: Set<string>): OptionDoc[] {
    const out: OptionDoc[] = [];
    for (const prop of this.#checker.getPropertiesOfType(type)) {
      const decl = prop.declarations?.[0];
      if (decl === undefined || !(ts.isPropertySignature(decl) || ts.isMethodSignature(decl))) continue;
      const tag = prop.getJsDocTags(this.#checker).find((t) => t.name === 'default');
      out.push({
        name: prefix + prop.name,
        type: oneLine(decl.type?.getText() ?? (ts.isMethodSignature(decl) ? 'method' : 'unknown')),
        doc: oneLine(ts.displayPartsToString(prop.getDocumentationComment(this.#checker))),
        default: tag === undefined ? undefined : oneLine(ts.displayPartsToString(tag.text)),
        optional: (prop.flags & ts.SymbolFlags.Optional) !== 0,
        at: this.at(decl),
      });
      for (const nested of this.#nestedOptions(decl, seen))
        out.push(...this.#properties(nested.type, `${prefix}${prop.name}.`, new Set([...seen, nested.name])));
    }
    return out;
  }

  /** The `…Options` interfaces of the sources a property's type names (a union member). */
  #nestedOptions(decl: ts.Declaration, seen: Set<string>): { name: string; type: ts.Type }[] {
    const typeNode = (decl as ts.PropertySignature).type;
    if (typeNode === undefined) return [];
    const members = ts.isUnionTypeNode(typeNode) ? typeNode.types : [typeNode];
    const out: { name: string; type: ts.Type }[] = [];
    for (const member of members) {
      if (!ts.isTypeReferenceNode(member)) continue;
      const name = member.typeName.getText();
      if (!name.endsWith('Options') || seen.has(name)) continue;
      const type = this.#checker.getTypeFromTypeNode(member);
      const target = type.getSymbol()?.declarations?.[0];
      if (target === undefined || !ts.isInterfaceDeclaration(target)) continue;
      if (target.getSourceFile().fileName.includes('node_modules')) continue;
      out.push({ name, type });
    }
    return out;
  }

  /** The entries of `const name = { … }` (through `as const`, `Object.freeze(…)`, `satisfies`) in `file`. */
  entries(file: string, name: string): EntryDoc[] {
    const init = this.#constInitializer(file, name);
    const literal = unwrap(init);
    if (literal === undefined) throw new Error(`reference: ${file}: ${name} is not an object literal`);
    const out: EntryDoc[] = [];
    for (const p of literal.properties) {
      if (!ts.isPropertyAssignment(p)) continue;
      const symbol = this.#checker.getSymbolAtLocation(p.name);
      const doc = symbol === undefined ? '' : ts.displayPartsToString(symbol.getDocumentationComment(this.#checker));
      out.push({
        name: p.name.getText().replace(/^['"]|['"]$/g, ''),
        value: p.initializer.getText(),
        doc: oneLine(doc),
        at: this.at(p),
      });
    }
    return out;
  }

  #constInitializer(file: string, name: string): ts.Expression {
    for (const statement of this.sourceFile(file).statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name) && d.name.text === name && d.initializer !== undefined) return d.initializer;
    }
    throw new Error(`reference: ${file} declares no const ${name}`);
  }

  /** The text of the last `/** … *\/` comment right before `node` (its leading trivia), one line. */
  leadingDoc(node: ts.Node): string {
    const text = node.getSourceFile().text;
    const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
    const last = ranges.filter((r) => text.startsWith('/**', r.pos)).at(-1);
    if (last === undefined) return '';
    return oneLine(
      text
        .slice(last.pos + 3, last.end - 2)
        .split('\n')
        .map((l) => l.replace(/^\s*\*\s?/, ''))
        .join(' '),
    );
  }
}

function unwrap(e: ts.Expression): ts.ObjectLiteralExpression | undefined {
  if (ts.isObjectLiteralExpression(e)) return e;
  if (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e))
    return unwrap(e.expression);
  if (ts.isCallExpression(e) && e.arguments[0] !== undefined) return unwrap(e.arguments[0]);
  return undefined;
}
