// Where a source sleeps, read from its syntax tree for the architecture test: a
// promise that a timer settles. Whatever its spelling, a sleep is one of
//  - a load of timers/promises (`node:` or not, imported, re-exported or required),
//  - util.promisify(setTimeout),
//  - a setTimeout (through any object: `globalThis.setTimeout` too) whose
//    callback is a promise's resolve, passed as it is or called with nothing
//    (`() => done()`): the resolve of an enclosing `new Promise` executor, or
//    one held outside it (`Promise.withResolvers()`'s, or `wake = resolve`).
// A timer that rejects, or resolves with a value (a deadline's outcome), is a
// guard, not a sleep.
import ts from 'typescript';
import { calleeName, lineOf, loadsOf, nameOf, tree, walk, type Source } from './module-loads.ts';

export interface Sleep { line: number; text: string }

export function timerPromises(text: Source): Sleep[] {
  const source = tree(text);
  const at = (node: ts.Node): Sleep => ({ line: lineOf(node), text: node.getText().split('\n')[0]!.trim() });
  const lines = source.text.split('\n');
  const found: Sleep[] = loadsOf(source)
    .filter((l) => l.specifier !== undefined && /^(node:)?timers\/promises$/.test(l.specifier))
    .map((l) => ({ line: l.line, text: lines[l.line - 1]!.trim() }));
  const held = heldResolves(source);
  walk(source, (node) => {
    if (!ts.isCallExpression(node)) return;
    const callee = calleeName(node);
    const [callback] = node.arguments;
    if (callee === 'promisify' && callback && nameOf(callback) === 'setTimeout') found.push(at(node));
    if (callee === 'setTimeout' && callback && resolvesPromise(callback, new Set([...resolvesAround(node), ...held]))) found.push(at(node));
  });
  return found.sort((a, b) => a.line - b.line);
}

/** The resolve parameters of the `new Promise` executors that enclose `node`. */
function resolvesAround(node: ts.Node): Set<string> {
  const names = new Set<string>();
  for (let n: ts.Node = node; n.parent; n = n.parent) {
    const p = n.parent;
    if ((ts.isArrowFunction(n) || ts.isFunctionExpression(n)) && ts.isNewExpression(p) && nameOf(p.expression) === 'Promise' && p.arguments?.[0] === n) {
      const resolve = n.parameters[0]?.name;
      if (resolve && ts.isIdentifier(resolve)) names.add(resolve.text);
    }
  }
  return names;
}

/** What holds a resolve outside its executor: `const { resolve } = Promise.withResolvers()` (or `d.resolve`), `wake = r` inside one. */
function heldResolves(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const isExecutorResolve = (e: ts.Expression) => ts.isIdentifier(e) && resolvesAround(e).has(e.text);
  walk(source, (node) => {
    if (ts.isVariableDeclaration(node) && node.initializer && ts.isCallExpression(node.initializer) && calleeName(node.initializer) === 'withResolvers') {
      if (ts.isIdentifier(node.name)) names.add(`${node.name.text}.resolve`);
      if (ts.isObjectBindingPattern(node.name)) {
        for (const e of node.name.elements) if ((e.propertyName ?? e.name).getText() === 'resolve' && ts.isIdentifier(e.name)) names.add(e.name.text);
      }
    }
    if (ts.isVariableDeclaration(node) && node.initializer && isExecutorResolve(node.initializer)) names.add(node.name.getText());
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.EqualsToken && isExecutorResolve(node.right)) names.add(node.left.getText());
  });
  return names;
}

/** A callback that is a resolve (`r`, `d.resolve`), or calls one with no value. */
function resolvesPromise(callback: ts.Expression, resolves: Set<string>): boolean {
  if (ts.isIdentifier(callback) || ts.isPropertyAccessExpression(callback)) return resolves.has(callback.getText());
  if (!ts.isArrowFunction(callback) && !ts.isFunctionExpression(callback)) return false;
  let calls = false;
  walk(callback.body, (node) => {
    if (ts.isCallExpression(node) && resolves.has(node.expression.getText())
      && node.arguments.every((a) => ts.isIdentifier(a) && a.text === 'undefined')) calls = true;
  });
  return calls;
}
