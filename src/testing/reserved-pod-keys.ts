// The invariant "no tenant key under a control prefix reaches a pod", as a pure
// function of rendered children: the schema fuzzer (src/schema-fuzz.test.ts)
// and the admission fuzz test (test/integration/fuzz-admission.test.ts) both
// read it. RESERVED_POD_KEY_PREFIXES is the one list of control prefixes they
// check; a key is under a prefix when its DNS prefix is that domain or a
// subdomain of it (features.knative.dev is under knative.dev).

/** Label and annotation prefixes that steer Knative, KServe, the operator, the Istio mesh or the kubelet's security profiles. */
export const RESERVED_POD_KEY_PREFIXES = [
  'knative.dev', 'serving.knative.dev', 'autoscaling.knative.dev',
  'kserve.io', 'serving.kserve.io',
  'serverlessapp.io',
  'sidecar.istio.io', 'traffic.sidecar.istio.io', 'proxy.istio.io', 'istio.io', 'security.istio.io',
  'container.apparmor.security.beta.kubernetes.io', 'seccomp.security.alpha.kubernetes.io',
] as const;

/** Whether a label or annotation key lies under one of the reserved prefixes. */
export function isReservedKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash).toLowerCase();
  return RESERVED_POD_KEY_PREFIXES.some((p) => domain === p || domain.endsWith(`.${p}`));
}

interface Rendered { kind?: string; spec?: unknown }

/** The label and annotation maps of the pods a rendered child makes: a Knative Service's template, an InferenceService's predictor. */
export function podMetadata(rendered: Rendered): { labels: Record<string, string>; annotations: Record<string, string> } | undefined {
  const spec = rendered.spec as Record<string, any> | undefined;
  if (rendered.kind === 'Service' && spec?.template) return { labels: spec.template.metadata?.labels ?? {}, annotations: spec.template.metadata?.annotations ?? {} };
  if (rendered.kind === 'InferenceService' && spec?.predictor) return { labels: spec.predictor.labels ?? {}, annotations: spec.predictor.annotations ?? {} };
  return undefined;
}

/**
 * Reserved keys a rendered child puts on its pods other than those the operator
 * sets itself (`own`: what the same app renders without its podLabels and
 * podAnnotations), as "label <key>" / "annotation <key>". Empty when none leaks.
 */
export function reservedPodKeys(rendered: Rendered, own: Rendered): string[] {
  const pod = podMetadata(rendered);
  if (!pod) return [];
  const mine = podMetadata(own) ?? { labels: {}, annotations: {} };
  const leaks = (what: string, map: Record<string, string>, operator: Record<string, string>) =>
    Object.keys(map).filter((k) => isReservedKey(k) && !(k in operator)).map((k) => `${what} ${k}`);
  return [...leaks('label', pod.labels, mine.labels), ...leaks('annotation', pod.annotations, mine.annotations)];
}
