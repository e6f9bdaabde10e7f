// The core/v1 types an app embeds (a Probe, an EnvVarSource, an EnvFromSource,
// an Affinity), typed field by field with a bound on every list, map and
// string, as kubebuilder writes them into a CRD. Kept as free-form JSON
// (x-kubernetes-preserve-unknown-fields) they would let a tenant store JSON of
// any depth and size that the operator then hashes, renders and sends to
// Knative on every reconcile; typed, the schema fixes their depth, and a field
// the schema does not declare is refused by a strict or server-side apply
// (naming it) or pruned by the API server, never stored. The fields are
// core/v1's as of Kubernetes 1.34; Knative's webhook still decides which of
// them a pod may use (e.g. fieldRef needs its kubernetes.podspec-fieldref feature).

import { array, boolean, enumeration, integer, intOrString, map, object, quantity, required, string, type Schema } from '../openapi.ts';

/** A DNS subdomain prefix, "/" and a name: the longest label key or topology key. */
const KEY_MAX = 317;
const NAME_MAX = 253;
/** Label values and namespace names. */
const VALUE_MAX = 63;

const port = (what: string) => intOrString(`${what}: a number (1-65535) or the name of a container port (IANA_SVC_NAME, at most 15 characters).`, { maxLength: 15 });

/**
 * A core/v1 Probe, except `host`: a probe checks the pod itself (the kubelet sends it to the pod's IP
 * when host is unset). With a host the kubelet, from the node's network, would reach any address the
 * tenant names (a cloud metadata service, the node's own ports), which Knative allows.
 */
export function probe(description: string) {
  const host = string('Not allowed: a probe checks the pod itself, at its own IP.', { maxLength: NAME_MAX });
  return object(description, {
    exec: object('Runs a command in the container; exit status 0 is healthy.', {
      command: array(string('An argument.', { maxLength: 4096 }), 'The command and its arguments (not run in a shell).', { maxItems: 64 }),
    }),
    httpGet: object('The HTTP check, as in core/v1; host is not allowed.', {
      path: string('Path to request, e.g. /healthz.', { maxLength: 2048 }),
      port: port('Port to request'),
      host,
      scheme: enumeration(['HTTP', 'HTTPS'] as const, 'HTTP (the default) or HTTPS (certificate not verified).'),
      httpHeaders: array(object('A request header.', {
        name: required(string('Header name.', { maxLength: 256 })),
        value: required(string('Header value.', { maxLength: 4096 })),
      }), 'Extra request headers.', { maxItems: 16 }),
    }),
    tcpSocket: object('The TCP check, as in core/v1 (a connection is opened); host is not allowed.', { port: port('Port to connect to'), host }),
    grpc: object('A gRPC health check (grpc.health.v1).', {
      port: required(integer('Port of the gRPC service.', { minimum: 1, maximum: 65535 })),
      service: string('Service name sent in the HealthCheckRequest.', { maxLength: NAME_MAX }),
    }),
    initialDelaySeconds: integer('Seconds after the container starts before the first probe.', { minimum: 0 }),
    timeoutSeconds: integer('Seconds after which a probe times out.', { minimum: 0 }),
    periodSeconds: integer('How often to probe, in seconds (Knative allows 0 for its own aggressive readiness probing).', { minimum: 0 }),
    successThreshold: integer('Consecutive successes for the probe to pass after a failure.', { minimum: 0 }),
    failureThreshold: integer('Consecutive failures for the probe to fail.', { minimum: 0 }),
    terminationGracePeriodSeconds: integer('Grace period for a liveness failure\'s restart, in seconds.', { minimum: 0 }),
  }, {
    rules: ['httpGet', 'tcpSocket'].map((p) => ({
      rule: `!has(self.${p}) || !has(self.${p}.host)`, fieldPath: `.${p}.host`, reason: 'FieldValueForbidden' as const,
      message: `${p}.host is not allowed: a probe checks the pod itself, at its own IP (leave host unset)`,
    })),
  });
}

const keyRef = (what: string) => object(`A key of a ${what} in the app's namespace.`, {
  name: string(`${what} name.`, { maxLength: NAME_MAX }),
  key: required(string('The key.', { maxLength: NAME_MAX })),
  optional: boolean(`Start the pods even when the ${what} or its key does not exist.`),
});

export const envVarSource = object('Source of the value, as in core/v1 EnvVarSource: exactly one of configMapKeyRef, fieldRef, resourceFieldRef, or secretKeyRef (only where the platform allows Secret references, --allow-secret-references).', {
  configMapKeyRef: keyRef('ConfigMap'),
  secretKeyRef: keyRef('Secret'),
  fieldRef: object('A field of the pod, e.g. metadata.name or status.podIP (needs Knative\'s kubernetes.podspec-fieldref feature).', {
    apiVersion: string('Version of the schema the path is written in (default v1).', { maxLength: 64 }),
    fieldPath: required(string('Path of the field, e.g. metadata.namespace.', { maxLength: 256 })),
  }),
  resourceFieldRef: object('A resource request or limit of a container, e.g. limits.memory.', {
    containerName: string('Container name; unset: this one.', { maxLength: NAME_MAX }),
    resource: required(string('The resource, e.g. limits.cpu.', { maxLength: 64 })),
    divisor: quantity('Unit of the value, e.g. "1Mi"; default 1.'),
  }),
}, {
  rules: [{ rule: '[has(self.configMapKeyRef), has(self.secretKeyRef), has(self.fieldRef), has(self.resourceFieldRef)].filter(x, x).size() == 1', message: 'valueFrom needs exactly one of configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef' }],
});

