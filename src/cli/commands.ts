// The rollout commands of `kubectl sapp` as pure edits: from the app as it is
// now and a command, the server-side apply body that makes the change. Server-
// side apply removes a field its manager stops stating, so every body states
// again the rollout controls kubectl-sapp already owns (read from
// managedFields) at their current values, next to the change: `pause` and then
// `set-weight 20` leaves the rollout paused at 20%.

import { API_VERSION, KIND, type RolloutSpec, type ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { PROBLEM_REASONS } from '../api/v1alpha1/problem-reasons.ts';
import { failureHolds } from '../rollout/canary.ts';
import { appliedFields, type ManagedFieldsEntry } from '../runtime/apply.ts';
import { findCondition } from '../util/conditions.ts';

export const FIELD_MANAGER = 'kubectl-sapp';

/** The spec.rollout fields the commands write. */
export const ROLLOUT_CONTROLS = ['canaryPercent', 'paused', 'abort', 'retry', 'promote'] as const;
type Control = (typeof ROLLOUT_CONTROLS)[number];
type Controls = Partial<Pick<RolloutSpec, Control>>;

export type RolloutCommand =
  | { verb: 'promote' | 'abort' | 'retry' | 'pause' | 'resume' }
  | { verb: 'set-weight'; weight: number };

/** An app as read from the API server, with the managedFields the apply body is built from. */
export type LiveApp = ServerlessApp & { metadata: ServerlessApp['metadata'] & { managedFields?: ManagedFieldsEntry[] } };

export interface RolloutEdit {
  /** The server-side apply body (field manager kubectl-sapp). */
  body: { apiVersion: string; kind: string; metadata: { name: string; namespace: string; resourceVersion?: string }; spec: { rollout: Controls } };
  /** What happened, in a few words: `serverlessapp "shop" <done>`. */
  done: string;
  /** Fields this edit takes from other managers (force): a GitOps sync would set them back. */
  takenOver: Array<{ field: string; managers: string[] }>;
}

/** A command that cannot apply to the app as it is; the message says why and what to do. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}

/** The weight argument of set-weight: a whole percentage. */
export function parseWeight(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) > 100) throw weightError(text);
  return Number(text);
}

const weightError = (value: string) => new CommandError(`set-weight takes a whole percentage from 0 to 100, not ${value}`);

export function rolloutEdit(app: LiveApp, command: RolloutCommand): RolloutEdit {
  const { change, done } = changeFor(app, command);
  const current = app.spec.rollout ?? {};
  const kept: Controls = {};
  for (const field of ownedControls(app)) {
    if (current[field] !== undefined) Object.assign(kept, { [field]: current[field] });
  }
  return {
    body: {
      apiVersion: API_VERSION,
      kind: KIND,
      // The resourceVersion makes the apply fail (409) if the app changed since it was read: the edit is then rebuilt from the new state.
      metadata: { name: app.metadata.name, namespace: app.metadata.namespace, ...(app.metadata.resourceVersion ? { resourceVersion: app.metadata.resourceVersion } : {}) },
      spec: { rollout: { ...kept, ...change } },
    },
    done,
    takenOver: takenOver(app, change),
  };
}

function changeFor(app: LiveApp, command: RolloutCommand): { change: Controls; done: string } {
  const rollout = app.spec.rollout ?? {};
  const status = app.status ?? {};
  const candidate = status.versions?.candidate;
  const failure = status.canary?.failure;
  const name = app.metadata.name;
  switch (command.verb) {
    case 'pause':
      return { change: { paused: true }, done: 'paused' };
    case 'resume':
      return { change: { paused: false }, done: 'resumed' };
    case 'set-weight':
      if (!Number.isInteger(command.weight) || command.weight < 0 || command.weight > 100) throw weightError(String(command.weight));
      return { change: { canaryPercent: command.weight }, done: `canary weight set to ${command.weight}%` };
    case 'abort':
      if (!candidate) throw new CommandError(`${name} has no candidate to abort (phase ${status.phase ?? 'unknown'})`);
      return { change: { abort: true }, done: `aborted: all traffic back on the stable version, candidate ${candidate.version} scaled to zero` };
    case 'retry': {
      const problem = specProblem(app);
      if (problem) throw new CommandError(`${name} cannot be retried: the spec is invalid: ${problem}; fix the spec, retry is for a failed candidate`);
      if (rollout.abort === true || status.phase === 'Aborted') {
        return { change: { abort: false }, done: 'abort lifted: the candidate starts again from its first step' };
      }
      if (status.phase !== 'Failed' && !failure) throw new CommandError(`${name} has nothing to retry: it is ${status.phase ?? 'without status'}, not Failed or Aborted`);
      const retry = (failure?.retry ?? rollout.retry ?? 0) + 1;
      return { change: { retry }, done: `retried (rollout.retry ${retry}): the candidate starts again from its first step` };
    }
    case 'promote':
      if (!candidate) throw new CommandError(`${name} has no candidate to promote (phase ${status.phase ?? 'unknown'}): status.versions.candidate is empty`);
      if (rollout.abort === true) throw new CommandError(`the rollout of ${name} is aborted (spec.rollout.abort): run \`kubectl sapp retry ${name}\` to lift the abort first`);
      // The operator's rule (rollout/canary.ts failureHolds): a retry bumped since the failure lifts it, reconciled or not.
      if (failure && failure.version === candidate.version && failureHolds(failure, rollout.retry)) {
        throw new CommandError(`candidate ${candidate.version} of ${name} failed (${failure.reason}: ${failure.message}); promote does not override a failure: run \`kubectl sapp retry ${name}\` first`);
      }
      return { change: { promote: candidate.version }, done: `promoting candidate ${candidate.version}${candidate.summary ? ` (${candidate.summary})` : ''}` };
  }
}

/**
 * The message of a Ready=False the operator gave the current spec because it will not serve it
 * (PROBLEM_REASONS), or undefined. A status about an older generation says nothing
 * of the spec as it is now.
 */
export function specProblem(app: ServerlessApp): string | undefined {
  if (app.status?.observedGeneration === undefined || app.status.observedGeneration !== app.metadata.generation) return undefined;
  const ready = findCondition(app.status.conditions, 'Ready');
  return ready?.status === 'False' && (PROBLEM_REASONS as readonly string[]).includes(ready.reason) ? ready.message : undefined;
}

/** The rollout controls kubectl-sapp applied last time, as the API server tracks them. */
export function ownedControls(app: LiveApp): Control[] {
  const rollout = appliedFields(app, FIELD_MANAGER)?.['f:spec']?.['f:rollout'] ?? {};
  return ROLLOUT_CONTROLS.filter((field) => `f:${field}` in rollout);
}

/** Managers other than kubectl-sapp that own a field this change gives a new value. */
function takenOver(app: LiveApp, change: Controls): RolloutEdit['takenOver'] {
  const current = app.spec.rollout ?? {};
  const out: RolloutEdit['takenOver'] = [];
  for (const [field, value] of Object.entries(change)) {
    if (current[field as Control] === value) continue;
    const managers = (app.metadata.managedFields ?? [])
      .filter((e) => e.manager !== FIELD_MANAGER && !e.subresource && e.fieldsV1?.['f:spec']?.['f:rollout']?.[`f:${field}`] !== undefined)
      .map((e) => e.manager ?? '(unnamed)');
    if (managers.length > 0) out.push({ field: `spec.rollout.${field}`, managers: [...new Set(managers)] });
  }
  return out;
}
