// Where code writes to the API server, found by the TypeScript type checker
// for the architecture test's one-write-path rule. A write is any use of a
// writing method of runtime/client.ts's KubeClient, however the client is
// held: `this.client.apply(...)`, an alias (`const c = mgr.client; c.apply(...)`),
// a method taken by destructuring (`const { apply } = client`) or by element
// access (`client[verb]`, each verb the index's type allows). A client that
// leaves its type (given to an interface, `object`, `unknown` or `any`: an
// interface-typed alias, `Reflect.get(client, 'apply')`, a destructuring
// assignment) counts as a write of every method the new type may reach,
// since the checker cannot follow it further. The writing
// methods are read from the class itself: its public methods that send a
// request other than a GET, so a new one is covered the day it is added.
import ts from 'typescript';
import { lineOf, walk } from './module-loads.ts';

export interface ApiWrite {
  fileName: string;
  line: number;
  /** The writing methods it may use (several for `client[verb]`, or for a client that leaves its type). */
  verbs: string[];
  /** A call that passes `dryRun: true` in its options: the API server stores nothing. */
  dryRun: boolean;
}

/**
 * A program over `rootNames` with `tsconfig`'s options. `extra`: sources that exist only in memory,
 * by absolute file name (a test's fixture beside the real files), added to the roots.
 */
export function programOf(tsconfig: string, rootNames: string[], extra: Record<string, string> = {}): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(tsconfig, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); },
  });
  if (!config) throw new Error(`cannot read ${tsconfig}`);
  const host = ts.createCompilerHost(config.options, true);
  const real = { getSourceFile: host.getSourceFile, fileExists: host.fileExists, readFile: host.readFile };
  host.getSourceFile = (name, version, ...rest) => (name in extra ? ts.createSourceFile(name, extra[name]!, version, true) : real.getSourceFile(name, version, ...rest));
  host.fileExists = (name) => name in extra || real.fileExists(name);
  host.readFile = (name) => extra[name] ?? real.readFile(name);
  return ts.createProgram([...rootNames, ...Object.keys(extra)], config.options, host);
}

/** The class KubeClient of `clientFile`. */
function kubeClientClass(program: ts.Program, clientFile: string): ts.ClassDeclaration {
  const client = program.getSourceFile(clientFile)?.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === 'KubeClient');
  if (!client) throw new Error(`no class KubeClient in ${clientFile}`);
  return client;
}

/** KubeClient's methods that write: public, and sending a request whose method is not GET. */
export function writeMethods(program: ts.Program, clientFile: string): ts.MethodDeclaration[] {
  return kubeClientClass(program, clientFile).members.filter((m): m is ts.MethodDeclaration => ts.isMethodDeclaration(m) && !isPrivate(m) && requestMethods(m).some((x) => x !== 'GET'));
}

