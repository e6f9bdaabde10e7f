// Which pod labels and annotations an app may set (spec.*.podLabels,
// podAnnotations). Many systems read a pod's metadata as orders: Istio's
// injector and proxy read sidecar.istio.io/*, traffic.sidecar.istio.io/*,
// proxy.istio.io/*, istio.io/rev (a proxy image, hostPath volumes, traffic
// interception, the control plane); the kubelet reads AppArmor and seccomp
// annotations; CNI plugins read kubernetes.io/*-bandwidth and Multus' network
// attachments; policies (Istio AuthorizationPolicy, NetworkPolicy, including
// mesh-wide ones in Istio's root namespace) select pods by `app` and
// `version`. Those keys reach the pod only where the platform allows them
// (--allowed-pod-metadata-keys). The chart's ValidatingAdmissionPolicy refuses
// them at admission with the same rule, as CEL generated from the constants
// below (pod-metadata-policy.ts); the operator's own refusal covers installs
// without it. Keys that belong to Knative, KServe and the operator are refused
// at admission by the CRD instead (pod-template.ts), for everyone.

import type { SpecProblem } from './validation.ts';
import type { ServerlessApp } from './serverlessapp.ts';

/**
 * Key prefixes (the part before "/") whose keys control the pod or the mesh:
 * each domain and its subdomains. app.kubernetes.io is the recommended-labels
 * namespace (version, component, ...): descriptive only, so it stays open.
 */
export const CONTROL_DOMAINS = ['istio.io', 'kubernetes.io', 'k8s.io', 'cncf.io', 'multus-cni.io'] as const;
export const OPEN_DOMAINS = ['app.kubernetes.io'];
/**
 * Unprefixed labels that select pods: Knative sets `app` to the revision's name
 * (unless the app does), Istio reads `app` and `version` as the workload's
 * service and revision, and policies written for another team's pods select
 * on them. An app setting them would join those policies.
 */
export const SELECTOR_LABELS = ['app', 'version'] as const;

/** Why a key is held back unless the platform allows it, or undefined when any app may set it. */
export function controlKey(key: string, kind: 'label' | 'annotation'): string | undefined {
  const slash = key.indexOf('/');
  if (slash < 0) {
    return kind === 'label' && (SELECTOR_LABELS as readonly string[]).includes(key)
      ? `${JSON.stringify(key)} is a label that Istio and network policies select pods by` : undefined;
  }
  const prefix = key.slice(0, slash).toLowerCase();
  if (OPEN_DOMAINS.includes(prefix)) return undefined;
  const domain = CONTROL_DOMAINS.find((d) => prefix === d || prefix.endsWith(`.${d}`));
  return domain ? `keys under ${domain} control the pod, its sidecar or its network` : undefined;
}

/** Whether the platform's list allows `key`: an exact key, or "prefix/*" for every key under that prefix. */
export function keyAllowed(key: string, allowed: readonly string[]): boolean {
  return allowed.some((a) => (a.endsWith('/*') ? key.startsWith(a.slice(0, -1)) : a === key));
}

/** A PodMetadataNotAllowed problem for each control key of the app's podLabels and podAnnotations the platform does not allow. */
export function podMetadataProblems(app: ServerlessApp, allowed: readonly string[]): SpecProblem[] {
  const kind = app.spec.container ? 'container' : 'model';
  const w = app.spec[kind];
  if (!w) return [];
  const shown = allowed.length ? allowed.join(', ') : '(none)';
  const problems: SpecProblem[] = [];
  for (const [field, what] of [['podLabels', 'label'], ['podAnnotations', 'annotation']] as const) {
    for (const key of Object.keys(w[field] ?? {})) {
      const why = controlKey(key, what);
      if (!why || keyAllowed(key, allowed)) continue;
      problems.push({
        reason: 'PodMetadataNotAllowed', field: `spec.${kind}.${field}[${JSON.stringify(key)}]`,
        message: `${what} ${JSON.stringify(key)} is not allowed on this platform: ${why}; allowed control keys (--allowed-pod-metadata-keys): ${shown}`,
      });
    }
  }
  return problems;
}
