// The pod and revision settings a real app needs beside its container or model:
// where its pods may run (nodeSelector, tolerations, affinity), who they run as
// (serviceAccountName, imagePullSecrets), what they mount (ConfigMaps, Secrets,
// emptyDir), how many requests a replica takes and for how long, and extra pod
// labels and annotations. Shared by container and model apps: they are
// revision-template fields, so a change makes a new version like any other
// change of the workload. The limits are the ones Knative's webhook applies
// with its default configuration (knative.dev/serving v0.48.1,
// pkg/apis/serving/k8s_validation.go and v1/revision_validation.go), so a bad
// value is refused at `kubectl apply` with the field named, not later as a
// refused Knative Service.

import { array, boolean, enumeration, integer, map, object, quantity, required, string, type Rule } from '../openapi.ts';
import { affinity } from './core-v1.ts';
import { MANAGED_BY_LABEL } from '../../util/managed-by.ts';
import { DNS_LABEL, DNS_SUBDOMAIN, QUALIFIED_KEY } from '../../util/k8s-names.ts';

const LABEL_VALUE = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';

/**
 * Pod label and annotation keys that belong to Knative, KServe or the operator:
 * any key under knative.dev, kserve.io or serverlessapp.io (and their
 * subdomains), and the app.kubernetes.io labels the operator sets (render/metadata.ts).
 * Autoscaling annotations come from spec.scaling (render/autoscaling.ts).
 */
export const RESERVED_KEY_PATTERN = '^([^/]*[.])?(knative[.]dev|kserve[.]io|serverlessapp[.]io)/';
export const OPERATOR_LABEL_KEYS = ['app.kubernetes.io/name', MANAGED_BY_LABEL, 'app.kubernetes.io/part-of'] as const;
/** Mount paths Knative refuses (k8s_validation.go reservedPaths). */
const RESERVED_MOUNT_PATHS = ['/', '/dev', '/dev/log'];

/** Knative's defaults: container-concurrency-max-limit and max-revision-timeout-seconds (config-defaults). */
export const MAX_CONTAINER_CONCURRENCY = 1000;
export const MAX_TIMEOUT_SECONDS = 600;

const keyRules = (what: string): Rule[] => [
  { rule: `self.all(k, k.matches(r'${QUALIFIED_KEY}'))`, message: `${what} keys must be [prefix/]name: an optional DNS subdomain, "/", and a name of up to 63 letters, digits, "-", "_" or "."` },
  {
    rule: `self.all(k, !k.matches(r'${RESERVED_KEY_PATTERN}') && !(k in ${JSON.stringify(OPERATOR_LABEL_KEYS).replaceAll('"', '\'')}))`,
    message: `${what} may not use keys under knative.dev, kserve.io or serverlessapp.io, nor ${OPERATOR_LABEL_KEYS.join(', ')}: those belong to Knative, KServe and the operator (autoscaling is set in spec.scaling)`,
  },
];

const relativePath = (description: string, maxLength: number) => string(description, {
  minLength: 1, maxLength,
  rules: [{ rule: `!self.startsWith('/') && !('..' in self.split('/'))`, message: 'must be a relative path without ".." elements' }],
});

const keyToPath = object('A key of the ConfigMap or Secret, projected to a file.', {
  key: required(string('The key.', { minLength: 1, maxLength: 253 })),
  path: required(relativePath('File path relative to the mount point, e.g. "config/app.yaml"; no ".." elements.', 253)),
  mode: integer('File mode bits (0-0777, written in decimal in JSON, e.g. 420 for 0644); unset: the volume\'s defaultMode.', { minimum: 0, maximum: 511 }),
});

const volumeItems = array(keyToPath, 'Keys to project, each to its own path; unset: every key becomes a file named after it.', { maxItems: 32 });
const defaultMode = integer('Mode bits of the files (0-0777, in decimal, e.g. 420 for 0644); unset: 0644.', { minimum: 0, maximum: 511 });

