// The ServerlessApp API (serverlessapp.io/v1alpha1): one small resource a
// developer writes instead of a Knative Service or KServe InferenceService plus
// an Istio VirtualService. This file is the single source of truth: the CRD in
// crds/ and the chart, `kubectl explain` text, admission rules and the types
// the operator uses are all derived from the schema below.

import {
  array, boolean, enumeration, integer, map, number, object, quantity, required, string,
  type TypeOf,
} from '../openapi.ts';
import { DURATION_MAX_LENGTH, DURATION_PATTERN } from './duration.ts';
import { envFromSource, envVarSource, probe } from './core-v1.ts';
import { podTemplateFields, podTemplateRules } from './pod-template.ts';
import { parseQuantity } from './quantity.ts';
import { RETRY_ON_RULE } from './retry-on.ts';
import { splitKey, type ObjectRef } from '../../util/object-key.ts';
import { LLM, PREDICTOR, SERVING_MODES } from './serving.ts';
import { LLM_DEFAULT_REPLICAS, ROLLOUT_DEFAULTS, SCALING_DEFAULTS, SLO_DEFAULTS, STICKINESS_DEFAULTS, WARMUP_DEFAULTS, WINDOW_DEFAULTS } from './defaults.ts';
import { apiVersionOf, Kinds } from '../../util/kinds.ts';
import { DNS_LABEL } from '../../util/k8s-names.ts';

// The kind's names as util/kinds.ts addresses it: the CRD is generated from the same ones.
export const GROUP = Kinds.ServerlessApp.group;
export const VERSION = Kinds.ServerlessApp.version;
export const API_VERSION = apiVersionOf(Kinds.ServerlessApp);
export const KIND = Kinds.ServerlessApp.kind;
export const PLURAL = Kinds.ServerlessApp.plural;

/** Model formats KServe ships runtimes for; anything else needs `runtime`. */
export const MODEL_FORMATS = [
  'sklearn', 'xgboost', 'lightgbm', 'tensorflow', 'pytorch', 'onnx', 'triton', 'pmml', 'paddle',
  'mlflow', 'huggingface', 'custom',
] as const;

/** CEL, on spec.model: the app serves an LLM. */
const IS_LLM = `has(self.serving) && self.serving == '${LLM}'`;
/** What KServe puts in a route path and a header value: a Hugging Face style name, e.g. "meta-llama/Llama-3.1-8B-Instruct". */
const SERVED_MODEL_NAME = '^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$';

/** Where KServe's storage initializer puts the model in the model server's container. */
const KSERVE_MODEL_DIR = '/mnt/models';
/** The least model.size the CRD admits: no real model's files are smaller, and a cache reserves it on every node. */
export const MIN_MODEL_SIZE = '1Mi';
export const STORAGE_URI_PATTERN = '^(gs|s3|pvc|hf|oci|https?)://[^\\s]+$';
export const HOSTNAME = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
// The image reference grammar Knative's webhook parses with go-containerregistry
// (distribution/reference): refusing a bad reference here names the field at
// `kubectl apply` instead of failing later as a refused Knative Service.
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?';
const IMAGE_REFERENCE = `^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`;
const HEADER_NAME = '^[A-Za-z0-9!#$%&\'*+.^_`|~-]+$';
/** "namespace/name": a namespace (DNS label) and a Gateway name (DNS subdomain). */
const GATEWAY_REF = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';

/** The Gateway a spec.ingress.gateways entry names ("namespace/name", GATEWAY_REF). */
export function gatewayRef(gateway: string): ObjectRef {
  return splitKey(gateway);
}

/**
 * A duration string with the bounds its reader needs, both enforced at admission
 * (CEL reads the same Go-style strings): `min` where the reader refuses small
 * values (Istio refuses timeouts under 1ms; analysis more often than every 10s
 * only loads Prometheus), and `max` on every duration, so no value is too long to
 * be a number of milliseconds or a time the operator would wait for. The pattern
 * and length cap keep every admitted string within what CEL's duration() reads.
 */
const duration = (description: string, extra: { default?: string; min?: Bound; max: Bound }) => {
  const { min, max, ...rest } = extra;
  const bounds = [min ? `at least ${min.value}` : '', `at most ${max.value}`].filter(Boolean).join(' and ');
  return string(`${description} A duration such as "30s", "15m" or "1h30m"; ${bounds}.`, {
    pattern: DURATION_PATTERN, maxLength: DURATION_MAX_LENGTH, ...rest,
    rules: [
      ...(min ? [{ rule: `duration(self) >= duration('${min.value}')`, message: `must be at least ${min.value} (${min.why})` }] : []),
      { rule: `duration(self) <= duration('${max.value}')`, message: `must be at most ${max.value} (${max.why})` },
    ],
  });
};
interface Bound { value: string; why: string }
const ISTIO_MIN = { value: '1ms', why: 'Istio refuses shorter durations, including 0s' };
/** Istio's route timeouts: no request through the app's route outlives Knative's own limit by much. */
const ROUTE_MAX = { value: '1h', why: 'no request through the route needs longer' };
/** A rollout's waits: a step, a deadline. Longer ones are better written as a pause. */
const ROLLOUT_MAX = { value: '24h', why: 'use rollout.paused to hold a rollout longer' };
const MIN_ANALYSIS_INTERVAL = '10s';
/** Budget of rollout.match regexes per app, in characters (each may be up to 1024). */
export const MAX_REGEX_BYTES = 4096;

const resources = object('Compute resources, as in a Pod container: requests and limits of cpu, memory, nvidia.com/gpu, ...', {
  requests: map(quantity('A quantity, e.g. "500m" or "2Gi".'), 'Minimum resources the scheduler reserves.', { maxProperties: 16 }),
  limits: map(quantity('A quantity, e.g. "1" or "4Gi".'), 'Maximum resources the container may use. GPUs (nvidia.com/gpu) go here.', { maxProperties: 16 }),
});

const envVar = object('An environment variable for the container.', {
  name: required(string('Variable name.', { minLength: 1, maxLength: 253 })),
  value: string('Literal value.', { maxLength: 32768 }),
  valueFrom: envVarSource,
});

export const containerSchema = object(
  'A container app, served by a Knative Service. Changing any field here makes a new version (a new revision).', {
    image: required(string('Container image reference, e.g. ghcr.io/acme/shop:1.4.0: [registry[:port]/]path[:tag][@digest], lowercase path. Prefer a tag or digest that never moves.', { minLength: 1, maxLength: 512, pattern: IMAGE_REFERENCE })),
    port: integer('Port the app listens on for HTTP; Knative sends requests here (its default is 8080).', { minimum: 1, maximum: 65535 }),
    command: array(string('An argument.', { maxLength: 4096 }), 'Entrypoint override (the image ENTRYPOINT).', { maxItems: 64 }),
    args: array(string('An argument.', { maxLength: 4096 }), 'Arguments to the entrypoint (the image CMD).', { maxItems: 256 }),
    env: array(envVar, 'Environment variables.', { maxItems: 256, listType: 'map', listMapKeys: ['name'] }),
    envFrom: array(envFromSource, 'Environment variables taken from ConfigMaps or Secrets.', { maxItems: 32 }),
    resources,
    readinessProbe: probe('A core/v1 Probe: when the container is ready for requests. Knative adds a default TCP probe when absent.'),
    livenessProbe: probe('A core/v1 Probe: when the container must be restarted.'),
    ...podTemplateFields,
  }, { rules: podTemplateRules });

