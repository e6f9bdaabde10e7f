// Executes a plan's operations in order, each only when its guard holds,
// through the one write path (ChildWriter) with the rule its kind declares.
// A write the API server refuses, or an object the app does not control, is
// collected as a Refusal and does not stop the others; any other failure is
// thrown (the queue retries with backoff). What happened goes back to the plan.
// Both controllers execute their plans here: the model-cache controller's
// operations (a finalizer among them) for an app that may be gone.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { guardHolds, type AppOperation, type ChildOperation, type ChildOutcome, type Executed, type Guarded, type Outcome, type Refusal } from '../planner/plan.ts';
import { WRITE_RULES } from '../planner/write-rules.ts';
import { WriteRejected, type ChildWriter } from './children.ts';

/** Runs each operation whose guard holds; a refusal is an outcome, not a failure. */
export async function executeOperations<Op extends Guarded>(operations: readonly Op[], run: (op: Op) => Promise<ChildOutcome>): Promise<Executed<Op>[]> {
  const done: Executed<Op>[] = [];
  for (const op of operations) {
    if (!guardHolds(op, done)) {
      done.push({ op, outcome: 'skipped' });
      continue;
    }
    try {
      done.push({ op, outcome: await run(op) });
    } catch (err) {
      if (!(err instanceof WriteRejected)) throw err;
      done.push({ op, outcome: 'rejected', refusal: refusalOf(err) });
    }
  }
  return done;
}

/** The ServerlessApp controller's child operations; `signal`: the reconcile's (runtime/controller.ts ReconcileContext). */
export async function execute(children: ChildWriter, app: ServerlessApp, operations: ChildOperation[], signal?: AbortSignal): Promise<Outcome> {
  return { operations: await executeOperations(operations, (op) => run(children, app, op, signal)) };
}

/** The model-cache controller's operations: `app` is undefined once the app is gone (its caches may not be). */
export function executeForApp<Op extends AppOperation>(children: ChildWriter, app: ServerlessApp | undefined, operations: readonly Op[], signal?: AbortSignal): Promise<Executed<Op>[]> {
  return executeOperations(operations, (op) => run(children, app, op, signal));
}

/** `signal`: the reconcile's (runtime/controller.ts ReconcileContext), aborted when the lease is lost. */
async function run(children: ChildWriter, app: ServerlessApp | undefined, op: AppOperation, signal: AbortSignal | undefined): Promise<ChildOutcome> {
  switch (op.action) {
    case 'ensure': return await children.ensure(op.kind, need(op, op.desired), op.live, WRITE_RULES[op.write ?? 'apply'], signal) ? 'written' : 'unchanged';
    case 'annotate': return await children.annotate(op.kind, need(op, op.live), op.annotations ?? {}, signal) ? 'written' : 'unchanged';
    case 'remove': return await children.remove(op.kind, op.live, op.labelledFor ?? app, signal) ? 'removed' : 'unchanged';
    case 'claim': return await children.createOnce(op.kind, need(op, op.desired), signal) ? 'written' : 'unchanged';
    case 'finalizer': return await children.finalizer(need(op, app), op.name, op.present, signal) ? 'written' : 'unchanged';
  }
}

function need<T>(op: Guarded & { action: string }, value: T | undefined): T {
  if (value === undefined) throw new Error(`plan operation ${op.id} (${op.action}) carries no object`);
  return value;
}

function refusalOf(err: WriteRejected): Refusal {
  return {
    kind: err.kind, object: err.object, reason: err.reason, message: err.message, summary: err.summary, retry: err.retry,
    ...(err.namespaceTerminating ? { namespaceTerminating: true } : {}),
  };
}
