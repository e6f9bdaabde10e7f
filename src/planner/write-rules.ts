// How each kind's objects must be written, as its data plane requires. The
// workload and route descriptions name their rule; the generic writer
// (controllers/children.ts) applies it without knowing any kind.
//  - Knative refuses any change to a revision template whose BYO name stays
//    the same, and does not default a template again on update. So a Knative
//    Service's template is written only when its revision name changes (with
//    the desired traffic, so that write never drops the routes), and traffic
//    moves through a second field manager that owns no template field
//    (knative.dev/serving pkg/apis/serving/v1/configuration_defaults.go,
//    configuration_validation.go: "Saw the following changes without a name change").
//  - Istio's CRDs make every list atomic, so managedFields cannot show a field
//    we dropped inside a route (a mirror, a timeout); nothing defaults a
//    VirtualService, so a spec that differs from ours is always asked about.

export type WriteRuleName = 'apply' | 'named-template' | 'atomic-lists';

interface Written { metadata: { name: string; namespace?: string }; spec?: unknown }

export interface WriteRule {
  /** The name of the part written only whole and under a new name (a revision template); absent: no such part. */
  templateName?: (obj: Written) => string | undefined;
  /** What the second field manager applies while the template stays: everything but the template. */
  routing?: <T extends Written>(obj: T) => T;
  /** Lists are atomic: a spec that differs from ours is asked about even when managedFields show no dropped field. */
  atomicLists?: boolean;
}

/** The field manager that moves a Knative Service's traffic; it never owns the template. */
export function routingManager(fieldManager: string): string {
  return `${fieldManager}-routing`;
}

/** Whether `rule` leaves the template of `live` as it is: a named template whose name `desired` keeps. */
function keepsTemplate(rule: WriteRule, desired: Written, live: Written | undefined): boolean {
  return !!live && !!rule.templateName && !!rule.routing && rule.templateName(live) === rule.templateName(desired);
}

/**
 * The apply an ensure makes under `rule`: the whole object (`whole`), or, while the live template
 * stays (or `templateWritten`: this writer's own write of the template is not in `live` yet), everything
 * but the template through the routing manager. The one rule for the writer and `kubectl sapp plan`'s dry run.
 */
export function ensureWrite<T extends Written>(rule: WriteRule, desired: T, live: Written | undefined, fieldManager: string, templateWritten = false): { body: T; fieldManager: string; whole: boolean } {
  const routed = !!rule.routing && (templateWritten || keepsTemplate(rule, desired, live));
  return routed ? { body: rule.routing!(desired), fieldManager: routingManager(fieldManager), whole: false } : { body: desired, fieldManager, whole: true };
}

export const WRITE_RULES: Record<WriteRuleName, WriteRule> = {
  apply: {},
  'named-template': {
    templateName: (obj) => (obj.spec as { template?: { metadata?: { name?: string } } } | undefined)?.template?.metadata?.name,
    routing: (obj) => ({ ...obj, spec: { traffic: (obj.spec as { traffic?: unknown } | undefined)?.traffic ?? [] } }),
  },
  'atomic-lists': { atomicLists: true },
};