export const modelSchema = object(
  'A model app. serving picks how KServe serves it: a predictor (an InferenceService in Knative (serverless) mode, the default) or an LLM (one LLMInferenceService per live version, vLLM workers behind Gateway API, traffic split by the group weights the operator sets). Changing any field here makes a new version.', {
    serving: enumeration(SERVING_MODES, `How KServe serves the model. Unset or "${PREDICTOR}": an InferenceService in Knative mode, with format picking the runtime. "${LLM}": a large language model on KServe's LLMInferenceService (serving.kserve.io/v1alpha2, KServe 0.20's llmisvc manager): vLLM on GPUs, one LLMInferenceService per live version in one routing group whose weights the rollout sets; needs resources.limits with a GPU, takes no format, runtime or protocolVersion. Cannot be changed on an existing app (create a new one).`),
    servedModelName: string(`${LLM} only: the model name clients ask for (the "model" of a completion request, and the path /publishers/<namespace>/models/<name>/v1/...), the same for every version so the address never changes. Default: the app's name.`, { pattern: SERVED_MODEL_NAME, maxLength: 128 }),
    format: object('The model format; picks the KServe serving runtime. Required unless serving is llm.', {
      name: required(enumeration(MODEL_FORMATS, 'Model format name. Use "custom" together with runtime for anything else.')),
      version: string('Format version, e.g. "1" for sklearn 1.x.', { maxLength: 64 }),
    }),
    storageUri: required(string('Where the model is stored: gs://, s3://, pvc://, hf://, oci:// or http(s):// URI (for serving llm: hf://, s3://, pvc:// or oci://, what KServe\'s LLM storage initializer reads).', { pattern: STORAGE_URI_PATTERN, maxLength: 2048 })),
    size: quantity(`Approximate size of the model, e.g. "12Gi", at least ${MIN_MODEL_SIZE}: the node cache reserves this much, and the namespace's cache budget is charged it (or the platform's minimum per cache, if more). Required with prewarm.cacheModel.`, {
      // A "1", "1m" or "0.000001" names no real model's files: what the agent downloads is whatever the URI holds.
      rules: [{ rule: `type(self) == int ? self >= ${parseQuantity(MIN_MODEL_SIZE)} : (!isQuantity(self) || quantity(self).compareTo(quantity('${MIN_MODEL_SIZE}')) >= 0)`, message: `must be at least ${MIN_MODEL_SIZE}, e.g. "12Gi": the size of the model's files, which the node cache reserves` }],
    }),
    runtime: string('Name of a ServingRuntime or ClusterServingRuntime to use instead of the one KServe picks for the format.', { maxLength: 253, pattern: DNS_LABEL }),
    protocolVersion: enumeration(['v1', 'v2', 'grpc-v2'] as const, 'Inference protocol the runtime speaks.'),
    args: array(string('An argument.', { maxLength: 4096 }), 'Extra arguments for the model server.', { maxItems: 64 }),
    env: array(envVar, 'Environment variables for the model server.', { maxItems: 256, listType: 'map', listMapKeys: ['name'] }),
    resources,
    ...podTemplateFields,
  }, {
    rules: [
      { rule: `${IS_LLM} || has(self.format)`, message: `format is required (unless serving is "${LLM}")`, fieldPath: '.format', reason: 'FieldValueRequired' },
      { rule: `!has(self.format) || self.format.name != 'custom' || has(self.runtime)`, message: 'runtime is required when format.name is "custom"', fieldPath: '.runtime', reason: 'FieldValueRequired' },
      ...(['format', 'runtime', 'protocolVersion'] as const).map((f) => ({ rule: `!(${IS_LLM}) || !has(self.${f})`, message: `${f} does not apply to serving "${LLM}": KServe runs vLLM (its llm-d image) for every LLM`, fieldPath: `.${f}` })),
      { rule: `!(${IS_LLM}) || !has(self.args)`, message: `args do not apply to serving "${LLM}": KServe's vLLM command line takes extra arguments from the env variable VLLM_ADDITIONAL_ARGS`, fieldPath: '.args' },
      ...(['containerConcurrency', 'timeoutSeconds'] as const).map((f) => ({ rule: `!(${IS_LLM}) || !has(self.${f})`, message: `${f} is Knative's and does not apply to serving "${LLM}" (no Knative revision runs it)`, fieldPath: `.${f}` })),
      { rule: `${IS_LLM} || !has(self.servedModelName)`, message: `servedModelName applies to serving "${LLM}" only`, fieldPath: '.servedModelName' },
      // KServe splits a group only across members serving the same model names (router_group.go): a new name would never get traffic.
      { rule: `has(self.servedModelName) == has(oldSelf.servedModelName) && (!has(self.servedModelName) || self.servedModelName == oldSelf.servedModelName)`, message: `servedModelName cannot change: KServe splits traffic only across versions serving the same name (create a new app for another name)`, fieldPath: '.servedModelName' },
      { rule: `!(${IS_LLM}) || self.storageUri.matches('^(hf|s3|pvc|oci)://')`, message: `serving "${LLM}" reads hf://, s3://, pvc:// or oci:// URIs (KServe's LLM storage initializer)`, fieldPath: '.storageUri' },
      { rule: `!(${IS_LLM}) || (has(self.resources) && has(self.resources.limits) && self.resources.limits.exists(k, k.endsWith('/gpu') || k.startsWith('nvidia.com/mig-') || k.startsWith('gpu.intel.com/')))`, message: `serving "${LLM}" needs GPUs: set resources.limits, e.g. "nvidia.com/gpu": 1 (KServe's vLLM image is built for CUDA)`, fieldPath: '.resources', reason: 'FieldValueRequired' },
      ...podTemplateRules,
      { rule: `!has(self.volumeMounts) || self.volumeMounts.all(m, m.mountPath != '${KSERVE_MODEL_DIR}' && !m.mountPath.startsWith('${KSERVE_MODEL_DIR}/'))`, message: `mountPath must not be under ${KSERVE_MODEL_DIR}: KServe puts the model there`, fieldPath: '.volumeMounts' },
    ],
  });

