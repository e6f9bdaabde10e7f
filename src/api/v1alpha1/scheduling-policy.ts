// Where an app's pods may go, as far as the platform allows (spec.*.tolerations,
// nodeSelector, affinity). The schema keeps these fields core/v1-shaped; what
// they may reach is a platform decision, judged here:
// - a toleration lets pods onto nodes the platform tainted to keep others off
//   (the control plane, another team's dedicated nodes, GPU pools): only taint
//   keys the platform lists, and never "every taint" (empty key, Exists);
// - pod (anti-)affinity terms select pods in other namespaces through
//   `namespaces` or `namespaceSelector` (an empty selector is every namespace):
//   a required anti-affinity term over another team's pods keeps that team's
//   next version off every node (the scheduler honours existing pods'
//   anti-affinity symmetrically), and a positive term reveals where its pods
//   run. Kubernetes offers the same switch as the CrossNamespacePodAffinity
//   quota scope. Terms stay inside the app's namespace unless the platform allows;
// - kubernetes.io/hostname (and the node's metadata.name) pin pods to one named
//   node, crowding it or reaching a node set aside for something else.
// The operator refuses these with Ready=False SchedulingNotAllowed naming the
// field, and leaves what runs as it was.

import type { ServerlessApp } from './serverlessapp.ts';
import type { SpecProblem } from './validation.ts';

/**
 * Taint keys apps may tolerate when the platform says nothing: nvidia.com/gpu is the
 * taint GPU node pools carry (GKE, AKS, EKS and the NVIDIA GPU operator's guidance)
 * so that only pods asking for a GPU land there, which a model app needs to do.
 */
export const DEFAULT_ALLOWED_TOLERATION_KEYS: readonly string[] = ['nvidia.com/gpu'];

/** Node labels that name one node: pinning pods to it is the platform's call. */
export const NODE_PINNING_KEYS = ['kubernetes.io/hostname'] as const;
/** The node field that names one node (nodeAffinity matchFields). */
export const NODE_NAME_FIELD = 'metadata.name';
/** The label the API server sets on every namespace to its name: the one selector that names the app's own namespace alone. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export interface SchedulingPolicy {
  /** Taint keys apps may tolerate; "*" for any, including a toleration of every taint. */
  allowedTolerationKeys: readonly string[];
  /** Whether pod (anti-)affinity terms may select pods of other namespaces. */
  allowCrossNamespacePodAffinity: boolean;
  /** Whether apps may pin pods to a named node (kubernetes.io/hostname, metadata.name). */
  allowNodePinning: boolean;
}

// The fields read here, as core/v1 has them; the schema may type them more
// strictly (or keep them as written), which is why they are read structurally.
interface Selector { matchLabels?: Record<string, string>; matchExpressions?: unknown[] }
interface PodAffinityTerm { namespaces?: string[]; namespaceSelector?: Selector | null }
interface PodAffinity { requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[]; preferredDuringSchedulingIgnoredDuringExecution?: Array<{ podAffinityTerm?: PodAffinityTerm }> }
interface NodeSelectorTerm { matchExpressions?: Array<{ key?: string }>; matchFields?: Array<{ key?: string }> }
interface Affinity {
  nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] }; preferredDuringSchedulingIgnoredDuringExecution?: Array<{ preference?: NodeSelectorTerm }> };
  podAffinity?: PodAffinity;
  podAntiAffinity?: PodAffinity;
}
interface Toleration { key?: string; operator?: string }
interface Scheduling { tolerations?: Toleration[]; nodeSelector?: Record<string, string>; affinity?: Affinity }

/** Whether a term's pods are in `namespace` only: unset namespaces and selector, or both naming it alone. */
export function termStaysInNamespace(term: PodAffinityTerm, namespace: string): boolean {
  if ((term.namespaces ?? []).some((n) => n !== namespace)) return false;
  const sel = term.namespaceSelector;
  if (sel === undefined || sel === null) return true;
  // {} selects every namespace; only {matchLabels: {kubernetes.io/metadata.name: <own>}} names this one alone.
  const labels = Object.entries(sel.matchLabels ?? {});
  return (sel.matchExpressions ?? []).length === 0 && labels.length === 1 && labels[0]![0] === NAMESPACE_NAME_LABEL && labels[0]![1] === namespace;
}