export const volumeSchema = object('A volume: a name plus exactly one of configMap, secret or emptyDir (no other volume types are offered).', {
  name: required(string('Volume name (a DNS label), referenced by volumeMounts[].name.', { pattern: DNS_LABEL, maxLength: 63 })),
  configMap: object('A ConfigMap of the app\'s namespace, mounted read-only.', {
    name: required(string('ConfigMap name.', { pattern: DNS_SUBDOMAIN, maxLength: 253 })),
    items: volumeItems,
    defaultMode,
    optional: boolean('Start the pods even when the ConfigMap (or a listed key) does not exist.'),
  }),
  secret: object('A Secret of the app\'s namespace, mounted read-only; only where the platform allows Secret references (--allow-secret-references), otherwise Ready=False SecretReferenceNotAllowed.', {
    secretName: required(string('Secret name.', { pattern: DNS_SUBDOMAIN, maxLength: 253 })),
    items: volumeItems,
    defaultMode,
    optional: boolean('Start the pods even when the Secret (or a listed key) does not exist.'),
  }),
  emptyDir: object('Scratch space that lives as long as the pod; the only writable volume. Write {} for the defaults.', {
    medium: enumeration(['Memory'] as const, 'Memory: a tmpfs counted against the container\'s memory; unset: the node\'s disk.'),
    sizeLimit: quantity('Most space the volume may use, e.g. "1Gi"; unset: no limit beyond the node\'s.'),
  }),
}, {
  rules: [{ rule: '[has(self.configMap), has(self.secret), has(self.emptyDir)].filter(x, x).size() == 1', message: 'a volume needs exactly one of configMap, secret or emptyDir' }],
});

export const volumeMountSchema = object('Where a volume appears in the container.', {
  name: required(string('Name of a volume in volumes.', { pattern: DNS_LABEL, maxLength: 63 })),
  mountPath: required(string(`Absolute path in the container, unique among the mounts; not ${RESERVED_MOUNT_PATHS.join(', ')} (Knative reserves them).`, {
    pattern: '^/', maxLength: 1024,
    rules: [{ rule: `!self.matches(r'^/+(dev/*(log/*)?)?$')`, message: `must not be ${RESERVED_MOUNT_PATHS.join(', ')} (Knative reserves them)` }],
  })),
  readOnly: boolean('Mount read-only. ConfigMap and Secret volumes are always read-only (Knative refuses anything else); unset on those means true. emptyDir volumes are writable unless this is true.'),
  subPath: relativePath('Mount only this path inside the volume (relative, no ".." elements); unset: the whole volume.', 1024),
});

export const tolerationSchema = object('A toleration, as in core/v1: lets the pods run on nodes with a matching taint, e.g. GPU nodes tainted nvidia.com/gpu:NoSchedule.', {
  key: string('Taint key to tolerate, e.g. nvidia.com/gpu; only keys the platform allows (--allowed-toleration-keys, default nvidia.com/gpu), otherwise Ready=False SchedulingNotAllowed. Empty (with operator Exists) tolerates every taint, which only a platform allowing any key (*) accepts.', { maxLength: 316 }),
  operator: enumeration(['Exists', 'Equal'] as const, 'Equal (the default) matches key and value; Exists matches any value of the key.'),
  value: string('Taint value to match with operator Equal.', { maxLength: 63 }),
  effect: enumeration(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const, 'Taint effect to tolerate; unset tolerates every effect.'),
  tolerationSeconds: integer('With effect NoExecute: how long the pods stay on a node after the taint appears; unset: for ever.', { minimum: 0 }),
}, {
  rules: [
    { rule: `!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''`, message: 'value must be empty with operator Exists', fieldPath: '.value' },
    { rule: `(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')`, message: 'an empty key needs operator Exists (it tolerates every taint)', fieldPath: '.key' },
    { rule: `!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')`, message: 'tolerationSeconds needs effect NoExecute', fieldPath: '.tolerationSeconds' },
  ],
});

