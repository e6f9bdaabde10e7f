// What `kubectl sapp plan` reads, and the dry run of the edit (the children's
// dry runs are in plan-dry-run.ts). Every read is targeted (the app by name,
// its Knative Service, InferenceService and VirtualServices by name, its
// revisions by its label), so a plan costs the same few requests with 10 apps
// in the cluster or 10,000. Nothing is written: the edit goes to the API
// server with dryRun=All, so defaults and admission (CRD schema and CEL,
// admission policies, Knative's and KServe's webhooks) answer now.
//
// Lists ask for resourceVersion=0: the API server answers from its watch
// cache, without a quorum read of etcd. A list a moment old is what the
// operator plans from too (its informers' caches), so the plan stays the
// operator's.
//
// Host claims and the namespace's budgets (plan-namespace.ts): the HostClaims
// named after the app's hosts and the wildcards above them, read by name (at
// most MAX_CLAIM_READS of them: past it, one list instead); all HostClaims
// (cluster-scoped, at most --max-host-claims-per-namespace per
// namespace) only when a rule needs what no name finds: the namespace's count
// (the app adds a claim) or what a wildcard host covers. The namespace's apps
// (one namespace-scoped list) only when the app names hosts or caches its
// model. Never a list of all apps. What this user may not read is noted.
//
// The platform's policy: the one the running operator published
// (runtime/policy-publication.ts: a ConfigMap in the --operator namespace,
// live while its Lease is held), so the refusals are the running operator's,
// however it was started. When no operator runs or none published, the
// operator's Deployment (its container's plain env values and args, parsed by
// the operator's own config.ts), and the plan notes it; a user who may read
// neither gets the operator's defaults, and the plan says so.

import { parse, type Tags } from 'yaml';
import { hostClaimName, type HostClaim } from '../api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { splitKey } from '../util/object-key.ts';
import { hostClaims } from '../api/v1alpha1/validation.ts';
import { coveringHosts } from '../planner/host-claims.ts';
import { parseConfig, validationPolicy } from '../config.ts';
import { POLICY_CONFIGMAP, readPolicyConfigMap } from '../runtime/policy-publication.ts';
import { detectCacheScope, detectInPlaceScaling } from '../data-plane-settings.ts';
import { appRoutes, everyRouteRef, routerFor, type RouteRef } from '../planner/route.ts';
import { revisionsSelector, type Revision } from '../planner/revisions.ts';
import type { WorkloadObject } from '../planner/workloads.ts';
import { ApiError, isNotFound, isRejection, type KubeClient } from '../runtime/client.ts';
import { apiVersionOf, Kinds, type ResourceKind } from '../util/kinds.ts';
import { isManaged, MANAGED_SELECTOR } from '../util/managed-by.ts';
import { CommandError } from './commands.ts';
import type { PlanInput, PlatformSettings } from './plan-document.ts';
import { hostRivals, type NamespaceView } from './plan-namespace.ts';

/**
 * YAML as kubectl reads it (sigs.k8s.io/yaml on go-yaml v2: YAML 1.1 scalars, so `yes`, `on` and `y` are
 * booleans and `0777` is octal), without what go-yaml v2 does not resolve (base-60 numbers, timestamps):
 * a file means to the plan what it means to `kubectl apply`.
 */
const KUBECTL_YAML = {
  version: '1.1',
  customTags: (tags: Tags) => tags.filter((t) => !(typeof t === 'object' && 'format' in t && t.format === 'TIME') && !(typeof t === 'object' && t.tag === 'tag:yaml.org,2002:timestamp')),
} as const;

/** Most HostClaims a plan reads by name (at once); past it, one list of them all. */
const MAX_CLAIM_READS = 16;

const DEPLOYMENT: ResourceKind = { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true };

interface Deployment {
  spec?: { template?: { spec?: { containers?: Array<{ name: string; args?: string[]; env?: Array<{ name: string; value?: string }> }> } } };
}

/**
 * The edited app from `-f` (text already read): one ServerlessApp, in the namespace it names, else
 * `namespace` (the context's or -n), as `kubectl apply -f` applies it. `enforce` (-n given): a file
 * naming another namespace is refused with kubectl's own message (cli-runtime's RequireNamespace).
 */