export const windowSchema = object(
  'A scheduled scale window: from each opening (schedule) for duration, the window\'s minScale (and maxScale) apply.', {
    name: required(string('Window name, unique within the app (a DNS label), shown in status and events.', { pattern: DNS_LABEL, maxLength: 63 })),
    schedule: required(string('When the window opens: a 5-field cron expression (minute hour day-of-month month day-of-week), e.g. "0 8 * * 1-5". Evaluated in timeZone.', { minLength: 9, maxLength: 128 })),
    duration: required(duration('How long the window stays open after each opening (elapsed time, so it is exact across daylight-saving changes).', { max: { value: '8784h', why: 'a window opens at least once a year, and a year has at most 366 days' } })),
    timeZone: string('IANA time zone of the schedule, e.g. Europe/Berlin.', { default: WINDOW_DEFAULTS.timeZone, maxLength: 64 }),
    minScale: required(integer('Minimum replicas while the window is open. 0 lets the app scale to zero inside the window.', { minimum: 0, maximum: 1000 })),
    maxScale: integer('Maximum replicas while the window is open (unset: the app\'s maxScale).', { minimum: 1, maximum: 1000 }),
  }, {
    rules: [{ rule: '!has(self.maxScale) || self.minScale <= self.maxScale', message: 'minScale must be <= maxScale within a window', fieldPath: '.minScale' }],
  });

export const scalingSchema = object('How the app scales: bounds, the autoscaling target and scheduled windows.', {
  minScale: integer('Minimum replicas outside every window. 0 = scale to zero when idle.', { minimum: 0, maximum: 1000, default: 0 }),
  maxScale: integer('Maximum replicas (unset: no limit beyond the cluster\'s).', { minimum: 1, maximum: 1000 }),
  target: integer('Autoscaling target per replica: in-flight requests (metric concurrency) or requests per second (metric rps).', { minimum: 1, maximum: 100000 }),
  metric: enumeration(['concurrency', 'rps'] as const, 'What the autoscaler measures.', { default: SCALING_DEFAULTS.metric }),
  scaleToZeroAfter: duration('How long the last replica is kept after traffic stops before scaling to zero (Knative scale-to-zero-pod-retention-period).', { max: { value: '1h', why: 'Knative\'s longest scale-to-zero retention' } }),
  windows: array(windowSchema, 'Scheduled windows that raise or lower the scale on time, e.g. warm by day and zero at night. Where windows overlap, the largest minScale and the smallest maxScale apply.', {
    maxItems: 16, listType: 'map', listMapKeys: ['name'],
  }),
}, {
  rules: [
    { rule: '!has(self.maxScale) || self.minScale <= self.maxScale', message: 'minScale must be <= maxScale', fieldPath: '.minScale' },
    { rule: '!has(self.maxScale) || !has(self.windows) || self.windows.all(w, w.minScale <= self.maxScale)', message: 'a window\'s minScale must be <= scaling.maxScale (it would be cut to maxScale)', fieldPath: '.windows' },
  ],
});

export const warmupSchema = object(
  'Warmup requests sent straight to a new version\'s revision (not the public route) once its replicas are ready, before it gets traffic.', {
    path: required(string('Request path, starting with "/", e.g. /v1/models/m:predict.', { pattern: '^/[^\\s]*$', maxLength: 2048 })),
    method: enumeration(['GET', 'POST', 'PUT', 'HEAD'] as const, 'HTTP method.', { default: WARMUP_DEFAULTS.method }),
    headers: map(string('Header value.', { maxLength: 4096 }), 'Request headers. Host and hop-by-hop headers (Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade) are refused.', { maxProperties: 32 }),
    body: string('Request body (e.g. a JSON inference payload).', { maxLength: 65536 }),
    count: integer('How many successful responses make the version warm.', { minimum: 1, maximum: 1000, default: WARMUP_DEFAULTS.count }),
    timeout: duration('Total time for one request, body included.', { default: WARMUP_DEFAULTS.timeout, min: { value: '1ms', why: 'a request needs time' }, max: { value: '10m', why: 'a warmup request is one request' } }),
    deadline: duration('How long warmup may take in all, from the replicas being ready; past it the version is marked WarmupFailed and gets no traffic.', { default: WARMUP_DEFAULTS.deadline, min: { value: '1s', why: 'warmup needs time' }, max: { value: '6h', why: 'a version that is not warm in 6h will not be' } }),
  });

export const prewarmSchema = object('Prewarming: start, cache and warm a version before users reach it, so nobody meets a cold start.', {
  replicas: integer('Cold-start buffer: a new version is started with at least this many ready replicas before it gets traffic, and held there until warm.', { minimum: 0, maximum: 1000 }),
  leadTime: duration('Apply a scale window\'s minScale this long before it opens, so replicas are up (and warm) at opening time.', { max: { value: '24h', why: 'replicas start in minutes, not days' } }),
  warmup: warmupSchema,
  cacheModel: boolean('Cache the model on the nodes with a KServe LocalModelCache (model apps only).'),
});

export const headerMatchSchema = object('A header rule: requests whose header matches go to the candidate, whatever canaryPercent is.', {
  header: required(string('Header name, e.g. x-canary.', { pattern: HEADER_NAME, maxLength: 256 })),
  exact: string('Matches when the value equals this.', { maxLength: 1024 }),
  // Not empty: Istio refuses an empty prefix or regex match.
  prefix: string('Matches when the value starts with this (not empty).', { minLength: 1, maxLength: 1024 }),
  regex: string('Matches when the value matches this RE2 regular expression (the syntax Envoy uses: no lookaround or backreferences; not empty).', { minLength: 1, maxLength: 1024 }),
}, {
  rules: [{ rule: '[has(self.exact), has(self.prefix), has(self.regex)].filter(x, x).size() == 1', message: 'exactly one of exact, prefix or regex must be set' }],
});

export const analysisCheckSchema = object('A Prometheus check: the query\'s first value must lie within [min, max].', {
  name: required(string('Check name, shown in status and events.', { pattern: DNS_LABEL, maxLength: 63 })),
  query: required(string('PromQL instant query returning one number; {{app}}, {{namespace}}, {{revision}} and {{version}} are substituted.', { minLength: 1, maxLength: 8192 })),
  min: number('Lowest passing value.'),
  max: number('Highest passing value.'),
}, {
  rules: [{ rule: 'has(self.min) || has(self.max)', message: 'a check needs min or max' }],
});

/** The longest SLO period: a longer one holds a budget spent months ago against today's release. */
const SLO_WINDOW_MAX = { value: '2160h', why: '90 days; objectives are usually 28 or 30 days' };
const QUERY_VARS = '{{app}}, {{namespace}}, {{version}} and {{revision}} are substituted as in checks';
const windowQuery = (what: string) => string(`PromQL returning ${what} of one version over a window, with {{window}} where the range goes (e.g. [{{window}}]): the operator substitutes each window it reads (e.g. "5m"); ${QUERY_VARS}.`, {
  minLength: 1, maxLength: 8192,
  rules: [{ rule: "self.contains('{{window}}')", message: 'the query must use {{window}} (e.g. rate(...[{{window}}])): each burn-rate window reads its own range' }],
});