/** The fields; spread into containerSchema and modelSchema. */
export const podTemplateFields = {
  nodeSelector: map(string('Label value the node must have.', { maxLength: 63, pattern: LABEL_VALUE }),
    'Node labels the pods\' nodes must carry, e.g. {nvidia.com/gpu.present: "true"}; kubernetes.io/hostname (one named node) only where the platform allows (--allow-node-pinning). Needs Knative\'s kubernetes.podspec-nodeselector feature, which the platform enables.', {
      maxProperties: 32, rules: [keyRules('nodeSelector')[0]!],
    }),
  tolerations: array(tolerationSchema, 'Taints the pods tolerate, e.g. [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}] for tainted GPU nodes. Needs Knative\'s kubernetes.podspec-tolerations feature, which the platform enables.', { maxItems: 32 }),
  affinity,
  serviceAccountName: string('Service account the pods run as, in the app\'s namespace (workload identity, model storage credentials). Only names the platform allows (--allowed-service-accounts) are accepted; others make the app Ready=False ServiceAccountNotAllowed. Unset: the namespace\'s default.', {
    pattern: DNS_SUBDOMAIN, maxLength: 253,
  }),
  imagePullSecrets: array(string('Name of a Secret of type kubernetes.io/dockerconfigjson in the app\'s namespace.', { pattern: DNS_SUBDOMAIN, maxLength: 253 }),
    'Secrets with registry credentials for pulling the image.', { maxItems: 16, listType: 'set' }),
  volumes: array(volumeSchema, 'Volumes from ConfigMaps, Secrets or emptyDir; each must be mounted by volumeMounts (Knative refuses unmounted volumes).', { maxItems: 32, listType: 'map', listMapKeys: ['name'] }),
  volumeMounts: array(volumeMountSchema, 'Where the volumes appear in the container; each names a volume.', { maxItems: 32, listType: 'map', listMapKeys: ['mountPath'] }),
  containerConcurrency: integer(`Most requests one replica serves at once; more wait in Knative's queue. 0 (the default) is no limit. At most ${MAX_CONTAINER_CONCURRENCY} (Knative's container-concurrency-max-limit).`, {
    minimum: 0, maximum: MAX_CONTAINER_CONCURRENCY,
  }),
  timeoutSeconds: integer(`Longest time a request may take, in seconds; unset: Knative's revision-timeout-seconds (300). At most ${MAX_TIMEOUT_SECONDS} (Knative's default max-revision-timeout-seconds).`, {
    minimum: 1, maximum: MAX_TIMEOUT_SECONDS,
  }),
  podLabels: map(string('Label value.', { maxLength: 63, pattern: LABEL_VALUE }), 'Extra labels on the pods (and their revisions). Keys under knative.dev, kserve.io and serverlessapp.io, and the app.kubernetes.io labels the operator sets, are refused. Keys with a prefix (x.y/name) and the labels app and version only where the platform lists them (--allowed-pod-metadata-keys, default app.kubernetes.io/version only); otherwise Ready=False PodMetadataNotAllowed.', {
    maxProperties: 32, rules: keyRules('podLabels'),
  }),
  podAnnotations: map(string('Annotation value.', { maxLength: 4096 }), 'Extra annotations on the pods (and their revisions), e.g. for a metrics scraper. Keys under knative.dev, kserve.io and serverlessapp.io are refused (autoscaling is set in spec.scaling). Keys with a prefix (x.y/name, e.g. sidecar.istio.io/inject or AppArmor) only where the platform lists them (--allowed-pod-metadata-keys, default app.kubernetes.io/version only); otherwise Ready=False PodMetadataNotAllowed.', {
    maxProperties: 32, rules: keyRules('podAnnotations'),
  }),
};

/** Rules across the fields: mounts and volumes must match one to one, as Knative's webhook demands. */
export const podTemplateRules: Rule[] = [
  {
    rule: '!has(self.volumeMounts) || self.volumeMounts.all(m, has(self.volumes) && self.volumes.exists(v, v.name == m.name))',
    message: 'every volumeMounts[].name must name a volume in volumes', fieldPath: '.volumeMounts',
  },
  {
    rule: '!has(self.volumes) || self.volumes.all(v, has(self.volumeMounts) && self.volumeMounts.exists(m, m.name == v.name))',
    message: 'every volume must be mounted by volumeMounts (Knative refuses unmounted volumes)', fieldPath: '.volumes',
  },
  {
    rule: '!has(self.volumeMounts) || !has(self.volumes) || self.volumeMounts.all(m, !has(m.readOnly) || m.readOnly || self.volumes.exists(v, v.name == m.name && has(v.emptyDir)))',
    message: 'readOnly: false is allowed on emptyDir volumes only (Knative mounts ConfigMaps and Secrets read-only)', fieldPath: '.volumeMounts',
  },
];
