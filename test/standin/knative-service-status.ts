// Pure: a Knative Service's status as its Configuration and Route reconcilers
// would leave it: latest created/ready revisions, ConfigurationsReady, the
// route's resolved traffic (latestRevision → the latest ready revision, tag
// URLs), RoutesReady with Knative's own reasons and messages, and Ready from
// both. A traffic target that cannot be served leaves the previous resolved
// traffic in place, as Knative keeps serving the last good route.

import { applyConditions, findCondition } from './conditions.ts';
import type { ConditionSet, ConditionStatus, ConditionUpdate } from './conditions.ts';
import type { KubeObject } from './kube.ts';
import { LABEL, configurationGeneration, followsLatest, specTraffic } from './knative-revision.ts';
import type { RevisionPlan } from './knative-revision.ts';

export const SERVICE_CONDITIONS: ConditionSet = { happy: 'Ready', dependents: ['ConfigurationsReady', 'RoutesReady'] };

export interface ServiceStatusInput {
  ksvc: KubeObject;
  /** The plan after it was carried out (a `create` plan's revision now exists). */
  plan: RevisionPlan;
  owned: readonly KubeObject[];
  /** Any revision in the Service's namespace. */
  byName: (name: string) => KubeObject | undefined;
  domain: string;
  nowMs: number;
}

export interface TrafficTarget {
  tag?: string;
  revisionName: string;
  latestRevision: boolean;
  percent: number;
  url?: string;
}

interface TargetError extends ConditionUpdate {
  failure: boolean;
}

function readiness(rev: KubeObject | undefined): ConditionStatus | undefined {
  return rev ? (findCondition(rev.status?.conditions, 'Ready')?.status ?? 'Unknown') : undefined;
}

/** Configuration's findAndSetLatestReadyRevision: newest ready at or after the current latest ready; a BYO name first. */
export function latestReadyRevision(ksvc: KubeObject, owned: readonly KubeObject[], latestCreated: string | undefined): string | undefined {
  const previous: string | undefined = ksvc.status?.latestReadyRevisionName;
  const prevRev = previous ? owned.find((r) => r.metadata.name === previous) : undefined;
  const floor = prevRev ? configurationGeneration(prevRev) : 0;
  const byo: string | undefined = ksvc.spec?.template?.metadata?.name;
  const candidates = owned
    .filter((r) => configurationGeneration(r) >= floor || r.metadata.name === latestCreated)
    .sort((a, b) => Number(b.metadata.name === byo) - Number(a.metadata.name === byo) || configurationGeneration(b) - configurationGeneration(a));
  const ready = candidates.find((r) => readiness(r) === 'True');
  return ready?.metadata.name ?? (prevRev ? previous : undefined);
}

/** Knative's webhook checks on spec.traffic (route_validation.go); the stand-in reports what it would reject. */
export function validateTraffic(traffic: readonly any[]): string | undefined {
  const errors: string[] = [];
  const tags = new Map<string, number>();
  let sum = 0;
  traffic.forEach((t, i) => {
    sum += t.percent ?? 0;
    if (t.latestRevision !== undefined && t.latestRevision === Boolean(t.revisionName)) {
      errors.push(`may not set revisionName "${t.revisionName ?? ''}" when latestRevision is ${t.latestRevision}: spec.traffic[${i}].latestRevision`);
    }
    if (t.tag) {
      const first = tags.get(t.tag);
      if (first !== undefined) errors.push(`Multiple definitions for "${t.tag}": spec.traffic[${i}].tag, spec.traffic[${first}].tag`);
      else tags.set(t.tag, i);
    }
  });
  if (sum !== 100) errors.push(`Traffic targets sum to ${sum}, want 100: spec.traffic`);
  return errors.length ? errors.join('\n') : undefined;
}