export const burnRateSchema = object('A multi-window burn-rate gate (the SRE workbook\'s): it fires when the version\'s error budget burns more than factor times faster than the objective allows over both windows, the long one showing the burn is real and the short one that it is still going on.', {
  long: required(duration('The long window, e.g. "1h".', { min: { value: '1m', why: 'a rate needs a few scrapes' }, max: SLO_WINDOW_MAX })),
  short: required(duration('The short window, e.g. "5m" (the workbook takes a twelfth of long).', { min: { value: '1m', why: 'a rate needs a few scrapes' }, max: SLO_WINDOW_MAX })),
  factor: required(number('Burn rate that fires, in multiples of the sustainable rate: 14.4 over 1h spends 2% of a 30-day budget; 6 over 6h spends 5%.', { minimum: 1, maximum: 1000 })),
}, {
  rules: [{ rule: 'duration(self.short) < duration(self.long)', message: 'short must be a shorter window than long', fieldPath: '.short' }],
});

export const sloSchema = object('A service-level objective for the app, gating its releases on the error budget: during every step and the bake the candidate\'s burn rate is read at analysis.cadence, and a fast burn (both windows of a burnRates pair above its factor) rolls it back at once (phase Failed, reason BurnRateExceeded); with freezeBelow, a new version waits while too little budget remains. Give errorRatio, or good and total.', {
  // A CEL rule, not minimum/maximum: the API server prints a maximum of 99.999 as "99" in its refusal.
  objective: required(number('The share of good requests to reach, in percent, from 50 to 99.999, e.g. 99.9 (an error budget of 0.1%).', {
    rules: [{ rule: 'self >= 50.0 && self <= 99.999', message: 'must be from 50 to 99.999 (percent; 100 leaves no error budget)' }],
  })),
  window: duration('The period the objective covers: the remaining error budget (freezeBelow) is read over it.', { default: SLO_DEFAULTS.window, min: { value: '1h', why: 'a shorter budget is all noise' }, max: SLO_WINDOW_MAX }),
  errorRatio: windowQuery('the share of failed requests (0 to 1)'),
  good: windowQuery('the number (or rate) of good requests'),
  total: windowQuery('the number (or rate) of all requests'),
  budgetErrorRatio: windowQuery('the app\'s share of failed requests (0 to 1) across all its versions, for the release freeze (e.g. from a recording rule without a version label; {{version}} is the stable version\'s hash if used). Unset: the error ratio (errorRatio, or good and total) of the version serving all traffic, which does not count what earlier versions spent'),
  burnRates: array(burnRateSchema, 'The gates; default the workbook\'s pairs: 14.4 over 1h and 5m, 6 over 6h and 30m. Any pair firing rolls the candidate back.', { minItems: 1, maxItems: 4, default: SLO_DEFAULTS.burnRates }),
  freezeBelow: number('Release freeze: while less than this share (percent, 0..100) of the error budget remains, as the version serving all traffic measured it over window, a new version is not rolled out (Stalled, reason ReleaseFrozen) unless rollout.releaseOverride names it. The platform may set a higher floor per namespace (--release-freeze-below).', { minimum: 0, maximum: 100 }),
}, {
  rules: [
    { rule: 'has(self.errorRatio) != (has(self.good) || has(self.total))', message: 'give the error ratio one way: errorRatio, or good and total', fieldPath: '.errorRatio' },
    { rule: 'has(self.good) == has(self.total)', message: 'good and total go together', fieldPath: '.total', reason: 'FieldValueRequired' },
    { rule: `!has(self.burnRates) || self.burnRates.all(b, duration(b.long) <= duration(has(self.window) ? self.window : '${SLO_DEFAULTS.window}'))`, message: 'a burn-rate window cannot be longer than the SLO\'s window', fieldPath: '.burnRates' },
  ],
});

export const releaseOverrideSchema = object('Lets one version through a release freeze (an urgent fix). Who and why are recorded in an Event and in status.release; remove it once the version is out.', {
  version: required(string('The version hash to let through (status.versions.candidate.version, or kubectl sapp plan). Ignored for any other version.', { pattern: '^[0-9a-f]{10}$', maxLength: 10 })),
  by: required(string('Who decided, e.g. a name or an on-call handle.', { minLength: 1, maxLength: 253 })),
  reason: required(string('Why the freeze is overridden, e.g. an incident or a ticket.', { minLength: 1, maxLength: 1024 })),
});

/** Browsers keep a cookie at most 400 days (RFC 6265bis, "The Max-Age Attribute"). */
const COOKIE_MAX_AGE = { value: '9600h', why: 'browsers keep a cookie at most 400 days' };
const secureSet = '(has(self.secure) && self.secure)';

export const stickinessSchema = object('Sticky sessions, off unless set (needs spec.ingress): a request without the cookie is split by weight, and its response sets a cookie naming the version it reached; a request with the cookie stays on that version while the version has weight, through every step, pause and weight change. Weights (status, kubectl sapp status and plan) then count new sessions only. On promotion every session ends on the new stable; on rollback, abort or failure candidate sessions return to stable at once; a cookie naming any other version goes to stable. Responses set the cookie only for requests without a valid one. Header rules (match) still come first. A client that drops cookies is split again at each request.', {
  cookieName: string('Name of the cookie that names the session\'s version (letters, digits, "_" and "-"). A "__Host-" name (recommended where other apps share a parent domain: no other host can set it) needs secure and path "/"; a "__Secure-" name needs secure.', {
    minLength: 1, maxLength: 64, default: STICKINESS_DEFAULTS.cookieName,
    rules: [{ rule: "self.matches('^[A-Za-z0-9_-]+$')", message: 'a cookie name holds only letters, digits, "_" and "-"' }],
  }),
  maxAge: duration('How long a browser keeps the cookie (its Max-Age): past it, the session is split by weight again.', { default: STICKINESS_DEFAULTS.maxAge, min: { value: '1s', why: 'Max-Age counts whole seconds' }, max: COOKIE_MAX_AGE }),
  // No "%": the proxy reads a header value it adds as a format string (Envoy's %COMMAND%), and no ";", which would add an attribute.
  path: string('The cookie\'s Path attribute: the URL paths it is sent with. Starts with "/"; visible ASCII characters other than ";" and "%".', {
    maxLength: 256, default: STICKINESS_DEFAULTS.path,
    rules: [{ rule: "self.matches('^/[!-$&-:<-~]*$')", message: 'a cookie path starts with "/" and holds only visible ASCII characters other than ";" and "%" (no spaces)' }],
  }),
  secure: boolean('The cookie\'s Secure attribute: sent over HTTPS only. Needed for sameSite None.'),
  httpOnly: boolean('The cookie\'s HttpOnly attribute: hidden from scripts.', { default: STICKINESS_DEFAULTS.httpOnly }),
  sameSite: enumeration(['Strict', 'Lax', 'None'] as const, 'The cookie\'s SameSite attribute: whether it is sent with cross-site requests. None needs secure.', { default: STICKINESS_DEFAULTS.sameSite }),
}, {
  rules: [
    { rule: `!has(self.sameSite) || self.sameSite != 'None' || ${secureSet}`, message: 'sameSite None needs secure: true (browsers drop such a cookie otherwise)', fieldPath: '.secure' },
    // Browsers read these prefixes case-insensitively (RFC 6265bis, "Cookie Name Prefixes").
    { rule: `!has(self.cookieName) || !self.cookieName.lowerAscii().startsWith('__host-') || (${secureSet} && (!has(self.path) || self.path == '/'))`, message: 'a "__Host-" cookie (in any case) needs secure: true and path "/" (browsers drop it otherwise)', fieldPath: '.cookieName' },
    { rule: `!has(self.cookieName) || !self.cookieName.lowerAscii().startsWith('__secure-') || ${secureSet}`, message: 'a "__Secure-" cookie (in any case) needs secure: true (browsers drop it otherwise)', fieldPath: '.cookieName' },
  ],
});

