// Pure: a Revision's status as Knative's revision reconciler and autoscaler
// would report it, from a simplified replica model (see README.md): while
// starting, desired = max(initial-scale, min-scale); once Ready, desired =
// max(min-scale, 1 if it has traffic), where min-scale counts only for a
// reachable revision (routingState not `reserve`, as PodAutoscaler.ScaleBounds),
// capped by max-scale; actual = desired once Ready, 0 before. The autoscaling
// annotations are read from the Revision itself on every pass, because Knative
// v1.21+ lets them be edited in place (serving PR #16186).

import { applyConditions, findCondition } from './conditions.ts';
import type { Condition, ConditionSet, ConditionUpdate } from './conditions.ts';
import type { KubeObject } from './kube.ts';
import { LABEL } from './knative-revision.ts';

export const AUTOSCALING = 'autoscaling.knative.dev';
export const REVISION_CONDITIONS: ConditionSet = { happy: 'Ready', dependents: ['ResourcesAvailable', 'ContainerHealthy'] };
/** Test/demo convention: a revision whose first container image contains this never becomes Ready. */
export const UNREADY_IMAGE_MARKER = 'unready';

export interface ScaleBounds {
  minScale: number;
  /** 0 = unbounded */
  maxScale: number;
  initialScale: number;
}

export interface RevisionStatusInput {
  revision: KubeObject;
  /** When the stand-in first saw the revision (ms). */
  startedAtMs: number;
  nowMs: number;
  readyDelayMs: number;
  /** A revision still not Ready this long after it started fails with ProgressDeadlineExceeded. */
  progressDeadlineMs?: number;
  held: boolean;
  /** Sum of this revision's percent in its Service's routed traffic (status.traffic). */
  trafficPercent: number;
  /** The percent its Service's spec gives it once Ready (see intendedPercent). */
  intendedPercent: number;
}

export interface RevisionStatusResult {
  status: any;
  /** When to look again (the revision is starting). */
  requeueAfterMs?: number;
}

function annotationInt(annotations: Record<string, string>, key: string): number | undefined {
  const raw = annotations[`${AUTOSCALING}/${key}`];
  if (raw === undefined || !/^\s*\d+\s*$/.test(raw)) return undefined;
  return Number(raw);
}

export function scaleBounds(annotations: Record<string, string> | undefined): ScaleBounds {
  const a = annotations ?? {};
  return {
    minScale: annotationInt(a, 'min-scale') ?? 0,
    maxScale: annotationInt(a, 'max-scale') ?? 0,
    // config-autoscaler defaults: initial-scale 1, allow-zero-initial-scale false.
    initialScale: Math.max(1, annotationInt(a, 'initial-scale') ?? 1),
  };
}

export function neverReady(revision: KubeObject): boolean {
  const image: string = revision.spec?.containers?.[0]?.image ?? '';
  return image.includes(UNREADY_IMAGE_MARKER);
}

function cap(n: number, max: number): number {
  return max > 0 ? Math.min(n, max) : n;
}

export function revisionStatus(input: RevisionStatusInput): RevisionStatusResult {
  const { revision, nowMs } = input;
  const previous: Condition[] | undefined = revision.status?.conditions;
  const bounds = scaleBounds(revision.metadata.annotations);
  const reachable = revision.metadata.labels?.[LABEL.routingState] !== 'reserve';
  const minScale = reachable ? bounds.minScale : 0;
  const blocked = input.held || neverReady(revision);
  const wasReady = findCondition(previous, 'Ready')?.status === 'True';
  const elapsed = nowMs - input.startedAtMs;
  const ready = !blocked && (wasReady || elapsed >= input.readyDelayMs);

  let updates: ConditionUpdate[];
  let desired: number;
  let actual: number;
  let requeueAfterMs: number | undefined;
  if (ready) {
    const served = input.trafficPercent > 0 || input.intendedPercent > 0;
    desired = cap(Math.max(minScale, served ? 1 : 0), bounds.maxScale);
    actual = desired;
    updates = [
      { type: 'ResourcesAvailable', status: 'True' },
      { type: 'ContainerHealthy', status: 'True' },
      actual > 0 ? { type: 'Active', status: 'True' } : noTraffic(),
    ];
  } else if (!wasReady && input.progressDeadlineMs !== undefined && elapsed >= input.progressDeadlineMs) {
    desired = 0;
    actual = 0;
    updates = [
      { type: 'ResourcesAvailable', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'Initial scale was never achieved' },
      { type: 'ContainerHealthy', status: 'Unknown' },
      noTraffic(),
    ];
  } else {
    desired = cap(Math.max(bounds.initialScale, minScale), bounds.maxScale);
    actual = 0;
    updates = [
      { type: 'ResourcesAvailable', status: 'Unknown', reason: 'Deploying' },
      { type: 'ContainerHealthy', status: 'Unknown' },
      { type: 'Active', status: 'Unknown', reason: 'Deploying' },
    ];
    if (!blocked) requeueAfterMs = Math.max(1, input.readyDelayMs - elapsed);
    else if (input.progressDeadlineMs !== undefined) requeueAfterMs = Math.max(1, input.progressDeadlineMs - elapsed);
  }
  const status = {
    observedGeneration: revision.metadata.generation ?? 1,
    conditions: applyConditions(REVISION_CONDITIONS, previous, updates, nowMs),
    actualReplicas: actual,
    desiredReplicas: desired,
  };
  return requeueAfterMs === undefined ? { status } : { status, requeueAfterMs };
}

function noTraffic(): ConditionUpdate {
  // The PodAutoscaler's "inactive" state, as Knative reports a revision scaled to zero.
  return { type: 'Active', status: 'False', reason: 'NoTraffic', message: 'The target is not receiving traffic.' };
}
