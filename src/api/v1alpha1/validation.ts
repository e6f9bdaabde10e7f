// What admission (schema and CEL) cannot judge: cron expressions and time
// zones, RE2 regular expressions, step order, and what the platform allows a
// namespace (gateways, hosts, analysis providers, model sizes and sources,
// service accounts, pod metadata keys, Secret references).
// Each problem names the field and says what is allowed; the controller turns
// them into Ready=False with the problem's reason and leaves running objects as
// they were.
// Validation runs on every reconcile but depends only on the spec, the
// namespace and the policy: its result is cached by a hash of those (bounded
// LRU), and the regexes an app may compile are bounded by their RE2 program
// size, so no app's validation holds the event loop for long, however often
// its metadata changes. It runs inside the reconcile, whose CPU is charged to
// the namespace's share (runtime/namespace-share.ts), and its caches (results,
// compiled regexes, yearly window checks) are kept per namespace: a tenant
// storming new content evicts only its own entries (util/lru.ts NamespacedLru).

import { LLM, servesLlm } from './serving.ts';
import { createHash } from 'node:crypto';
import { DURATION_PATTERN, parseDuration } from './duration.ts';
import { DEFAULT_ALLOWED_POD_METADATA_KEYS, podMetadataProblems } from './pod-metadata.ts';
import { DEFAULT_ALLOWED_TOLERATION_KEYS, schedulingProblems } from './scheduling-policy.ts';
import { secretReferenceProblems } from './secret-references.ts';
import { canonicalJson } from '../../util/canonical-json.ts';
import { servedJsonBytes } from '../../util/served-json.ts';
import { lazyRequire } from '../../util/lazy-require.ts';
import { CACHED_NAMESPACES, NamespacedLru } from '../../util/lru.ts';
import { FOLD_POINTS_PER_INSTRUCTION, re2ProgramSizeBound, UNICODE_CLASS_COST } from './regex-cost.ts';
import type { ProblemReason } from './problem-reasons.ts';
import { analysisTarget, DEFAULT_ANALYSIS_POLICY, type AnalysisPolicy } from './analysis-target.ts';
import { forbiddenHeader } from '../../util/http-headers.ts';
import { validateWindows } from './window-validation.ts';
import type { JSONSchema } from '../openapi.ts';
import { QuantityError, formatBytes, parseQuantity } from './quantity.ts';
import { gatewayRef, MAX_APP_SPEC_BYTES, specSchema, type ServerlessApp } from './serverlessapp.ts';
import { objectKey } from '../../util/object-key.ts';

const re2js = lazyRequire<typeof import('re2js')>('re2js');

export type { ProblemReason };

export interface SpecProblem { reason: ProblemReason; field: string; message: string }

export const DEFAULT_MAX_MODEL_SIZE = '100Gi';
export const DEFAULT_MAX_MODEL_CACHE_PER_NAMESPACE = '200Gi';
/** Model caches one namespace may hold: a bound on the node agent's download Jobs and the caches' objects, whatever their sizes. */
export const DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE = 50;
/**
 * What each model cache is charged at least against its namespace's bytes: KServe 0.20 reports no
 * size of what it downloads, so a model declared tiny is charged this much (at the default, the
 * 200Gi budget holds 200 such caches; the count cap holds fewer).
 */
export const DEFAULT_MODEL_CACHE_MIN_CHARGE = '1Gi';
/** The CRD's 16 hosts per app, times 4 apps naming all of theirs (typical apps name one or two). */
export const DEFAULT_MAX_HOST_CLAIMS_PER_NAMESPACE = 64;
/** Long enough for a GitOps prune and re-create of an app to keep its host. */
export const DEFAULT_HOST_CLAIM_RELEASE_AFTER = '1h';

/** In a policy's gateways, host suffixes and storage prefixes: the app's own namespace. */
const NAMESPACE = '{namespace}';