export const rolloutSchema = object('How a new version is rolled out. Edit canaryPercent to move traffic; 100 (or removing it) promotes, 0 rolls back.', {
  canaryPercent: integer('Share of traffic (0..100) for the candidate version; the stable version keeps the rest. 100 promotes, 0 rolls back (the candidate stays, scaled to zero), except with match: then 0 is header testing (phase Testing, the candidate kept warm with at least one replica for the testers).', { minimum: 0, maximum: 100 }),
  match: array(headerMatchSchema, `Header rules that send matching requests to the candidate (needs spec.ingress). Their regexes total at most ${MAX_REGEX_BYTES} characters.`, {
    maxItems: 16,
    // Every regex is compiled to check it: the budget bounds that work per app, whatever the edits.
    rules: [{ rule: `self.map(m, has(m.regex) ? size(m.regex) : 0).sum() <= ${MAX_REGEX_BYTES}`, message: `the regexes of match total more than ${MAX_REGEX_BYTES} characters; use fewer or shorter ones (exact or prefix cost nothing)` }],
  }),
  mirrorPercent: integer('Traffic mirroring, off by default (needs spec.ingress): a copy of this share (0..100) of the stable traffic is sent to the candidate, and its responses are discarded. Only while the candidate is ready and warm. Copies are taken on the app\'s default route, which during a canary also carries the candidate\'s own share; they include writes (POST, PUT, ...), so the candidate must tolerate them.', { minimum: 0, maximum: 100 }),
  steps: array(integer('A canary percentage (1..99).', { minimum: 1, maximum: 99 }), 'Automated rollout: canary percentages to move through, e.g. [10, 25, 50]; after the last step the candidate is promoted. A manual canaryPercent always wins.', { maxItems: 20 }),
  interval: duration('Time at each step before its checks decide.', { default: ROLLOUT_DEFAULTS.interval, min: { value: MIN_ANALYSIS_INTERVAL, why: 'each step queries Prometheus' }, max: ROLLOUT_MAX }),
  analysis: object('Metric checks and an SLO that gate each automated step and the bake. They run every cadence while a step or the bake lasts, and once more when a step ends.', {
    prometheus: required(object('The Prometheus server to query: a provider the platform defines (usual), or an address where the platform allows addresses.', {
      provider: string('Name of a Prometheus provider defined in the operator\'s configuration (--analysis-providers), e.g. "main".', { pattern: DNS_LABEL, maxLength: 63 }),
      address: string('Base URL, e.g. http://prometheus.monitoring:9090; accepted only where the platform allows analysis addresses (--allow-analysis-address). No credentials, query or fragment.', { pattern: '^https?://[^\\s?#@]+$', maxLength: 2048 }),
    }, {
      rules: [{ rule: 'has(self.provider) != has(self.address)', message: 'set exactly one of provider or address' }],
    })),
    checks: array(analysisCheckSchema, 'Checks that must all pass for a step to advance. An empty result is not a pass: it halts the rollout.', { minItems: 1, maxItems: 16 }),
    slo: sloSchema,
    cadence: duration('How often checks and burn-rate gates run while a step or the bake lasts: a candidate that starts failing is caught within one cadence, not at the step\'s end. Each round sends one query per check and per distinct burn-rate window.', { default: ROLLOUT_DEFAULTS.cadence, min: { value: MIN_ANALYSIS_INTERVAL, why: 'each round queries Prometheus' }, max: ROLLOUT_MAX }),
    failureThreshold: integer('Consecutive failed check rounds before the candidate fails (phase Failed, all traffic back on stable); a passing round starts the count again. A burn-rate gate that fires fails it at once.', { minimum: 1, maximum: 100, default: ROLLOUT_DEFAULTS.failureThreshold }),
  }, {
    rules: [{ rule: 'has(self.checks) || has(self.slo)', message: 'analysis needs checks or an slo', fieldPath: '.checks', reason: 'FieldValueRequired' }],
  }),
  bake: duration('After promotion, how long the previous version is kept warm (its replicas held, at 0% traffic) while the analysis keeps running on the new one (phase Baking): a failure in the bake moves all traffic back to the previous version at once, without a cold start; the bake\'s end retires it. Unset: no bake, the previous version retires on promotion.', { min: { value: MIN_ANALYSIS_INTERVAL, why: 'the bake is read at the analysis cadence' }, max: ROLLOUT_MAX }),
  releaseOverride: releaseOverrideSchema,
  retainPrevious: duration(`serving "${LLM}" only: how long the version a promotion (or a new edit) replaced is kept, stopped (KServe's serving.kserve.io/stop: its pods and routes go, its LLMInferenceService stays), so that going back to it within this time restarts that LLMInferenceService instead of making a new one. Past it, it is deleted. Default ${ROLLOUT_DEFAULTS.retainPrevious}.`, { min: { value: '1m', why: 'a rollback needs time to be decided' }, max: { value: '168h', why: 'a stopped version holds its name and objects; a week covers a release cycle' } }),
  progressDeadline: duration('How long a candidate may take to become ready and warm. Past it the candidate fails (phase Failed, reason ProgressDeadlineExceeded) and the stable version keeps all traffic. Not counted while paused.', { default: ROLLOUT_DEFAULTS.progressDeadline, min: { value: '10s', why: 'a revision needs time to start' }, max: ROLLOUT_MAX }),
  paused: boolean('Hold the rollout where it is: automated steps do not advance, checks do not run and the progress deadline does not count. Remove (or set false) to resume; the current step then starts its interval again.'),
  abort: boolean('Stop the rollout: all traffic back on the stable version, the candidate kept at 0% and scaled to zero (phase Aborted). Remove (or set false) to start the candidate again from its first step.'),
  retry: integer('Retry a failed candidate (phase Failed): a failure is remembered with the value in force then, and any other value starts the candidate again from its first step (warmup and checks included). Bump it, e.g. from 0 to 1.', { minimum: 0, maximum: 1000000 }),
  stickiness: stickinessSchema,
  promote: string('Promote the candidate whose version hash (status.versions.candidate.version) is given, now: remaining steps and checks are skipped, traffic moves once it is ready and warm. Ignored for any other version, so it may stay in the spec. Does not override a failure (retry first).', { pattern: '^[0-9a-f]{10}$', maxLength: 10 }),
}, {
  rules: [{ rule: '!has(self.analysis) || has(self.steps)', message: 'analysis needs steps', fieldPath: '.analysis' }],
});