const nameRef = (what: string) => object(`A ${what} of the app's namespace.`, {
  name: string(`${what} name.`, { maxLength: NAME_MAX }),
  optional: boolean(`Start the pods even when the ${what} does not exist.`),
});

export const envFromSource = object('A core/v1 EnvFromSource: every key of a ConfigMap (configMapRef) or, where the platform allows Secret references, a Secret (secretRef) becomes a variable.', {
  prefix: string('Prepended to every variable name.', { maxLength: NAME_MAX }),
  configMapRef: nameRef('ConfigMap'),
  secretRef: nameRef('Secret'),
}, {
  rules: [{ rule: 'has(self.configMapRef) != has(self.secretRef)', message: 'set exactly one of configMapRef or secretRef' }],
});

const requirement = (what: string, operators: readonly [string, ...string[]], valueMax: number) => object(`A ${what} requirement: key, operator and values.`, {
  key: required(string('The key.', { maxLength: KEY_MAX })),
  operator: required(enumeration(operators, `How the key relates to the values: ${operators.join(', ')}.`)),
  values: array(string('A value.', { maxLength: valueMax }), 'Values (In, NotIn: at least one; Exists, DoesNotExist: none; Gt, Lt: one integer).', { maxItems: 64 }),
});

const nodeSelectorTerm = object('Node requirements, all of which must hold.', {
  matchExpressions: array(requirement('node label', ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'], VALUE_MAX), 'Requirements on node labels.', { maxItems: 16 }),
  matchFields: array(requirement('node field', ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'], NAME_MAX), 'Requirements on node fields (metadata.name).', { maxItems: 16 }),
});

const labelSelector = (description: string) => object(description, {
  matchLabels: map(string('Label value.', { maxLength: VALUE_MAX }), 'Labels that must all match.', { maxProperties: 32 }),
  matchExpressions: array(requirement('label', ['In', 'NotIn', 'Exists', 'DoesNotExist'], VALUE_MAX), 'Requirements that must all hold.', { maxItems: 16 }),
});

const keys = (description: string) => array(string('A label key.', { maxLength: KEY_MAX }), description, { maxItems: 16 });

const podAffinityTerm = object('Pods (by label, in some namespaces) whose nodes, grouped by topologyKey, the pods go to (or avoid).', {
  labelSelector: labelSelector('The pods this term is about.'),
  namespaces: array(string('A namespace.', { maxLength: VALUE_MAX }), 'Namespaces of those pods; unset (and no namespaceSelector): the app\'s. Any other only where the platform allows (--allow-cross-namespace-pod-affinity).', { maxItems: 16 }),
  namespaceSelector: labelSelector('Namespaces of those pods, by label. {} is not the app\'s namespace but every namespace; {matchLabels: {kubernetes.io/metadata.name: <the app\'s namespace>}} is the app\'s alone. Selecting other namespaces needs the platform\'s leave (--allow-cross-namespace-pod-affinity).'),
  topologyKey: required(string('Node label whose value groups nodes, e.g. topology.kubernetes.io/zone.', { minLength: 1, maxLength: KEY_MAX })),
  matchLabelKeys: keys('Pod label keys whose values (taken from the incoming pod) are added to labelSelector.'),
  mismatchLabelKeys: keys('Pod label keys whose values must differ.'),
});

const weight = required(integer('Weight (1-100) added to a node\'s score when the term holds.', { minimum: 1, maximum: 100 }));
const preferred = <T>(what: string, item: Schema<T>) => array(item, `Preferred ${what}s, each with a weight: the scheduler favours nodes where they hold.`, { maxItems: 16 });

const podAffinity = (what: string) => object(`Pod ${what}.`, {
  requiredDuringSchedulingIgnoredDuringExecution: array(podAffinityTerm, 'Terms that must all hold for a node to be chosen.', { maxItems: 16 }),
  preferredDuringSchedulingIgnoredDuringExecution: preferred(`pod ${what} term`, object('A preferred term and its weight.', { weight, podAffinityTerm: required(podAffinityTerm) })),
});

export const affinity = object('A core/v1 Affinity (nodeAffinity, podAffinity, podAntiAffinity), e.g. to spread replicas over zones or prefer a GPU model. Needs Knative\'s kubernetes.podspec-affinity feature, which the platform enables.', {
  nodeAffinity: object('Which nodes the pods may (or prefer to) run on, by node label.', {
    requiredDuringSchedulingIgnoredDuringExecution: object('Nodes that match at least one term.', {
      nodeSelectorTerms: required(array(nodeSelectorTerm, 'Terms, any one of which a node must match.', { maxItems: 16 })),
    }),
    preferredDuringSchedulingIgnoredDuringExecution: preferred('node selector term', object('A preferred term and its weight.', { weight, preference: required(nodeSelectorTerm) })),
  }),
  podAffinity: podAffinity('affinity: run near these pods'),
  podAntiAffinity: podAffinity('anti-affinity: run away from these pods'),
});