/** What the platform allows apps; each field left out takes the operator's default (see config.ts). */
export interface ValidationPolicy {
  /** Gateways apps may attach to: "namespace/name", "namespace/*" or "*"; "{namespace}" stands for the app's own. */
  allowedGateways: string[];
  /** Host suffixes apps may claim, "{namespace}" standing for the app's own; empty or unset = any host. */
  allowedHostSuffixes?: string[];
  /** Whether "*.example.com" hosts may be claimed (default false). */
  allowWildcardHosts?: boolean;
  /** Where analysis queries may go (default: nowhere, no providers and no addresses). */
  analysis?: AnalysisPolicy;
  /** Largest model.size, in bytes (default 100Gi). */
  maxModelSizeBytes?: number;
  /** Prefixes model.storageUri must start with, "{namespace}" standing for the app's own; empty or unset = any. */
  allowedStorageUriPrefixes?: string[];
  /**
   * Service accounts pods may run as (serviceAccountName), "*" for any; default none. Knative's
   * controller creates the pods, so no RBAC check of the tenant covers the name it picks.
   */
  allowedServiceAccounts?: string[];
  /** Prefixed keys and selector labels pods may carry: exact keys or "prefix/*"; default DEFAULT_ALLOWED_POD_METADATA_KEYS (see pod-metadata.ts). */
  allowedPodMetadataKeys?: string[];
  /** Taint keys pods may tolerate, "*" for any; default DEFAULT_ALLOWED_TOLERATION_KEYS (see scheduling-policy.ts). */
  allowedTolerationKeys?: string[];
  /** Whether pod (anti-)affinity terms may select pods of other namespaces (default false). */
  allowCrossNamespacePodAffinity?: boolean;
  /** Whether pods may be pinned to a named node, kubernetes.io/hostname (default false). */
  allowNodePinning?: boolean;
  /** Whether pods may read Secrets through env, envFrom and volumes (default false, see secret-references.ts). */
  allowSecretReferences?: boolean;
  /** Most bytes one namespace's model caches may reserve on each node (default 200Gi, see controllers/model-cache-quota.ts). */
  maxModelCacheBytesPerNamespace?: number;
  /** Most model caches one namespace may hold (default DEFAULT_MAX_MODEL_CACHES_PER_NAMESPACE). */
  maxModelCachesPerNamespace?: number;
  /** Least bytes each model cache is charged against its namespace's budget, whatever its model.size declares (default DEFAULT_MODEL_CACHE_MIN_CHARGE). */
  modelCacheMinChargeBytes?: number;
  /** Most HostClaims one namespace may hold (default 64, see controllers/host-claim-budget.ts). */
  maxHostClaimsPerNamespace?: number;
  /** How long a HostClaim no app of its namespace names is kept before it is released, ms (default 1h, see controllers/host-claim-release.ts). */
  hostClaimReleaseAfterMs?: number;
}

/**
 * A VirtualService's gateway reference as Istio resolves it (pilot/pkg/model,
 * resolveGatewayName): "ns/name" as is, "./name" and a bare "name" in the
 * VirtualService's namespace, and the legacy dotted form "name.ns" or
 * "name.ns.svc.cluster.local" as "ns/name" (the namespace is the second label).
 * "mesh" stays "mesh".
 */
export function resolveGateway(gateway: string, appNamespace: string): string {
  if (gateway === 'mesh') return gateway;
  if (gateway.includes('/')) {
    const { namespace, name } = gatewayRef(gateway);
    return namespace === '.' ? objectKey(appNamespace, name) : gateway;
  }
  const labels = gateway.split('.');
  return labels.length === 1 ? `${appNamespace}/${gateway}` : `${labels[1]}/${labels[0]}`;
}

/** Whether a gateway, resolved as Istio resolves it, matches the platform's allow-list; "mesh" is never allowed in a list (it would bind every sidecar). */
export function gatewayAllowed(gateway: string, appNamespace: string, allowed: string[]): boolean {
  const full = resolveGateway(gateway, appNamespace);
  if (full === 'mesh') return false;
  return allowed.some((pattern) => {
    const p = pattern.replaceAll(NAMESPACE, appNamespace);
    if (p === '*') return true;
    if (p.endsWith('/*')) return full.startsWith(p.slice(0, -1)) && !full.slice(p.length - 1).includes('/');
    return p === full;
  });
}