export const ingressSchema = object('Public routing through an Istio VirtualService: hosts, gateways, timeout and retries; header rules from rollout.match.', {
  hosts: required(array(string('A DNS host name, e.g. shop.example.com (a leading "*." is allowed).', { pattern: HOSTNAME, maxLength: 253 }), 'Host names the app answers on.', { minItems: 1, maxItems: 16, listType: 'set' })),
  gateways: array(string('An Istio Gateway as "namespace/name"; must be allowed by the operator\'s configuration. Short and dotted ("name.namespace") forms are not accepted.', { pattern: GATEWAY_REF, maxLength: 253 }), 'Gateways to attach to. Unset: the mesh only, and the VirtualService is visible in the app\'s namespace only (exportTo ".").', { maxItems: 8, listType: 'set' }),
  timeout: duration('Request timeout.', { min: ISTIO_MIN, max: ROUTE_MAX }),
  retries: object('Retry policy.', {
    attempts: required(integer('Number of retries; 0 turns retries off.', { minimum: 0, maximum: 10 })),
    perTryTimeout: duration('Timeout of each try.', { min: ISTIO_MIN, max: ROUTE_MAX }),
    retryOn: string('Conditions to retry on, comma-separated: Envoy\'s retry policies or HTTP status codes, e.g. "5xx,connect-failure,503".', {
      maxLength: 256, pattern: '^[a-z0-9-]+(,[a-z0-9-]+)*$', rules: [RETRY_ON_RULE],
    }),
  }, {
    // Istio refuses a retry policy whose attempts are 0 (retries off).
    rules: [{ rule: 'self.attempts > 0 || (!has(self.perTryTimeout) && !has(self.retryOn))', message: 'perTryTimeout and retryOn need attempts of at least 1 (0 turns retries off)', fieldPath: '.attempts' }],
  }),
});

/**
 * The largest spec, in bytes of JSON, the operator reads; a larger one is refused (InvalidSpec on
 * spec) without being parsed, and costs the cache its metadata and status only. The CRD admits up to
 * etcd's 1.5 MiB per object; this is what holds the operator's memory per app, and so the chart's
 * memory limit at the documented scale (docs/benchmarks.md, "Memory per app"). Twice the largest
 * single field (warmup.body, 64 Ki characters), so no field at its schema's maximum is refused alone
 * when it is ASCII: bytes are counted as the API server serves them (util/served-json.ts servedJsonBytes),
 * where a '<', '>' or '&' takes 6 and a non-ASCII character 2 to 4, so 64 Ki of those can be.
 */
export const MAX_APP_SPEC_BYTES = 128 * 1024;

const SPEC_IS_LLM = `has(self.model) && has(self.model.serving) && self.model.serving == '${LLM}'`;
const VERSION_PATH = 'each version answers on its own path, /<namespace>/<app>-<version>/v1/..., on the same host';
/** spec fields that an LLM app cannot use: [parent, field, why]. */
const LLM_ONLY_NOT: ReadonlyArray<readonly [string, string, string]> = [
  ['rollout', 'match', `KServe's group splits by weight only; ${VERSION_PATH}`],
  ['rollout', 'mirrorPercent', `KServe's group route does not mirror; ${VERSION_PATH}`],
  ['rollout', 'stickiness', `KServe's group route keeps no session; ${VERSION_PATH}`],
  ['ingress', 'timeout', 'KServe\'s LLM route sets its own (none: completions stream)'],
  ['ingress', 'retries', 'KServe\'s LLM route sets its own'],
  ['scaling', 'maxScale', `an LLM version runs minScale replicas (default ${LLM_DEFAULT_REPLICAS}); KServe's LLM autoscaler (WVA) is not used`],
  ['scaling', 'target', 'no Knative autoscaler runs an LLM'],
  ['scaling', 'scaleToZeroAfter', 'no Knative autoscaler runs an LLM; a window with minScale 0 stops its replicas'],
  ['prewarm', 'replicas', 'a new LLM version starts with the app\'s replicas'],
];

export const specSchema = object(`What the app runs and how it is served, scaled and rolled out. At most ${MAX_APP_SPEC_BYTES / 1024} KiB of JSON: the operator refuses a larger spec (Ready=False InvalidSpec on spec) without reading it; large values belong in a ConfigMap or Secret (envFrom, volumes).`, {
  container: containerSchema,
  model: modelSchema,
  scaling: scalingSchema,
  prewarm: prewarmSchema,
  rollout: rolloutSchema,
  ingress: ingressSchema,
}, {
  rules: [
    { rule: 'has(self.container) != has(self.model)', message: 'exactly one of container or model must be set' },
    // An LLM runs as LLMInferenceServices in a routing group, the others as one Knative-backed workload: no make-before-break exists between them.
    { rule: `(has(self.model) && has(self.model.serving) && self.model.serving == '${LLM}') == (has(oldSelf.model) && has(oldSelf.model.serving) && oldSelf.model.serving == '${LLM}')`, message: `model.serving "${LLM}" cannot be set on or removed from an existing app: create a new app for it (and move the host over)`, fieldPath: '.model.serving' },
    { rule: '!has(self.prewarm) || !has(self.prewarm.cacheModel) || !self.prewarm.cacheModel || has(self.model)', message: 'cacheModel needs a model app', fieldPath: '.prewarm.cacheModel' },
    { rule: '!has(self.prewarm) || !has(self.prewarm.cacheModel) || !self.prewarm.cacheModel || !has(self.model) || has(self.model.size)', message: 'cacheModel needs model.size (the cache reserves it on each node)', fieldPath: '.model.size', reason: 'FieldValueRequired' },
    { rule: '!has(self.rollout) || !has(self.rollout.match) || size(self.rollout.match) == 0 || has(self.ingress)', message: 'rollout.match needs spec.ingress (header routing is done by the VirtualService)', fieldPath: '.rollout.match' },
    { rule: '!has(self.rollout) || !has(self.rollout.mirrorPercent) || self.rollout.mirrorPercent == 0 || has(self.ingress)', message: 'rollout.mirrorPercent needs spec.ingress (mirroring is done by the VirtualService)', fieldPath: '.rollout.mirrorPercent' },
    { rule: '!has(self.rollout) || !has(self.rollout.stickiness) || has(self.ingress)', message: 'rollout.stickiness needs spec.ingress (sessions are kept by the app\'s route)', fieldPath: '.rollout.stickiness' },
    // An LLM's route is KServe's (one per version, weights rewritten by its group logic): what our own route or Knative does has no place to go.
    ...LLM_ONLY_NOT.map(([path, field, why]) => ({ rule: `!(${SPEC_IS_LLM}) || !has(self.${path}) || !has(self.${path}.${field})`, message: `${path}.${field} does not apply to serving "${LLM}": ${why}`, fieldPath: `.${path}.${field}` })),
    { rule: `!(${SPEC_IS_LLM}) || !has(self.scaling) || !has(self.scaling.windows) || self.scaling.windows.all(w, !has(w.maxScale))`, message: `a window's maxScale does not apply to serving "${LLM}": an LLM version runs minScale replicas`, fieldPath: '.scaling.windows' },
    { rule: `!(${SPEC_IS_LLM}) || !has(self.ingress) || (has(self.ingress.gateways) && size(self.ingress.gateways) > 0)`, message: `serving "${LLM}" with spec.ingress needs ingress.gateways: the Gateway API Gateways KServe's route puts the hosts on (without spec.ingress the app is served on KServe's own gateway, by path)`, fieldPath: '.ingress.gateways', reason: 'FieldValueRequired' },
    // minScale defaults to 0 once spec.scaling is set: for an LLM that is no replica at all, which only a window may mean.
    { rule: `!(${SPEC_IS_LLM}) || !has(self.scaling) || (has(self.scaling.windows) && size(self.scaling.windows) > 0) || (has(self.scaling.minScale) && self.scaling.minScale >= 1)`, message: `serving "${LLM}" with no window needs minScale of at least 1: no activator wakes an LLM from zero (a window with minScale 0 stops it for the window's duration)`, fieldPath: '.scaling.minScale' },
  ],
});