/** The route's traffic, or the target error Knative would report (a failure overrides a not-ready). */
export function resolveTraffic(
  ksvc: KubeObject, targets: readonly any[], latestReady: string | undefined, configFailed: boolean,
  byName: (name: string) => KubeObject | undefined, domain: string,
): { traffic: TrafficTarget[] } | { error: TargetError } {
  const { name, namespace } = ksvc.metadata;
  let error: TargetError | undefined;
  const defer = (e: TargetError) => { if (!error || e.failure) error = e; };
  const resolved: TrafficTarget[] = [];
  for (const t of targets) {
    const latest = followsLatest(t);
    let revisionName: string | undefined;
    if (latest) {
      if (!latestReady) {
        defer(configFailed
          ? { type: 'RoutesReady', status: 'False', failure: true, reason: 'RevisionMissing', message: `Configuration "${name}" does not have any ready Revision.` }
          : { type: 'RoutesReady', status: 'Unknown', failure: false, reason: 'RevisionMissing', message: `Configuration "${name}" is waiting for a Revision to become ready.` });
        continue;
      }
      revisionName = latestReady;
    } else {
      revisionName = t.revisionName as string;
      const rev = byName(revisionName);
      const owner = rev?.metadata.labels?.[LABEL.service];
      if (!rev) {
        defer({ type: 'RoutesReady', status: 'False', failure: true, reason: 'RevisionMissing', message: `Revision "${revisionName}" referenced in traffic not found.` });
        continue;
      }
      if (owner !== name) {
        defer(owner
          ? { type: 'RoutesReady', status: 'False', failure: true, reason: 'RevisionNotOwned', message: `Revision "${revisionName}" belongs to Service "${owner}", not Service "${name}".` }
          : { type: 'RoutesReady', status: 'False', failure: true, reason: 'RevisionNotOwned', message: `Revision "${revisionName}" does not belong to Service "${name}".` });
        continue;
      }
      const state = readiness(rev);
      if (state === 'False') {
        defer({ type: 'RoutesReady', status: 'False', failure: true, reason: 'RevisionMissing', message: `Revision "${revisionName}" failed to become ready.` });
        continue;
      }
      if (state !== 'True') {
        defer({ type: 'RoutesReady', status: 'Unknown', failure: false, reason: 'RevisionMissing', message: `Revision "${revisionName}" is not yet ready.` });
        continue;
      }
    }
    const entry: TrafficTarget = {
      ...(t.tag ? { tag: t.tag } : {}),
      revisionName,
      latestRevision: latest,
      percent: t.percent ?? 0,
      ...(t.tag ? { url: `http://${t.tag}-${name}.${namespace}.${domain}` } : {}),
    };
    // mergeIfNecessary: the same revision under the same tag and sense is one entry.
    const same = resolved.find((r) => r.tag === entry.tag && r.revisionName === entry.revisionName && r.latestRevision === entry.latestRevision);
    if (same) same.percent += entry.percent;
    else resolved.push(entry);
  }
  return error ? { error } : { traffic: resolved };
}

export function serviceStatus(input: ServiceStatusInput): any {
  const { ksvc, plan, owned, byName, domain, nowMs } = input;
  const { name, namespace } = ksvc.metadata;
  const previous = ksvc.status ?? {};
  const latestCreated = plan.kind === 'invalid' ? plan.keep : plan.name;
  const latestReady = latestReadyRevision(ksvc, owned, latestCreated);
  const createdState = readiness(latestCreated ? byName(latestCreated) : undefined);

  let configuration: ConditionUpdate;
  if (plan.kind === 'invalid') {
    configuration = { type: 'ConfigurationsReady', status: 'False', ...plan.failure };
  } else if (createdState === 'True') {
    configuration = { type: 'ConfigurationsReady', status: 'True' };
  } else if (createdState === 'False') {
    const message = findCondition(byName(latestCreated!)?.status?.conditions, 'Ready')?.message ?? '';
    configuration = { type: 'ConfigurationsReady', status: 'False', reason: 'RevisionFailed', message: `Revision "${latestCreated}" failed with message: ${message}.` };
  } else {
    configuration = { type: 'ConfigurationsReady', status: 'Unknown' };
  }

  const targets = specTraffic(ksvc);
  const invalid = validateTraffic(targets);
  const outcome = invalid
    ? { error: { type: 'RoutesReady', status: 'False', reason: 'ValidationFailed', message: `admission webhook "validation.webhook.serving.knative.dev" would deny this: validation failed: ${invalid}` } as ConditionUpdate }
    : resolveTraffic(ksvc, targets, latestReady, configuration.status === 'False' && !latestReady, byName, domain);

  const routes: ConditionUpdate = 'error' in outcome
    ? { type: 'RoutesReady', status: outcome.error.status, reason: outcome.error.reason, message: outcome.error.message }
    : { type: 'RoutesReady', status: 'True' };
  const traffic = 'traffic' in outcome ? outcome.traffic : previous.traffic;
  const address = 'traffic' in outcome ? { url: `http://${name}.${namespace}.svc.cluster.local` } : previous.address;

  return {
    observedGeneration: ksvc.metadata.generation ?? 1,
    conditions: applyConditions(SERVICE_CONDITIONS, previous.conditions, [configuration, routes], nowMs),
    ...(latestCreated ? { latestCreatedRevisionName: latestCreated } : {}),
    ...(latestReady ? { latestReadyRevisionName: latestReady } : {}),
    url: `http://${name}.${namespace}.${domain}`,
    ...(address ? { address } : {}),
    ...(traffic ? { traffic } : {}),
  };
}

/**
 * Percent the Service's spec means a revision to get once it is Ready: named
 * targets, plus latestRevision targets if it is the latest created. Lets a
 * revision that just became Ready keep its pods instead of dipping to zero for
 * the moment before the route points at it.
 */
export function intendedPercent(ksvc: KubeObject | undefined, revision: string): number {
  if (!ksvc) return 0;
  const latest = ksvc.status?.latestCreatedRevisionName === revision;
  return specTraffic(ksvc).reduce((sum, t) => sum + ((followsLatest(t) ? latest : t.revisionName === revision) ? (t.percent ?? 0) : 0), 0);
}

/** Percent per revision in a Service's resolved traffic. */
export function trafficByRevision(status: any): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of status?.traffic ?? []) if (t.revisionName) out.set(t.revisionName, (out.get(t.revisionName) ?? 0) + (t.percent ?? 0));
  return out;
}