export function parseAppFile(text: string, file: string, namespace: string, enforce: boolean): ServerlessApp {
  let doc: unknown;
  try {
    doc = parse(text, KUBECTL_YAML);
  } catch (err) {
    throw new CommandError(`${file}: not YAML or JSON: ${(err as Error).message}`);
  }
  const app = doc as Partial<ServerlessApp> | null;
  if (!app || app.kind !== Kinds.ServerlessApp.kind || app.apiVersion !== apiVersionOf(Kinds.ServerlessApp)) {
    throw new CommandError(`${file}: expected one ServerlessApp (apiVersion serverlessapp.io/v1alpha1, kind ServerlessApp), got ${app?.apiVersion ?? '?'} ${app?.kind ?? '?'}`);
  }
  if (!app.metadata?.name) throw new CommandError(`${file}: metadata.name is required`);
  const own = app.metadata.namespace;
  if (own && enforce && own !== namespace) {
    throw new CommandError(`the namespace from the provided object "${own}" does not match the namespace "${namespace}". You must pass '--namespace=${own}' to perform this operation.`);
  }
  return { ...app, metadata: { ...app.metadata, namespace: own || namespace } } as ServerlessApp;
}

/** A plan's reads, in flight. */
export interface PlanReads {
  /**
   * Settles with the stored app's read, the first answer the plan waits for.
   * By then the reads have gone out (their TLS handshakes need this thread)
   * while the dry run and the namespace's list are still with the server:
   * the time to do other work, such as loading the planner.
   */
  stored: Promise<unknown>;
  /** Everything the plan needs. */
  input: Promise<PlanInput>;
}

/** Starts every read a plan needs, with targeted requests. `file`: the edit, or undefined for "what happens next". */
export function readPlanInput(client: KubeClient, namespace: string, name: string, file: ServerlessApp | undefined, operator: string, warn: (message: string) => void): PlanReads {
  const now = new Date();
  const notes: string[] = [];
  // A plan's wall time is its round trips: every read that needs only the name (or the file) starts at once,
  // the longest first: the namespace's list (the file's hosts and model are the stored app's: the dry run adds
  // defaults, neither of these), then the stored app, on which the app's dry run waits.
  const fileReads = file ? started(namespaceReads(client, file, notes)) : undefined;
  const stored = started(client.get<ServerlessApp>(Kinds.ServerlessApp, namespace, name));
  return { stored, input: assemble(client, { now, namespace, name, file, operator, warn, notes, fileReads, stored }) };
}

async function assemble(client: KubeClient, r: {
  now: Date; namespace: string; name: string; file: ServerlessApp | undefined; operator: string; warn: (message: string) => void;
  notes: string[]; fileReads: Promise<NamespaceView> | undefined; stored: Promise<ServerlessApp | undefined>;
}): Promise<PlanInput> {
  const { now, namespace, name, file, notes } = r;
  const optional = async <T>(read: Promise<T>, none: T) => read.catch((err: unknown) => { if (isNotFound(err)) return none; throw err; });
  // The router in use is known only once the platform's settings are read: what either router may find is read, and it picks (routesOf).
  const routeReads = everyRouteRef({ metadata: { name, namespace } });
  const children = started(Promise.all([
    client.get<WorkloadObject>(Kinds.KnativeService, namespace, name),
    optional(client.get<WorkloadObject>(Kinds.InferenceService, namespace, name), undefined),
    Promise.all(routeReads.map(([kind, objectName]) => optional(client.get<WorkloadObject>(kind, namespace, objectName), undefined))),
    optional(client.list<Revision>(Kinds.KnativeRevision, namespace, { labelSelector: revisionsSelector(name), resourceVersion: '0' }).then((l) => l.items), [] as Revision[]),
    // An LLM app's versions (by the same label); none where KServe's LLMInferenceService is not installed.
    optional(client.list<WorkloadObject>(Kinds.LLMInferenceService, namespace, { labelSelector: revisionsSelector(name), resourceVersion: '0' }).then((l) => l.items), [] as WorkloadObject[]),
  ]));
  // The app's dry run waits for the stored app only, not for the platform's settings (two round trips).
  const settingsRead = started(platformSettings(client, r.operator, now, r.warn));
  const live = await r.stored;
  if (!file && !live) throw new CommandError(`serverlessapp "${name}" not found in namespace "${namespace}"`);
  let edited = live!;
  let appRefused: string | undefined;
  if (file) {
    try {
      edited = await dryRunApp(client, file, live);
    } catch (err) {
      // Refused (isDryRunRefusal), or a namespace that does not exist (404).
      if (!(err instanceof ApiError) || !(err.code === 404 || isDryRunRefusal(err))) throw err;
      appRefused = err.message;
      edited = { ...file, ...(live?.status ? { status: live.status } : {}) };
    }
  }
  const [[knative, kserve, routeObjects, revisions, llmMembers], view, settings] = await Promise.all([children, r.fileReads ?? namespaceReads(client, edited, notes), settingsRead]);
  return {
    now, source: file ? 'file' : 'live', ...(live ? { live } : {}), edited, ...(appRefused ? { appRefused } : {}),
    ...(knative ? { knative } : {}), ...(kserve ? { kserve } : {}),
    routes: routesOf(settings, edited, new Map(routeReads.map(([kind, objectName], i) => [routeKey(kind, objectName), routeObjects[i]]))),
    revisions, llmMembers, settings, namespace: view, notes,
  };
}