/** A SchedulingNotAllowed problem for each toleration, node pin and cross-namespace pod (anti-)affinity term the platform does not allow. */
export function schedulingProblems(app: ServerlessApp, policy: SchedulingPolicy): SpecProblem[] {
  const kind = app.spec.container ? 'container' : 'model';
  const w = app.spec[kind] as Scheduling | undefined;
  if (!w) return [];
  const namespace = app.metadata.namespace ?? 'default';
  const base = `spec.${kind}`;
  const problems: SpecProblem[] = [];
  const refuse = (field: string, message: string) => problems.push({ reason: 'SchedulingNotAllowed', field: `${base}.${field}`, message });

  const anyTaint = policy.allowedTolerationKeys.includes('*');
  const shownKeys = policy.allowedTolerationKeys.join(', ') || '(none)';
  (w.tolerations ?? []).forEach((t, i) => {
    if (anyTaint) return;
    if (!t.key) {
      refuse(`tolerations[${i}]`, `a toleration with no key (operator Exists) tolerates every taint, the control plane's and other teams' dedicated nodes included; name the taint key. Allowed taint keys (--allowed-toleration-keys): ${shownKeys}`);
    } else if (!policy.allowedTolerationKeys.includes(t.key)) {
      refuse(`tolerations[${i}].key`, `tolerating the taint ${JSON.stringify(t.key)} is not allowed on this platform: a taint keeps pods off nodes set aside for something else. Allowed taint keys (--allowed-toleration-keys): ${shownKeys}`);
    }
  });

  if (!policy.allowNodePinning) {
    const pin = (field: string, what: string) => refuse(field, `${what} pins the pods to one named node, which is the platform's call (--allow-node-pinning); select nodes by what they offer instead, e.g. a GPU or zone label`);
    for (const key of Object.keys(w.nodeSelector ?? {})) {
      if ((NODE_PINNING_KEYS as readonly string[]).includes(key)) pin(`nodeSelector[${JSON.stringify(key)}]`, `the node label ${key}`);
    }
    const nodeTerm = (term: NodeSelectorTerm | undefined, field: string) => {
      (term?.matchExpressions ?? []).forEach((e, j) => {
        if ((NODE_PINNING_KEYS as readonly string[]).includes(e.key ?? '')) pin(`${field}.matchExpressions[${j}].key`, `the node label ${e.key}`);
      });
      (term?.matchFields ?? []).forEach((e, j) => {
        if (e.key === NODE_NAME_FIELD) pin(`${field}.matchFields[${j}].key`, `the node field ${NODE_NAME_FIELD}`);
      });
    };
    const na = w.affinity?.nodeAffinity;
    (na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []).forEach((t, i) => nodeTerm(t, `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[${i}]`));
    (na?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((p, i) => nodeTerm(p.preference, `affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[${i}].preference`));
  }

  if (!policy.allowCrossNamespacePodAffinity) {
    const podTerm = (term: PodAffinityTerm | undefined, field: string) => {
      if (!term || termStaysInNamespace(term, namespace)) return;
      refuse(field, `this term selects pods outside namespace ${namespace} (namespaces, or a namespaceSelector; {} is every namespace): (anti-)affinity to other namespaces' pods can keep their pods off nodes or show where they run, and is not allowed on this platform (--allow-cross-namespace-pod-affinity). Leave namespaces and namespaceSelector unset for the app's own namespace`);
    };
    for (const which of ['podAffinity', 'podAntiAffinity'] as const) {
      const a = w.affinity?.[which];
      (a?.requiredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t, i) => podTerm(t, `affinity.${which}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`));
      (a?.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((p, i) => podTerm(p.podAffinityTerm, `affinity.${which}.preferredDuringSchedulingIgnoredDuringExecution[${i}].podAffinityTerm`));
    }
  }
  return problems;
}
