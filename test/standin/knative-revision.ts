// Pure: which Revision a Knative Service's template stands for, and the
// Revision object Knative's Configuration reconciler would create for it
// (serving pkg/reconciler/configuration). There is no Configuration object in
// the stand-in: the Service plays it, and its "generation" is the highest
// serving.knative.dev/configurationGeneration among its revisions. The
// template each revision was made from is remembered as a hash annotation, so
// in-place edits of a Revision's annotations never look like a new template.

import { createHash } from 'node:crypto';
import type { KubeObject } from './kube.ts';

export const SERVING = 'serving.knative.dev';
export const LABEL = {
  service: `${SERVING}/service`,
  serviceUID: `${SERVING}/serviceUID`,
  configuration: `${SERVING}/configuration`,
  configurationGeneration: `${SERVING}/configurationGeneration`,
  revision: `${SERVING}/revision`,
  routingState: `${SERVING}/routingState`,
} as const;
export const ROUTES_ANNOTATION = `${SERVING}/routes`;
export const ROUTING_STATE_MODIFIED = `${SERVING}/routingStateModified`;
/** Stand-in bookkeeping, not written by real Knative. */
export const TEMPLATE_HASH = 'knative-standin.serverlessapp.io/template-hash';

export type RoutingState = 'active' | 'reserve' | 'pending';

export interface ConfigFailure {
  reason: string;
  message: string;
}

export type RevisionPlan =
  | { kind: 'existing'; name: string }
  | { kind: 'create'; name: string; generation: number }
  /** The template cannot become a revision; `keep` is the last good latest-created revision, if any. */
  | { kind: 'invalid'; failure: ConfigFailure; keep?: string };

/** JSON with sorted keys, so equal objects hash equally whatever their key order. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function templateHash(template: any): string {
  const t = template ?? {};
  const identity = { name: t.metadata?.name ?? '', labels: t.metadata?.labels ?? {}, annotations: t.metadata?.annotations ?? {}, spec: t.spec ?? {} };
  return createHash('sha256').update(stableStringify(identity)).digest('hex').slice(0, 16);
}

export function configurationGeneration(rev: KubeObject): number {
  return Number(rev.metadata.labels?.[LABEL.configurationGeneration] ?? 0) || 0;
}

export function controlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return (obj.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.metadata.uid);
}

/** Newest first, by configuration generation then creation time. */
export function newestFirst(revisions: readonly KubeObject[]): KubeObject[] {
  return [...revisions].sort((a, b) => configurationGeneration(b) - configurationGeneration(a)
    || (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? ''));
}

/**
 * Decides the revision for the Service's current template.
 * `owned`: revisions this Service controls; `byName`: any revision in the namespace.
 */
export function planRevision(ksvc: KubeObject, owned: readonly KubeObject[], byName: (name: string) => KubeObject | undefined): RevisionPlan {
  const name = ksvc.metadata.name;
  const template = ksvc.spec?.template ?? {};
  const hash = templateHash(template);
  const nextGeneration = Math.max(0, ...owned.map(configurationGeneration)) + 1;
  const byo: string | undefined = template.metadata?.name || undefined;
  const previous: string | undefined = ksvc.status?.latestCreatedRevisionName;
  const keep = previous ? { keep: previous } : {};

  if (!byo) {
    const latest = newestFirst(owned)[0];
    if (latest && latest.metadata.annotations?.[TEMPLATE_HASH] === hash) return { kind: 'existing', name: latest.metadata.name };
    return { kind: 'create', name: `${name}-${String(nextGeneration).padStart(5, '0')}`, generation: nextGeneration };
  }
  if (!byo.startsWith(`${name}-`)) {
    // Knative's webhook (validateRevisionName) would reject this write outright.
    return { kind: 'invalid', failure: webhookDenied(`invalid value: "${byo}" must have prefix "${name}-": spec.template.metadata.name`), ...keep };
  }
  const existing = byName(byo);
  if (!existing) return { kind: 'create', name: byo, generation: nextGeneration };
  if (existing.metadata.annotations?.[TEMPLATE_HASH] === hash && controlledBy(existing, ksvc)) return { kind: 'existing', name: byo };
  if (controlledBy(existing, ksvc) && byo === previous) {
    // VerifyNameChange: the webhook would reject a template change that keeps the name.
    return { kind: 'invalid', failure: webhookDenied('Saw the following changes without a name change (-old +new): spec.template.metadata.name'), keep: byo };
  }
  // CheckNameAvailability: an existing name is reusable only if it is ours and its spec is the template's.
  if (controlledBy(existing, ksvc) && stableStringify(existing.spec ?? {}) === stableStringify(template.spec ?? {})) return { kind: 'existing', name: byo };
  return {
    kind: 'invalid',
    failure: { reason: 'RevisionFailed', message: `Revision creation failed with message: revisions.${SERVING} "${byo}" already exists.` },
    ...keep,
  };
}