/** A read started now and awaited later: its failure is reported where it is awaited, not as an unhandled rejection meanwhile. */
function started<T>(read: Promise<T>): Promise<T> {
  read.catch(() => undefined);
  return read;
}

/** The HostClaims and the namespace's apps the operator's host and budget rules read for `app`. */
async function namespaceReads(client: KubeClient, app: ServerlessApp, notes: string[]): Promise<NamespaceView> {
  // The list first: of all a plan's reads it takes the server longest.
  const [apps, claims] = await Promise.all([readNamespaceApps(client, app, notes), readClaims(client, app, notes)]);
  const routesNote = `routes: this user may not read the routes of namespace ${app.metadata.namespace}, so which of the apps naming the same host serves it is not known: the first by creation is taken to hold it (the operator keeps it with the app serving it)`;
  const routeNamed = apps ? await unlessForbidden(readRivalRoutes(client, app.metadata.namespace, hostRivals(app, apps)), notes, routesNote) : undefined;
  return { ...(claims ? { claims } : {}), ...(apps ? { apps } : {}), ...(routeNamed ? { routeNamed } : {}) };
}

/** Rivals whose routes are read one by one; past this, the namespace's routes of ours are listed (one request per kind). */
const MAX_RIVAL_ROUTE_READS = 8;

/**
 * The routes of ours of the apps naming one of the app's hosts, by kind and name, as the operator's
 * route caches hold them: within a namespace, the app serving a host keeps it (HostClaims earlierHolder).
 * Under either router (the router is known only once the platform's settings are read).
 */
async function readRivalRoutes(client: KubeClient, namespace: string, rivals: ServerlessApp[]): Promise<((...ref: RouteRef) => WorkloadObject | undefined) | undefined> {
  if (!rivals.length) return undefined;
  const none = (err: unknown): WorkloadObject[] => { if (isNotFound(err)) return []; throw err; };
  const refs = rivals.flatMap(everyRouteRef);
  const read = rivals.length <= MAX_RIVAL_ROUTE_READS
    ? await Promise.all(refs.map(([kind, name]) => client.get<WorkloadObject>(kind, namespace, name).then((r) => (r ? [r] : []), none)))
    : await Promise.all([...new Set(refs.map(([kind]) => kind))].map((kind) => client.list<WorkloadObject>(kind, namespace, { labelSelector: MANAGED_SELECTOR, resourceVersion: '0' }).then((l) => l.items, none)));
  const byKey = new Map(read.flat().filter(isManaged).map((r) => [`${r.kind}/${r.metadata.name}`, r]));
  return (kind, name) => byKey.get(`${kind.kind}/${name}`);
}

/** A read this user may not make (403): noted, and the rule checked without it. */
async function unlessForbidden<T>(read: Promise<T>, notes: string[], note: string): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof ApiError && err.code === 403) {
      notes.push(`${note} (${err.message})`);
      return undefined;
    }
    throw err;
  }
}

