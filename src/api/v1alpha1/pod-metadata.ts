// Which pod labels and annotations an app may set (spec.*.podLabels,
// podAnnotations). Many systems read a pod's metadata as orders: Istio's
// injector and proxy (sidecar.istio.io/*: a proxy image, hostPath volumes,
// traffic interception), the kubelet (AppArmor, seccomp), CNI plugins (Calico's
// IP and pool, Multus' networks, bandwidth), cloud identity (kube2iam's role),
// injectors (Vault, OpenTelemetry, Linkerd); policies (Istio
// AuthorizationPolicy, NetworkPolicy, including mesh-wide ones) select pods by
// `app` and `version`. A deny-list of those domains misses the next one, so
// this is an allow-list: a key with a prefix ("x.y/name") reaches the pod only
// where the platform lists it (--allowed-pod-metadata-keys, exact or
// "prefix/*"), whose default lists the prefixes that command nothing
// (DEFAULT_ALLOWED_POD_METADATA_KEYS). Unprefixed keys are the team's own,
// except the selector labels. The chart's ValidatingAdmissionPolicy refuses
// the same keys at admission, as CEL generated from the constants below
// (pod-metadata-policy.ts); the operator's own refusal covers installs without
// it. Keys that belong to Knative, KServe and the operator are refused at
// admission by the CRD instead (pod-template.ts), for everyone.

import type { SpecProblem } from './validation.ts';
import type { ServerlessApp } from './serverlessapp.ts';

/**
 * What the platform allows when it says nothing: only app.kubernetes.io/version,
 * which describes the pod and which no selector is written against. Left out,
 * because other systems read them as who a pod is (docs/install.md says each):
 * app.kubernetes.io/instance and /component, which charts and operators put in
 * their selectors beside /name (a tenant's pod would join another stack's
 * NetworkPolicy, Service or PodMonitor: impersonation); and prometheus.io/*,
 * which a common scrape job with honor_labels reads to scrape the pod, so its
 * series could carry labels that name another namespace. The name, part-of and
 * managed-by labels are the operator's and refused by the CRD.
 */
export const DEFAULT_ALLOWED_POD_METADATA_KEYS: readonly string[] = ['app.kubernetes.io/version'];
/**
 * Unprefixed labels that select pods: Knative sets `app` to the revision's name
 * (unless the app does), Istio reads `app` and `version` as the workload's
 * service and revision, and policies written for another team's pods select
 * on them. An app setting them would join those policies.
 */
export const SELECTOR_LABELS = ['app', 'version'] as const;

/** Why a key is held back unless the platform allows it, or undefined when any app may set it. */
export function controlKey(key: string, kind: 'label' | 'annotation'): string | undefined {
  if (key.includes('/')) return `a key with a prefix may be read as an order by whoever owns the prefix (the mesh, the kubelet, the network, an injector), so only the prefixes the platform lists reach the pod`;
  return kind === 'label' && (SELECTOR_LABELS as readonly string[]).includes(key)
    ? `${JSON.stringify(key)} is a label that Istio and network policies select pods by` : undefined;
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
