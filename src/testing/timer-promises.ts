// Where a source sleeps, read from its syntax tree for the architecture test: a
// promise that a timer settles. Whatever its spelling, a sleep is one of
//  - a load of timers/promises (`node:` or not, imported, re-exported or required),
//  - util.promisify(setTimeout),
//  - a setTimeout (through any object: `globalThis.setTimeout` too) whose
//    callback is the resolve of an enclosing `new Promise` executor, passed as
//    it is or called with nothing (`() => done()`).
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
  walk(source, (node) => {
    if (!ts.isCallExpression(node)) return;
    const callee = calleeName(node);
    const [callback] = node.arguments;
    if (callee === 'promisify' && callback && nameOf(callback) === 'setTimeout') found.push(at(node));
    if (callee === 'setTimeout' && callback && resolvesPromise(callback, resolvesAround(node))) found.push(at(node));
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

/** A callback that is a resolve, or calls one with no value. */
function resolvesPromise(callback: ts.Expression, resolves: Set<string>): boolean {
  if (ts.isIdentifier(callback)) return resolves.has(callback.text);
  if (!ts.isArrowFunction(callback) && !ts.isFunctionExpression(callback)) return false;
  let calls = false;
  walk(callback.body, (node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && resolves.has(node.expression.text)
      && node.arguments.every((a) => ts.isIdentifier(a) && a.text === 'undefined')) calls = true;
  });
  return calls;
}