// ---------------------------------------------------------------- status

/**
 * The condition the model-cache controller owns: whether the app's model is cached on the nodes, and
 * if not, why (the namespace's budget, a name taken, KServe refusing, no LocalModel feature). Written
 * under its own field manager: conditions is a list keyed by type, so server-side apply keeps its
 * entry and the app controller's apart, and neither controller overwrites the other's.
 */
export const MODEL_CACHED = 'ModelCached';

const conditionSchema = object('A Kubernetes condition.', {
  type: required(string(`Condition type: Ready, Reconciling, Stalled, Paused, WorkloadReady (the Knative Service or InferenceService), Prewarmed, CanaryProgressing, Promoted, ${MODEL_CACHED} (prewarm.cacheModel).`, { maxLength: 316 })),
  status: required(enumeration(['True', 'False', 'Unknown'] as const, 'Status of the condition.')),
  reason: required(string('Machine-readable CamelCase reason.', { maxLength: 1024 })),
  message: required(string('Human-readable details.', { maxLength: 32768 })),
  observedGeneration: integer('The spec generation the condition was computed from.', { minimum: 0 }),
  lastTransitionTime: required(string('When the status last changed.', { format: 'date-time' })),
});

const versionStatusSchema = object('A version of the app (a hash of container or model) and the revision serving it.', {
  version: required(string('Version hash of the workload spec.')),
  revision: string('Knative revision serving this version.'),
  image: string('Container image (container apps).'),
  storageUri: string('Model URI (model apps).'),
  ready: boolean('The revision is ready.'),
  warm: boolean('Ready and prewarmed (warmup passed, if configured).'),
  replicas: integer('Ready replicas reported by the revision.'),
  summary: string('What this version runs, in short: the image name and tag (container apps) or the model format and file (model apps). The Stable and Candidate columns show it.'),
});

export const phases = ['Pending', 'Stable', 'Canary', 'Testing', 'Paused', 'Promoting', 'Baking', 'RolledBack', 'Aborted', 'Frozen', 'Failed'] as const;

/** Why a candidate failed (status.rollout.failure.reason, and the rollout event's reason). */
export const FAILURE_REASONS = ['RevisionFailed', 'ProgressDeadlineExceeded', 'WarmupFailed', 'AnalysisFailed', 'BurnRateExceeded'] as const;