/** Every write in the files `include` selects. */
export function apiWrites(program: ts.Program, clientFile: string, include: (fileName: string) => boolean): ApiWrite[] {
  const checker = program.getTypeChecker();
  const methods = writeMethods(program, clientFile).map((m) => ({ declaration: m, name: (m.name as ts.Identifier).text, type: checker.getTypeOfSymbol(checker.getSymbolAtLocation(m.name)!) }));
  const names = new Set(methods.map((m) => m.name));
  /** The writing methods an expression or binding may hold, by its symbol or its type. */
  const verbsOf = (node: ts.Node, symbolAt?: ts.Node): string[] => {
    const declarations = (symbolAt && checker.getSymbolAtLocation(symbolAt)?.declarations) ?? [];
    const type = checker.getTypeAtLocation(node);
    const types = type.isUnion() ? type.types : [type];
    return methods.filter((m) => declarations.includes(m.declaration) || types.includes(m.type)).map((m) => m.name);
  };
  const clientClass = kubeClientClass(program, clientFile);
  /** What a client whose further use the checker cannot follow may write with. */
  const everyVerb = [...names].sort();
  const isClient = (t: ts.Type) => (t.isUnion() ? t.types : [t]).some((u) => u.getSymbol()?.declarations?.includes(clientClass) ?? false);
  /** A name or a property that holds a KubeClient: the places it can be handed on from. */
  const isClientExpression = (node: ts.Node) => (ts.isIdentifier(node) || ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) && isClient(checker.getTypeAtLocation(node));
  /** The writing methods a client given to `target` may be reached by: none while it stays a KubeClient or goes to a type without them. */
  const escapesTo = (target: ts.Type | undefined): string[] => {
    if (!target || isClient(target)) return [];
    const opaque = (t: ts.Type) => (t.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.NonPrimitive | ts.TypeFlags.TypeParameter)) !== 0
      || (t.getProperties().length === 0 && !!(t.flags & ts.TypeFlags.Object));
    const parts = target.isUnion() || target.isIntersection() ? target.types : [target];
    if (parts.some(opaque)) return everyVerb;
    return everyVerb.filter((n) => parts.some((t) => t.getProperty(n) !== undefined));
  };
  /** A client given to a function declared outside the program's sources (Reflect.get, Object.assign): what it does with it is not checked. */
  const toLibrary = (node: ts.Node) => {
    const call = node.parent;
    if (!call || !(ts.isCallExpression(call) || ts.isNewExpression(call)) || !call.arguments?.includes(node as ts.Expression)) return false;
    const declaration = checker.getResolvedSignature(call)?.getDeclaration();
    return !!declaration && declaration.getSourceFile().isDeclarationFile;
  };
  const writes: ApiWrite[] = [];
  for (const source of program.getSourceFiles()) {
    if (source.isDeclarationFile || !include(source.fileName)) continue;
    walk(source, (node) => {
      let verbs: string[] = [];
      // Only a name that is a writing method's, or one computed, can take one: the checker is asked about those alone.
      if (ts.isPropertyAccessExpression(node) && names.has(node.name.text)) verbs = verbsOf(node, node.name);
      else if (ts.isElementAccessExpression(node)) verbs = verbsOf(node, node.argumentExpression);
      else if (ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
        const key = node.propertyName ?? node.name;
        if (ts.isComputedPropertyName(key) || (ts.isIdentifier(key) && names.has(key.text)) || (ts.isStringLiteral(key) && names.has(key.text))) verbs = verbsOf(node.name);
      }
      // A destructuring declaration's client is not handed on: its bindings are (above).
      const destructured = node.parent !== undefined && ts.isVariableDeclaration(node.parent) && node.parent.initializer === node && ts.isObjectBindingPattern(node.parent.name);
      if (verbs.length === 0 && !destructured && isClientExpression(node)) verbs = toLibrary(node) ? everyVerb : escapesTo(checker.getContextualType(node as ts.Expression));
      if (verbs.length === 0) return;
      const call = ts.isCallExpression(node.parent) && node.parent.expression === node ? node.parent : undefined;
      const dryRun = call !== undefined && verbs.every((v) => passesDryRun(call, methods.find((m) => m.name === v)!.declaration));
      writes.push({ fileName: source.fileName, line: lineOf(node), verbs, dryRun });
    });
  }
  return writes;
}

/** Whether `call` passes, as the method's `opts`, an object literal that says `dryRun: true`. */
function passesDryRun(call: ts.CallExpression, method: ts.MethodDeclaration): boolean {
  const index = method.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === 'opts');
  const opts = index < 0 ? undefined : call.arguments[index];
  return opts !== undefined && ts.isObjectLiteralExpression(opts) && opts.properties.some((p) =>
    ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === 'dryRun' && p.initializer.kind === ts.SyntaxKind.TrueKeyword);
}

/** The HTTP methods a method's requests name (`method: 'PATCH'` in the spec it sends). */
function requestMethods(method: ts.MethodDeclaration): string[] {
  const found: string[] = [];
  walk(method, (node) => {
    if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === 'method' && ts.isStringLiteral(node.initializer)) found.push(node.initializer.text);
  });
  return found;
}

const isPrivate = (m: ts.MethodDeclaration) => ts.isPrivateIdentifier(m.name) || (ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