/** The HostClaims that bear on `app`'s hosts (see the head of this file); [] when it names none. */
async function readClaims(client: KubeClient, app: ServerlessApp, notes: string[]): Promise<HostClaim[] | undefined> {
  const hosts = hostClaims(app);
  if (!hosts.length) return [];
  const note = 'host claims: this user may not read HostClaims (cluster-scoped), so hosts held by other namespaces and the namespace\'s host-claim budget are not checked (the operator checks them: HostConflict, HostClaimQuotaExceeded)';
  const names = [...new Set(hosts.flatMap(coveringHosts).flatMap((h) => hostClaimName(h) ?? []))];
  const all = () => unlessForbidden(client.list<HostClaim>(Kinds.HostClaim, undefined, { resourceVersion: '0' }).then((l) => l.items, (err: unknown) => { if (isNotFound(err)) return []; throw err; }), notes, note);
  // Many names (deep hosts, each with every wildcard above it): one list costs the server less than a burst of reads.
  if (names.length > MAX_CLAIM_READS) return all();
  const named = await unlessForbidden(Promise.all(names.map((n) => client.get<HostClaim>(Kinds.HostClaim, undefined, n))), notes, note);
  if (!named) return undefined;
  const found = new Set(named.flatMap((c) => (c ? [c.metadata.name] : [])));
  const needAll = hosts.some((h) => h.startsWith('*.') || !found.has(hostClaimName(h) ?? ''));
  if (!needAll) return named.filter((c): c is HostClaim => !!c);
  return all();
}

/** The apps of `app`'s namespace, when its hosts or model cache are checked against theirs; [] when not. */
async function readNamespaceApps(client: KubeClient, app: ServerlessApp, notes: string[]): Promise<ServerlessApp[] | undefined> {
  // Whether the policy lets it cache its model, the budget's rule decides (plan-namespace.ts).
  if (!hostClaims(app).length && !(app.spec.model && app.spec.prewarm?.cacheModel === true)) return [];
  const note = `the namespace's apps: this user may not list ServerlessApps in namespace ${app.metadata.namespace}, so a host an earlier app routes and the model-cache budget are checked against this app alone`;
  return (await unlessForbidden(client.list<ServerlessApp>(Kinds.ServerlessApp, app.metadata.namespace, { resourceVersion: '0' }), notes, note))?.items;
}

/**
 * Whether a dry run of the plan was refused as the operator's write would be (runtime/client.ts
 * isRejection): a verdict on the edit. Not a 401: the user's own credentials failed, which says
 * nothing of the edit.
 */
export function isDryRunRefusal(err: unknown): err is ApiError {
  return isRejection(err) && err.code !== 401;
}

/**
 * The app as the API server would store it: a replace of the stored app by the
 * file (the file is the whole spec, as `kubectl apply` and a GitOps sync make
 * it), or a create; either with dryRun=All. Status is the stored one. With
 * strict field validation, as `kubectl apply` sends it (its default since
 * 1.27): a field the schema does not know (a typo) is refused, not dropped.
 */
async function dryRunApp(client: KubeClient, file: ServerlessApp, live: ServerlessApp | undefined): Promise<ServerlessApp> {
  const { status: _ignored, ...body } = file;
  if (!live) return client.create<ServerlessApp>(Kinds.ServerlessApp, body, { dryRun: true, fieldValidation: 'Strict' });
  const { uid, namespace, name } = live.metadata;
  let { resourceVersion } = live.metadata;
  // A custom resource takes no unconditional update, and the operator's status writes move the
  // resourceVersion between the read and the dry run: a conflict is retried with the current one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.update<ServerlessApp>(Kinds.ServerlessApp, { ...body, metadata: { ...body.metadata, ...(resourceVersion ? { resourceVersion } : {}), ...(uid ? { uid } : {}) } }, { dryRun: true, fieldValidation: 'Strict' });
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 409) || attempt >= 5) throw err;
      resourceVersion = (await client.get<ServerlessApp>(Kinds.ServerlessApp, namespace, name))?.metadata.resourceVersion;
    }
  }
}

/**
 * The settings the running operator enforces, as it published them (runtime/policy-publication.ts); when no
 * operator runs or none published, those of its Deployment, or its defaults, with the reason in `note`.
 */
async function platformSettings(client: KubeClient, operator: string, now: Date, warn: (message: string) => void): Promise<PlatformSettings> {
  const { namespace: ns } = splitKey(operator);
  // Read beside the publication, its warnings held: told only when it is the fallback.
  const deferred: string[] = [];
  const deployment = started(deploymentSettings(client, operator, (message) => { deferred.push(message); }));
  const published = await unlessForbidden(client.get<{ data?: Record<string, string> }>(Kinds.ConfigMap, ns, POLICY_CONFIGMAP), [], '');
  const policy = readPolicyConfigMap(published);
  const where = `configmap ${ns}/${POLICY_CONFIGMAP}`;
  let why: string;
  if (!published) why = `no operator published its policy (${where} not found or not readable)`;
  else if (!policy) why = `${where} holds no policy this plugin reads`;
  else {
    const running = policy.lease ? await leaseHolder(client, policy.lease, now) : undefined;
    const source = `the running operator's policy, published by ${policy.identity} at ${policy.publishedAt} (${where})`;
    if (!policy.lease) {
      return { ...policy.settings, source: `${source}; leader election is off, so whether it still runs is not checked` };
    }
    if (running) {
      return { ...policy.settings, source: `${source}; lease ${policy.lease} held by ${running}` };
    }
    why = `no operator runs: lease ${policy.lease} is not held (the policy ${policy.identity} published at ${policy.publishedAt} may be stale)`;
  }
  const fallback = await deployment;
  deferred.forEach(warn);
  const note = `policy: ${why}; judged by ${fallback.source} instead`;
  warn(note);
  return { ...fallback, note };
}