export const statusSchema = object('Observed state, written by the operator from its first reconcile on. Until then, a new app reads as phase Pending with observedGeneration 0 (the API server\'s default).', {
  observedGeneration: integer('The spec generation this status describes.'),
  phase: enumeration(phases, 'Pending (first version starting), Stable (one version serving), Canary (traffic split), Testing (candidate reached by header rules only), Paused (rollout.paused), Promoting (candidate taking all traffic), Baking (the new version serves all traffic while rollout.bake lasts, the previous one kept warm to come back at once), RolledBack (canaryPercent 0: candidate kept at 0%), Aborted (rollout.abort), Frozen (a release freeze holds the candidate back: too little error budget remains; status.release says how much), Failed (the candidate failed: revision failed, progress deadline, warmup, checks or a burn-rate gate; the stable version, if any, keeps all traffic). A spec the operator refuses keeps the phase it had and shows as Ready=False with the reason.'),
  url: string('Public URL of the app.'),
  conditions: array(conditionSchema, `Read as kstatus reads them (Flux, kubectl wait; Argo CD's health check too), each with the generation it judged: Ready (True when the spec's desired state is reached and served: the first version ready, warm and routed; after an edit the new version promoted, a manual canaryPercent reached and held, or the rollout paused where it stands; Unknown while it is being reached, as during an automated canary; False when it cannot be, or for a problem being retried), Reconciling (True while the desired state is being reached, its reason what is in progress; absent otherwise), Stalled (True when only a new edit helps: a failed or aborted rollout, a refused spec; its reason the failure's, its message what to change; absent otherwise), Paused (True while rollout.paused holds the rollout). Informational: WorkloadReady (Knative/KServe's own Ready, reason and message), Prewarmed, CanaryProgressing, Promoted; with prewarm.cacheModel, ${MODEL_CACHED} (True: the model's LocalModelCache is written; False: why not, e.g. ModelCacheQuotaExceeded, ModelCacheLargerThanDeclared, ModelCacheRejected, ModelCacheConflict, ModelCacheNotInstalled, ModelCacheNotIsolated).`, { listType: 'map', listMapKeys: ['type'] }),
  versions: object('The stable version and the candidate, if any.', {
    stable: versionStatusSchema,
    candidate: versionStatusSchema,
  }),
  traffic: array(object('Where traffic goes.', {
    revision: required(string('Revision name.')),
    version: string('Version hash.'),
    percent: required(integer('Share of traffic.')),
    tag: string('Route tag: stable or candidate (each has its own URL).'),
    url: string('URL that reaches this target only.'),
  }), 'The traffic split in force.'),
  canary: object('Progress of the current canary (kept here so a restart resumes).', {
    weight: integer('Candidate percentage the rollout asks for (the rollout\'s own progress). With rollout.stickiness, a percentage of new sessions: sessions already under way stay on their version.'),
    trafficPercent: integer('Candidate percentage the data plane reports serving now (what the Weight column shows). With rollout.stickiness, a percentage of new sessions.'),
    step: integer('Index of the automated step in force (0-based).'),
    stepStartedAt: string('When the current step began.', { format: 'date-time' }),
    failedChecks: integer('Consecutive failed check rounds (a passing round resets it).'),
    halted: boolean('The last check round returned no data: the rollout stays at its step until a round has data (no data is not a pass).'),
    message: string('Latest analysis outcome.'),
    checkedAt: string('When the last check round of this step (or of the bake) ran: the next one is due a cadence later.', { format: 'date-time' }),
    released: boolean('The release freeze let this candidate through (enough error budget, or rollout.releaseOverride): it is not held again.'),
    bakeStartedAt: string('When the bake began: all traffic on the candidate, the previous version held warm.', { format: 'date-time' }),
    bakeReplicas: integer('Replicas the previous version is held at during the bake (what it had when the bake began).'),
    bakeRevision: string('The revision serving all traffic during the bake: an edit to another version promotes it, cutting the bake short.'),
    abortedVersion: string('Deprecated (read from statuses written before 0.2): see failure.'),
    version: string('The candidate version this progress belongs to.'),
    startedAt: string('When the candidate started (or resumed) making progress: the progress deadline counts from here.', { format: 'date-time' }),
    paused: boolean('The rollout is held by rollout.paused.'),
    aborted: boolean('The rollout is stopped by rollout.abort.'),
    failure: object('Why the candidate failed. It stays failed until rollout.retry changes or the workload spec does.', {
      version: required(string('The version that failed.')),
      reason: required(enumeration(FAILURE_REASONS, 'What failed.')),
      message: required(string('Details.')),
      at: string('When.', { format: 'date-time' }),
      retry: integer('The rollout.retry value in force when it failed.'),
    }),
  }),
  release: object('The release freeze (rollout.analysis.slo.freezeBelow, or the platform\'s floor for the namespace): the error budget last read, and an override in force.', {
    version: string('The candidate version the reading was made for.'),
    frozen: boolean('The candidate waits: less of the error budget remains than the policy asks for.'),
    freezeBelow: number('The policy in force, in percent of the budget: the higher of the app\'s and the platform\'s.'),
    budgetRemaining: number('Remaining error budget in percent (negative once overspent), as last read; shown only where the platform marks the Prometheus provider as confined to the namespace (--analysis-scoped-providers), since a tenant writes the query.'),
    checkedAt: string('When the budget was last read.', { format: 'date-time' }),
    message: string('What the last reading said.'),
    override: object('rollout.releaseOverride as it was used: the version it let through, who, why and when.', {
      version: required(string('The version let through.')),
      by: required(string('Who, as the spec says.')),
      reason: required(string('Why, as the spec says.')),
      at: string('When the override let the version through.', { format: 'date-time' }),
    }),
  }),
  prewarm: object('Prewarming of the candidate (or first) version.', {
    version: required(string('Version being prewarmed.')),
    startedAt: string('When its replicas were first ready and warmup began.', { format: 'date-time' }),
    warmedAt: string('When it became warm.', { format: 'date-time' }),
    requestsSent: integer('Warmup requests sent.'),
    succeeded: integer('Warmup requests that succeeded.'),
    lastError: string('Last warmup failure.'),
  }),
  scaling: object('The scale in force after windows and prewarm lead.', {
    minScale: integer('Effective minimum replicas.'),
    maxScale: integer('Effective maximum replicas (absent: unbounded).'),
    openWindows: array(string('Window name.'), 'Windows open now.'),
    prewarmingWindows: array(string('Window name.'), 'Windows in their lead time.'),
    nextTransition: object('The next scheduled change.', {
      at: required(string('When.', { format: 'date-time' })),
      window: required(string('Which window.')),
      change: required(enumeration(['prewarm', 'open', 'close'] as const, 'What happens.')),
      minScale: integer('Minimum from then on.'),
      maxScale: integer('Maximum from then on.'),
    }),
  }),
  modelCache: string('Name of the LocalModelCache for this app\'s model.'),
  refusedModelCache: object('A model cache refused because what landed on a node was larger than spec.model.size declared (ModelCached=False and Ready=False, reason ModelCacheLargerThanDeclared): the cache was removed and is not made again, so the model is not downloaded again, until spec.model.storageUri names another model (repeated or trailing slashes and the scheme\'s case name the same one) or spec.model.size covers measuredBytes. Written by the operator\'s model-cache controller from the node-side cache usage reports.', {
    storageUri: required(string('The model refused (spec.model.storageUri when it was).', { maxLength: 2048 })),
    size: required(string('spec.model.size as declared when it was refused.', { maxLength: 64 })),
    measuredBytes: required(integer('Bytes found in the model\'s folder on the node, more than the declared size.', { minimum: 0, format: 'int64' })),
    node: string('The node the size was measured on.', { maxLength: 253 }),
  }),
}, {
  // What a new app reads as before the operator first reports on it (the API server fills it in on
  // every read): Pending, generation not yet observed, which kstatus (Flux) and `kubectl get` show as
  // in progress without a write.
  default: { observedGeneration: 0, phase: 'Pending' },
});

export type ServerlessAppSpec = TypeOf<typeof specSchema>;
export type ServerlessAppStatus = TypeOf<typeof statusSchema>;
export type ContainerSpec = TypeOf<typeof containerSchema>;
export type ModelSpec = TypeOf<typeof modelSchema>;
export type ScalingSpec = TypeOf<typeof scalingSchema>;
export type PrewarmSpec = TypeOf<typeof prewarmSchema>;
export type WarmupSpec = TypeOf<typeof warmupSchema>;
export type RolloutSpec = TypeOf<typeof rolloutSchema>;
export type IngressSpec = TypeOf<typeof ingressSchema>;
export type HeaderMatch = TypeOf<typeof headerMatchSchema>;
export type Stickiness = TypeOf<typeof stickinessSchema>;
export type VersionStatus = TypeOf<typeof versionStatusSchema>;
export type TrafficStatus = NonNullable<ServerlessAppStatus['traffic']>[number];
export type Phase = (typeof phases)[number];
export type FailureReason = (typeof FAILURE_REASONS)[number];

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
}

export interface ServerlessApp {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: ServerlessAppSpec;
  status?: ServerlessAppStatus;
  /** Never sent: the operator's cache sets it on an app whose spec was past MAX_APP_SPEC_BYTES, kept unparsed (spec is then empty). */
  specTooLarge?: { bytes: number; limit: number };
}