function webhookDenied(detail: string): ConfigFailure {
  return {
    reason: 'ValidationFailed',
    message: `admission webhook "validation.webhook.serving.knative.dev" would deny this: validation failed: ${detail}`,
  };
}

/** The Revision MakeRevision builds (labels, annotations, owner): `active` when `routed`, else `pending`. */
export function buildRevision(ksvc: KubeObject, name: string, generation: number, routed: boolean, nowIso: string): KubeObject {
  const template = ksvc.spec?.template ?? {};
  const svc = ksvc.metadata.name;
  return {
    apiVersion: `${SERVING}/v1`,
    kind: 'Revision',
    metadata: {
      name,
      namespace: ksvc.metadata.namespace!,
      labels: {
        ...(template.metadata?.labels ?? {}),
        [LABEL.service]: svc,
        ...(ksvc.metadata.uid ? { [LABEL.serviceUID]: ksvc.metadata.uid } : {}),
        [LABEL.configuration]: svc,
        [LABEL.configurationGeneration]: String(generation),
        [LABEL.revision]: name,
        [LABEL.routingState]: routed ? 'active' : 'pending',
      },
      annotations: {
        ...(template.metadata?.annotations ?? {}),
        [ROUTING_STATE_MODIFIED]: nowIso,
        ...(routed ? { [ROUTES_ANNOTATION]: svc } : {}),
        [TEMPLATE_HASH]: templateHash(template),
      },
      ownerReferences: [{
        apiVersion: `${SERVING}/v1`, kind: 'Service', name: svc, uid: ksvc.metadata.uid!, controller: true, blockOwnerDeletion: true,
      }],
    },
    spec: template.spec ?? {},
  };
}

/**
 * Knative's route labeler (reconciler/labeler/metasync.go): revisions named in
 * the route's spec or status traffic, and the latest created one when a target
 * follows the latest, become `active`; other `active` ones become `reserve`, but
 * only once the route has settled (Ready True or False). Returns only changes.
 */
export function routingStateChanges(
  owned: readonly KubeObject[],
  specTargets: readonly any[],
  statusTraffic: readonly any[],
  latestCreated: string | undefined,
  routeSettled: boolean,
): Map<string, RoutingState> {
  const listed = new Set<string>();
  for (const t of [...statusTraffic, ...specTargets]) if (t?.revisionName) listed.add(t.revisionName);
  if (latestCreated && specTargets.some(followsLatest)) listed.add(latestCreated);
  const changes = new Map<string, RoutingState>();
  for (const rev of owned) {
    const current = rev.metadata.labels?.[LABEL.routingState];
    if (listed.has(rev.metadata.name)) {
      if (current !== 'active') changes.set(rev.metadata.name, 'active');
    } else if (current === 'active' && routeSettled) {
      changes.set(rev.metadata.name, 'reserve');
    }
  }
  return changes;
}

/** spec.traffic as Knative's webhook defaults it: empty means all to the latest revision. */
export function specTraffic(ksvc: KubeObject | undefined): any[] {
  return ksvc?.spec?.traffic?.length ? ksvc.spec.traffic : [{ latestRevision: true, percent: 100 }];
}

/** Knative defaults latestRevision to "no revisionName given". */
export function followsLatest(t: any): boolean {
  return t?.latestRevision ?? !t?.revisionName;
}