/** A host as Istio compares it: lower case, no trailing dot. */
export function normaliseHost(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/** The hosts an app claims, normalised and without repeats: what a cross-app HostConflict check compares. */
export function hostClaims(app: ServerlessApp): string[] {
  return [...new Set((app.spec.ingress?.hosts ?? []).map(normaliseHost))].sort();
}

/** Why a namespace may not claim a host under the policy, or undefined when it may. */
export function hostProblem(host: string, namespace: string, policy: ValidationPolicy): string | undefined {
  const h = normaliseHost(host);
  const wildcard = h.startsWith('*.');
  const base = wildcard ? h.slice(2) : h;
  if (wildcard && !policy.allowWildcardHosts) return `wildcard host ${JSON.stringify(host)} is not allowed on this platform`;
  if (wildcard && !base.includes('.')) return `wildcard host ${JSON.stringify(host)} covers a whole top-level domain`;
  // Service names belong to their namespace: "<svc>.<ns>.svc[.cluster.local]".
  const labels = base.split('.');
  const svc = labels.lastIndexOf('svc');
  if (svc >= 1 && (svc === labels.length - 1 || labels.slice(svc + 1).join('.') === 'cluster.local') && labels[svc - 1] !== namespace) {
    return `host ${JSON.stringify(host)} is a service name of namespace ${labels[svc - 1]}, not ${namespace}`;
  }
  const suffixes = (policy.allowedHostSuffixes ?? []).map((s) => s.replaceAll(NAMESPACE, namespace));
  if (suffixes.length && !suffixes.some((s) => base === s || base.endsWith(`.${s}`))) {
    return `host ${JSON.stringify(host)} is not allowed for namespace ${namespace}; allowed: hosts under ${suffixes.join(', ')}`;
  }
  return undefined;
}

/**
 * The RE2 program size (about one instruction per rune, class or copy of a repeated operand) all
 * of an app's header regexes may add up to. Istio's Envoy refuses a single regex over 32768
 * (re2.max_program_size.error_level); a quarter of that, shared by the app's 16 regexes, keeps the
 * first compile of one app's regexes under about 100 ms (re2ProgramSizeBound counts the work of
 * Unicode classes and case folding too; the worst shapes it admits took 1-45 ms on the 2-core test
 * machine at load 5), and is far above what header matches need
 * (`^(beta|canary)-[a-z0-9]{1,32}$` is about 80).
 */
export const MAX_REGEX_PROGRAM_SIZE = 8_192;

/** Per namespace: an app has at most 16 regexes; keyed by a hash, as a regex may be 4 KiB. */
const compiled = new NamespacedLru<string>(64, CACHED_NAMESPACES);

/**
 * RE2, as Envoy compiles header regexes: no lookaround, no backreferences, bounded repeats. Cached
 * per regex. Checked behind a lazy `.*?`, which keeps the syntax (a valid regex stays valid, an
 * invalid one stays invalid) but spares RE2JS its one-pass analysis of a regex anchored with ^:
 * about 100 ms for `^\pL{480}$` alone, 5 ms behind the prefix. Only a refused regex is compiled
 * as written, for RE2's own message, and its parse fails before any compile work.
 */
export function re2Problem(regex: string, namespace = ''): string | undefined {
  const key = sha256(regex);
  let why = compiled.get(namespace, key);
  if (why === undefined) {
    why = compileProblem(`.*?${regex}`) === undefined ? '' : compileProblem(regex) ?? '';
    compiled.set(namespace, key, why);
  }
  return why || undefined;
}

function compileProblem(regex: string): string | undefined {
  try {
    re2js().RE2JS.compile(regex);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

function storageUriAllowed(uri: string, namespace: string, prefixes: string[]): boolean {
  return prefixes.length === 0 || prefixes.some((p) => storageUriUnder(uri, p, namespace));
}

/**
 * Whether `uri` lies under the allowed prefix `prefix` for `namespace`. The namespace's part of the
 * path ends at a segment boundary: when no '/' follows the prefix's last {namespace}, the URI must
 * end where the expanded prefix ends or go on with a '/', so s3://models/{namespace} gives namespace
 * "team" s3://models/team/... and not namespace team-b's s3://models/team-b/...
 */
export function storageUriUnder(uri: string, prefix: string, namespace: string): boolean {
  const expanded = prefix.replaceAll(NAMESPACE, namespace);
  if (!uri.startsWith(expanded)) return false;
  const at = prefix.lastIndexOf(NAMESPACE);
  const closed = at < 0 || prefix.includes('/', at + NAMESPACE.length);
  return closed || uri.length === expanded.length || uri[expanded.length] === '/';
}

/** {namespace} as a whole path segment of a prefix: after a '/', and followed by a '/' or the prefix's end (storageUriUnder's boundary). */
const NAMESPACE_SEGMENT = /\/\{namespace\}(\/|$)/;

/**
 * Why an app of another namespace could name `uri`, or a URI under it, or undefined when none can.
 * KServe binds every InferenceService of the cluster whose storageUri equals or lies under a
 * cluster-scoped LocalModelCache's sourceModelUri to that cache (MatchStorageURI, at a '/'), admits
 * one cache per URI and refuses to delete one in use: only a URI no other namespace can reach is
 * safe to cache cluster-wide. That is one under an allowed prefix where {namespace} is a whole path
 * segment (namespaces then differ in that segment; storageUriPrefixOverlap keeps two such prefixes
 * apart, checked at start), and which no prefix without {namespace} reaches into.
 */
export function storageUriShared(uri: string, namespace: string, prefixes: string[]): string | undefined {
  if (prefixes.length === 0) return 'the platform allows any storage URI, so an app of any namespace can name this one';
  if (!prefixes.some((p) => NAMESPACE_SEGMENT.test(p) && storageUriUnder(uri, p, namespace))) {
    return `${uri} lies under no allowed prefix with {namespace} as a whole path segment, so other namespaces' apps can name it or a URI under it`;
  }
  const own = `${uri.replace(/\/+$/, '')}/`;
  const shared = prefixes.find((p) => !p.includes(NAMESPACE) && (own.startsWith(p) || p.startsWith(own)));
  return shared === undefined ? undefined : `the allowed prefix ${shared} lets an app of any namespace name ${uri} or a URI under it`;
}

/**
 * Two prefixes with {namespace} whose expansions for two namespaces can meet, or undefined. Where
 * the text before {namespace} in one starts with the other's, a namespace name can fill the
 * difference: namespace "x" of s3://m/{namespace}/ owns s3://m/x/, which holds every namespace's
 * s3://m/x/{namespace}/. Only prefixes with the same text before {namespace} and the same
 * {namespace} segment keep namespaces apart (they differ in that segment). Conservative: it may
 * refuse a pair no namespace name could join.
 */
export function storageUriPrefixOverlap(prefixes: string[]): [string, string] | undefined {
  const parts = [...new Set(prefixes)].filter((p) => p.includes(NAMESPACE)).map((p) => {
    const at = p.indexOf(NAMESPACE);
    const end = p.indexOf('/', at);
    return { p, stem: p.slice(0, at), segment: p.slice(at, end < 0 ? undefined : end) };
  });
  for (const [i, a] of parts.entries()) {
    for (const b of parts.slice(i + 1)) {
      const same = a.stem === b.stem && a.segment === b.segment;
      if (!same && (a.stem.startsWith(b.stem) || b.stem.startsWith(a.stem))) return [a.p, b.p];
    }
  }
  return undefined;
}

/**
 * A "." or ".." path segment, spelled plainly or percent-encoded (%2e): a prefix is a path, and
 * s3://models/team-b/../team-a/ starts with team-b's prefix but names team-a's objects.
 */
function hasDotSegment(uri: string): boolean {
  const path = uri.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split(/[?#]/)[0]!;
  return path.split(/\/|%2f|\\|%5c/i).some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

const validated = new NamespacedLru<SpecProblem[]>(64, CACHED_NAMESPACES);
const policyHashes = new WeakMap<ValidationPolicy, string>();
/**
 * Each app object's verdict, for as long as the object lives: an informer's cache holds one object per
 * version of an app, and every controller asks about that same object (a restart's first pass asks
 * twice for each of thousands of apps, more than the content cache holds).
 */
const byObject = new WeakMap<ServerlessApp, { policy: ValidationPolicy; problems: SpecProblem[] }>();

/** The spec's problems under the policy; computed once per app object and once per content (spec, namespace, policy), not once per reconcile. */
export function validateApp(app: ServerlessApp, policy: ValidationPolicy): SpecProblem[] {
  let known = byObject.get(app);
  if (known?.policy !== policy) {
    known = { policy, problems: validateContent(app, policy) };
    byObject.set(app, known);
  }
  return known.problems.map((p) => ({ ...p }));
}

function validateContent(app: ServerlessApp, policy: ValidationPolicy): SpecProblem[] {
  // Its spec was never read (the cache kept it unparsed): its size is the whole verdict.
  if (app.specTooLarge) return [specTooLargeProblem(app.specTooLarge)];
  // The same bound for a spec read whole (kubectl sapp plan, a test): the verdict does not depend on who read it.
  // Not canonical JSON: the byte count does not depend on key order, and the content cache only misses when
  // the same spec comes with its keys in another order (sorting every spec's keys cost more than it saved).
  const spec = JSON.stringify(app.spec);
  const bytes = servedJsonBytes(spec);
  if (bytes > MAX_APP_SPEC_BYTES) return [specTooLargeProblem({ bytes, limit: MAX_APP_SPEC_BYTES })];
  let policyHash = policyHashes.get(policy);
  if (policyHash === undefined) {
    policyHash = sha256(canonicalJson(policy));
    policyHashes.set(policy, policyHash);
  }
  // Cached within the app's namespace, which the verdict depends on too ({namespace} in host suffixes and storage URI prefixes).
  const key = sha256(`${policyHash}\u0000${spec}`);
  let problems = validated.get(app.metadata.namespace, key);
  if (!problems) {
    problems = checkApp(app, policy);
    validated.set(app.metadata.namespace, key, problems);
  }
  return problems;
}

/** A spec past the operator's MAX_APP_SPEC_BYTES. */
export function specTooLargeProblem(t: { bytes: number; limit: number }): SpecProblem {
  return { reason: 'InvalidSpec', field: 'spec', message: `the spec is ${t.bytes} bytes of JSON, more than the ${t.limit} the operator reads (a bound that holds its memory per app); move large values into a ConfigMap or Secret and reference them (envFrom, volumes)` };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function checkApp(app: ServerlessApp, policy: ValidationPolicy): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const add = (reason: ProblemReason, field: string, message: string) => problems.push({ reason, field, message });
  const { spec } = app;
  const { namespace } = app.metadata;
  // The CRD's CEL rule, checked again because the predictor renderer needs it: a spec that never passed
  // admission (stored before the rule, or read from a file) must be refused, not crash the planner.
  if (spec.model && !servesLlm(spec) && !spec.model.format) add('InvalidSpec', 'spec.model.format', `format is required (unless serving is "${LLM}")`);
  const windows = spec.scaling?.windows ?? [];
  for (const p of validateWindows(windows, namespace)) {
    const index = windows.findIndex((w) => w.name === p.window);
    add('InvalidSchedule', `spec.scaling.windows[${index}].${p.field}`, `window "${p.window}": ${p.message}`);
  }
  const maxScale = spec.scaling?.maxScale;
  windows.forEach((w, i) => {
    if (maxScale !== undefined && w.minScale > maxScale) {
      add('InvalidSpec', `spec.scaling.windows[${i}].minScale`, `window "${w.name}": minScale (${w.minScale}) exceeds scaling.maxScale (${maxScale}); raise maxScale or lower the window's minScale`);
    }
  });
  // Sized from the text first: a regex over the budget is refused without being compiled.
  let budget = MAX_REGEX_PROGRAM_SIZE;
  (spec.rollout?.match ?? []).forEach((m, i) => {
    if (m.regex === undefined) return;
    const field = `spec.rollout.match[${i}].regex`;
    const size = re2ProgramSizeBound(m.regex);
    if (size > budget) {
      add('InvalidSpec', field, `regular expression too large: it compiles to about ${size} RE2 instructions, and the app's header regexes may have ${MAX_REGEX_PROGRAM_SIZE} in all (${MAX_REGEX_PROGRAM_SIZE - budget} used by the ones before it); a counted repetition such as {1000} copies its operand that many times (use + or * or a smaller count), a Unicode class such as \\pL costs ${UNICODE_CLASS_COST}, and under (?i) a class range costs one per ${FOLD_POINTS_PER_INSTRUCTION} code points it spans`);
      return;
    }
    budget -= size;
    const why = re2Problem(m.regex, namespace);
    if (why) add('InvalidSpec', field, `invalid RE2 regular expression ${JSON.stringify(m.regex)} (Envoy uses RE2): ${why}`);
  });
  const steps = spec.rollout?.steps ?? [];
  if (steps.some((s, i) => i > 0 && s <= steps[i - 1]!)) {
    add('InvalidSpec', 'spec.rollout.steps', `steps must increase strictly (e.g. [10, 25, 50]); got [${steps.join(', ')}]`);
  }
  const analysis = spec.rollout?.analysis;
  if (analysis) {
    const target = analysisTarget(analysis, policy.analysis ?? DEFAULT_ANALYSIS_POLICY);
    if (!('url' in target)) add(target.reason, target.field, target.message);
  }
  for (const name of Object.keys(spec.prewarm?.warmup?.headers ?? {})) {
    const why = forbiddenHeader(name);
    if (why) add('InvalidSpec', `spec.prewarm.warmup.headers[${JSON.stringify(name)}]`, why);
  }
  for (const [i, g] of (spec.ingress?.gateways ?? []).entries()) {
    if (!gatewayAllowed(g, namespace, policy.allowedGateways)) {
      const resolved = resolveGateway(g, namespace);
      add('GatewayNotAllowed', `spec.ingress.gateways[${i}]`,
        `gateway ${JSON.stringify(g)}${resolved !== g ? ` (which Istio reads as ${JSON.stringify(resolved)})` : ''} is not allowed for namespace ${namespace}; allowed: ${policy.allowedGateways.join(', ') || '(none: only the mesh)'}`);
    }
  }
  for (const [i, h] of (spec.ingress?.hosts ?? []).entries()) {
    const why = hostProblem(h, namespace, policy);
    if (why) add('HostNotAllowed', `spec.ingress.hosts[${i}]`, why);
  }
  for (const p of durationProblems(spec)) if (!problems.some((q) => q.field === p.field)) problems.push(p);
  problems.push(...modelProblems(app, policy));
  const sa = serviceAccountProblem(app, policy.allowedServiceAccounts ?? []);
  if (sa) problems.push(sa);
  problems.push(...podMetadataProblems(app, policy.allowedPodMetadataKeys ?? DEFAULT_ALLOWED_POD_METADATA_KEYS));
  problems.push(...schedulingProblems(app, {
    allowedTolerationKeys: policy.allowedTolerationKeys ?? DEFAULT_ALLOWED_TOLERATION_KEYS,
    allowCrossNamespacePodAffinity: policy.allowCrossNamespacePodAffinity ?? false,
    allowNodePinning: policy.allowNodePinning ?? false,
  }));
  problems.push(...secretReferenceProblems(app, policy.allowSecretReferences ?? false));
  return problems;
}

/**
 * Durations the CRD's pattern admits but that are no time the operator can count
 * (e.g. "99999999999999999999h", past 2^53 ms): refused here, naming the field,
 * instead of throwing in every reconcile. The fields are the spec schema's own
 * duration fields (those with DURATION_PATTERN).
 */
export function durationProblems(spec: unknown): SpecProblem[] {
  const out: SpecProblem[] = [];
  const visit = (tree: DurationTree, value: unknown, field: string): void => {
    if (value === undefined || value === null) return;
    if (tree.duration && typeof value === 'string') {
      try {
        parseDuration(value);
      } catch (e) {
        out.push({ reason: 'InvalidSpec', field, message: (e as Error).message });
      }
      return;
    }
    if (tree.items && Array.isArray(value)) value.forEach((v, i) => visit(tree.items!, v, `${field}[${i}]`));
    if (tree.properties && typeof value === 'object') for (const [k, t] of tree.properties) visit(t, (value as Record<string, unknown>)[k], `${field}.${k}`);
  };
  visit(durationTree(), spec, 'spec');
  return out;
}

/** The parts of the spec's schema that lead to a duration field: what durationProblems walks (the rest of a spec is never visited). */
interface DurationTree { duration?: true; items?: DurationTree; properties?: Array<[string, DurationTree]> }

let durations: DurationTree | undefined;
function durationTree(): DurationTree {
  const prune = (schema: JSONSchema): DurationTree | undefined => {
    if (schema.pattern === DURATION_PATTERN) return { duration: true };
    const items = schema.type === 'array' && schema.items ? prune(schema.items as JSONSchema) : undefined;
    const properties = Object.entries((schema.properties ?? {}) as Record<string, JSONSchema>)
      .flatMap(([k, s]) => { const t = prune(s); return t ? [[k, t] as [string, DurationTree]] : []; });
    if (!items && properties.length === 0) return undefined;
    return { ...(items ? { items } : {}), ...(properties.length ? { properties } : {}) };
  };
  return (durations ??= prune(specSchema.openapi) ?? {});
}

/** A serviceAccountName outside the platform's list; "default" is what the pods would run as anyway. */
export function serviceAccountProblem(app: ServerlessApp, allowed: string[]): SpecProblem | undefined {
  const kind = app.spec.container ? 'container' : 'model';
  const name = app.spec[kind]?.serviceAccountName;
  if (name === undefined || name === 'default' || allowed.includes('*') || allowed.includes(name)) return undefined;
  return {
    reason: 'ServiceAccountNotAllowed', field: `spec.${kind}.serviceAccountName`,
    message: `serviceAccountName ${JSON.stringify(name)} is not allowed on this platform; allowed: ${allowed.join(', ') || '(none: pods run as the namespace\'s default service account)'}`,
  };
}

/** The platform's limits on a model: its size (which a cache reserves on every node) and where it may be loaded from. */
export function modelProblems(app: ServerlessApp, policy: Pick<ValidationPolicy, 'maxModelSizeBytes' | 'allowedStorageUriPrefixes'>): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const model = app.spec.model;
  if (!model) return problems;
  const { namespace } = app.metadata;
  if (model.size !== undefined) {
    const max = policy.maxModelSizeBytes ?? parseQuantity(DEFAULT_MAX_MODEL_SIZE);
    // The CRD's quantity pattern (the one Kubernetes tools generate) admits fractional exponents ("1e.5")
    // that Kubernetes itself does not read as a quantity.
    let size: number | undefined;
    try {
      size = parseQuantity(model.size);
    } catch (e) {
      if (!(e instanceof QuantityError)) throw e;
      problems.push({ reason: 'InvalidSpec', field: 'spec.model.size', message: `${e.message}; the exponent must be a whole number` });
    }
    if (size !== undefined && !(size > 0)) {
      problems.push({ reason: 'InvalidSpec', field: 'spec.model.size', message: `model.size ${model.size} must be more than zero, e.g. "12Gi"` });
    } else if (size !== undefined && size > max) {
      problems.push({ reason: 'ModelSizeNotAllowed', field: 'spec.model.size', message: `model.size ${model.size} exceeds the platform's limit of ${formatBytes(max)} (each cache reserves it on every node)` });
    }
  }
  const prefixes = policy.allowedStorageUriPrefixes ?? [];
  if (prefixes.length > 0 && hasDotSegment(model.storageUri)) {
    problems.push({ reason: 'StorageUriNotAllowed', field: 'spec.model.storageUri', message: `storageUri ${model.storageUri} has a "." or ".." path segment (plain or %2e): under allowed prefixes a path must name its objects directly` });
  } else if (!storageUriAllowed(model.storageUri, namespace, prefixes)) {
    problems.push({ reason: 'StorageUriNotAllowed', field: 'spec.model.storageUri', message: `storageUri must lie under one of: ${prefixes.map((p) => p.replaceAll(NAMESPACE, namespace)).join(', ')}` });
  }
  return problems;
}