/** Who holds the Lease "namespace/name" now (held and not expired), or undefined. */
async function leaseHolder(client: KubeClient, lease: string, now: Date): Promise<string | undefined> {
  const { namespace, name } = splitKey(lease);
  const l = await unlessForbidden(client.get<{ spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number } }>(Kinds.Lease, namespace, name), [], '');
  const spec = l?.spec;
  if (!spec?.holderIdentity || !spec.renewTime) return undefined;
  return Date.parse(spec.renewTime) + (spec.leaseDurationSeconds ?? 15) * 1000 > now.getTime() ? spec.holderIdentity : undefined;
}

/** The operator's settings from its Deployment, or its defaults with the reason. */
async function deploymentSettings(client: KubeClient, operator: string, warn: (message: string) => void): Promise<PlatformSettings> {
  const { namespace: ns, name } = splitKey(operator);
  let source = `deployment ${operator}`;
  let args: string[] = [];
  let env: Record<string, string> = {};
  // Most installs leave both detections on auto: their CRD reads go out beside the Deployment's, not after it.
  const early = { inPlace: held((log) => detectInPlaceScaling(client, 'auto', log)), cache: held((log) => detectCacheScope(client, 'auto', log)) };
  try {
    const deployment = await client.get<Deployment>(DEPLOYMENT, ns, name);
    const containers = deployment?.spec?.template?.spec?.containers ?? [];
    const container = containers.find((c) => c.name === 'operator') ?? containers[0];
    if (!container) {
      source = `the operator's defaults: deployment ${operator} not found (--operator names it)`;
    } else {
      args = container.args ?? [];
      env = Object.fromEntries((container.env ?? []).flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : [])));
    }
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 403) throw err;
    source = `the operator's defaults: this user may not read deployment ${operator} (${err.message})`;
  }
  if (source.startsWith('the operator')) warn(`policy: ${source}; refusals by the platform's own policy may be missed or differ`);
  const config = parseConfig(args, env);
  const log = { warn };
  const [inPlaceBounds, cacheScope] = await Promise.all([
    config.knativeInPlaceScaling === 'auto' ? early.inPlace(warn) : detectInPlaceScaling(client, config.knativeInPlaceScaling, log),
    config.modelCacheScope === 'auto' ? early.cache(warn) : detectCacheScope(client, config.modelCacheScope, log),
  ]);
  return {
    source, policy: validationPolicy(config), localGateway: config.localGateway, router: config.router,
    inPlaceBounds, clusterLocal: config.knativeVisibility === 'cluster-local', cacheScope,
  };
}

/** A detection started before its setting is known: its warnings are told (and its failure thrown) only where it is used. */
function held<T>(detect: (log: { warn(message: string): void }) => Promise<T>): (warn: (message: string) => void) => Promise<T> {
  const warnings: string[] = [];
  const result = started(detect({ warn: (message) => { warnings.push(message); } }));
  return async (warn) => {
    try {
      return await result;
    } finally {
      warnings.forEach(warn);
    }
  };
}

/**
 * The routes as the operator's caches would hold them under the platform's router, from `read` (keyed by
 * routeKey): ours only, by label, as its informers list them (KServe's own VirtualService carries the
 * app's name too).
 */
function routesOf(settings: PlatformSettings, app: ServerlessApp, read: Map<string, WorkloadObject | undefined>): PlanInput['routes'] {
  const ours = (obj: WorkloadObject | undefined) => (obj && isManaged(obj) ? obj : undefined);
  return appRoutes(routerFor(settings.router, settings.localGateway), app, (kind, name) => ours(read.get(routeKey(kind, name))));
}

function routeKey(kind: ResourceKind, name: string): string {
  return `${kind.kind}/${name}`;
}
