// What a source file loads when it runs, read from its syntax tree (the
// TypeScript parser, not patterns over text), for the architecture test. A load
// is any way a module comes in: an import or re-export (a side-effect one too),
// import(), require() (createRequire's included), process.getBuiltinModule() and
// util/lazy-require.ts's lazyRequire(). `import type` and `export type` vanish
// when Node strips types; `import { type A } from 'x'` does not: Node still
// loads x (for its side effects), so it is a load that brings no names.
import { builtinModules } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

export interface Load {
  /** The module named, as written; undefined when the name is computed at run time. */
  specifier: string | undefined;
  how: 'import' | 'export' | 'import()' | 'require' | 'getBuiltinModule' | 'lazyRequire';
  /** The names taken from it ('*': all of them, as a namespace, a re-export of all, or a dynamic load). */
  names: string[] | '*';
  line: number;
}

/** The syntax tree of a source (TypeScript or JavaScript, ESM or CommonJS). */
export function parse(text: string, fileName = 'source.ts'): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

/** Calls every node of the tree, depth first. */
export function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  ts.forEachChild(node, (child) => walk(child, visit));
}

export const lineOf = (node: ts.Node): number => node.getSourceFile().getLineAndCharacterOfPosition(node.getStart()).line + 1;

/** The name a call is made through, whatever holds it: `f()`, `x.f()` and `x['f']()` are all calls of f. */
export function calleeName(call: ts.CallExpression | ts.NewExpression): string | undefined {
  return nameOf(call.expression);
}

/** The name an expression refers to: `f`, `x.f` and `x['f']` all name f. */
export function nameOf(e: ts.Expression): string | undefined {
  if (ts.isIdentifier(e)) return e.text;
  if (ts.isPropertyAccessExpression(e)) return e.name.text;
  if (ts.isElementAccessExpression(e) && ts.isStringLiteralLike(e.argumentExpression)) return e.argumentExpression.text;
  return undefined;
}

/** A source as its tree: parse once, ask several questions. */
export type Source = string | ts.SourceFile;
export const tree = (s: Source): ts.SourceFile => (typeof s === 'string' ? parse(s) : s);

/** Every module a source loads at run time. */
export function loadsOf(text: Source): Load[] {
  const source = tree(text);
  const out: Load[] = [];
  // `const load = createRequire(import.meta.url)`: calls of `load` are requires too.
  const requires = new Set(['require']);
  walk(source, (node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && ts.isCallExpression(node.initializer) && calleeName(node.initializer) === 'createRequire') requires.add(node.name.text);
  });
  walk(source, (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteralLike(node.moduleSpecifier)) {
      const clause = node.importClause;
      if (clause?.isTypeOnly) return;
      out.push({ specifier: node.moduleSpecifier.text, how: 'import', names: importedNames(clause), line: lineOf(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteralLike(node.moduleSpecifier)) {
      if (node.isTypeOnly) return;
      const names = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements.filter((e) => !e.isTypeOnly).map((e) => (e.propertyName ?? e.name).text) : '*';
      out.push({ specifier: node.moduleSpecifier.text, how: 'export', names, line: lineOf(node) });
    } else if (ts.isCallExpression(node)) {
      const how = node.expression.kind === ts.SyntaxKind.ImportKeyword ? 'import()'
        : ts.isIdentifier(node.expression) && requires.has(node.expression.text) ? 'require'
        : calleeName(node) === 'getBuiltinModule' ? 'getBuiltinModule'
        : calleeName(node) === 'lazyRequire' ? 'lazyRequire'
        : undefined;
      if (!how) return;
      const [first] = node.arguments;
      out.push({ specifier: first && ts.isStringLiteralLike(first) ? first.text : undefined, how, names: '*', line: lineOf(node) });
    }
  });
  return out;
}

function importedNames(clause: ts.ImportClause | undefined): string[] | '*' {
  if (!clause) return []; // import 'x': for its side effects
  const names = clause.name ? ['default'] : [];
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamespaceImport(bindings)) return '*';
  for (const e of bindings?.elements ?? []) if (!e.isTypeOnly) names.push((e.propertyName ?? e.name).text);
  return names;
}

/**
 * Where a source uses the global `name` (Node's fetch, WebSocket, ...), called
 * or taken as a value, directly or through globalThis: a way to the network
 * that loads no module. A method of the same name on another object
 * (`client.fetch`) is not the global.
 */
export function globalUses(text: Source, name: string): number[] {
  const lines: number[] = [];
  walk(tree(text), (node) => {
    const direct = ts.isIdentifier(node) && node.text === name && isValueReference(node);
    const throughGlobalThis = (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) && nameOf(node) === name
      && ts.isIdentifier(node.expression) && ['globalThis', 'global'].includes(node.expression.text);
    if (direct || throughGlobalThis) lines.push(lineOf(node));
  });
  return lines;
}

/** An identifier that reads a variable (not a property name, a declaration, a key or a type). */
function isValueReference(id: ts.Identifier): boolean {
  const p = id.parent;
  if ((ts.isPropertyAccessExpression(p) && p.name === id) || ts.isQualifiedName(p) || ts.isTypeReferenceNode(p) || ts.isTypeQueryNode(p)) return false;
  if ((ts.isPropertyAssignment(p) || ts.isMethodDeclaration(p) || ts.isPropertyDeclaration(p) || ts.isPropertySignature(p) || ts.isMethodSignature(p)) && p.name === id) return false;
  if ((ts.isVariableDeclaration(p) || ts.isParameter(p) || ts.isFunctionDeclaration(p) || ts.isBindingElement(p)) && p.name === id) return false;
  if (ts.isImportSpecifier(p) || ts.isExportSpecifier(p) || ts.isImportClause(p)) return false;
  return true;
}

/**
 * One name for a module, however a source names it: a file as its path from
 * `root`, a built-in as `node:name` (`'http'` is `node:http`), a package as
 * `npm:name` (a subpath is its package).
 */
export function moduleId(root: string, fromFile: string, specifier: string): string {
  if (specifier.startsWith('.') || specifier.startsWith('/')) return relative(root, resolve(root, dirname(fromFile), specifier));
  if (specifier.startsWith('node:')) return specifier;
  if (builtinModules.includes(specifier)) return `node:${specifier}`;
  const parts = specifier.split('/');
  return `npm:${parts.slice(0, specifier.startsWith('@') ? 2 : 1).join('/')}`;
}
