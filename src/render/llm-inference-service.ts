// LLM app -> one KServe LLMInferenceService (serving.kserve.io/v1alpha2) per
// live version, all in one routing group named after the app. Pure. What KServe
// does with them was read in the pinned v0.20.0 source and is checked on the
// rig (test/integration/llmisvc-upstream.test.ts; docs/design/llmisvc-findings.md):
// every member writes its own HTTPRoute `<member>-kserve-route` whose shared
// rules carry one weighted backend per routable member (router_group.go), a
// member is routable once Ready with ready replicas, weights are proportional
// (not percentages), and `serving.kserve.io/stop: "true"` deletes a member's
// pods and its own route while it stays in its peers' routes at weight 0. The
// operator owns the weights; KServe owns the routes, pools and workloads.

import { createHash } from 'node:crypto';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { apiVersionOf, Kinds, type ApiVersion } from '../util/kinds.ts';
import { APP_LABEL, childMetadata, VERSION_LABEL } from './metadata.ts';
import { podAnnotations, podLabels, renderPodSpecFields, renderVolumeMounts } from './pod-template.ts';

/** KServe's stop annotation (pkg/constants StopAnnotationKey, compared case-insensitively to "true"). */
export const STOP_ANNOTATION = 'serving.kserve.io/stop';
/** KServe's group label (pkg/constants LLMRoutingGroupLabelKey), by which it finds a group's members. */
export const ROUTING_GROUP_LABEL = 'serving.kserve.io/routing-group';
/** When the operator first stopped a replaced version: its retention (rollout.retainPrevious) counts from it. */
export const RETIRED_AT_ANNOTATION = 'serverlessapp.io/retired-at';
/** The labels KServe selects an LLM's pods by (pkg/controller/v1alpha2/llmisvc/workload.go GetWorkloadLabelSelector). */
const KSERVE_SELECTOR_KEYS = ['app.kubernetes.io/name', 'app.kubernetes.io/part-of', 'app.kubernetes.io/component'];
/** vLLM's port on KServe's workload Service (config-llm-template.yaml). */
export const LLM_PORT = 8000;
/** The container of KServe's LLM template that runs vLLM (config/llmisvcconfig/config-llm-template.yaml). */
const MAIN_CONTAINER = 'main';

export interface LlmInferenceService {
  apiVersion: ApiVersion<typeof Kinds.LLMInferenceService>;
  kind: typeof Kinds.LLMInferenceService.kind;
  metadata: ReturnType<typeof childMetadata> & { annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** One version's member of the app's group, as the rollout wants it now. */
export interface LlmMember {
  version: string;
  /** Its share of the group's traffic, in percent (KServe reads it as a proportional weight). */
  weight: number;
  replicas: number;
  /** Stopped: KServe removes its pods and its own route; it keeps its place in the group at weight 0. */
  stopped: boolean;
  /** RFC 3339: when the operator first stopped it as replaced (absent while it serves or may serve). */
  retiredAt?: string;
}

/** The member of `version`: `<app>-<version>` (at most 50 + 1 + 10 characters, a DNS label). */
export function memberName(app: string, version: string): string {
  return `${app}-${version}`;
}

/**
 * The address a version answers on by itself: its workload Service (`<member>-kserve-workload-svc`, named
 * by knative.dev/pkg kmeta.ChildName as KServe names it, workload.go), port 8000 (plain HTTP unless the
 * platform turned on KServe's enableLLMInferenceServiceTLS).
 */
export function memberService(member: string): string {
  return childName(member, '-kserve-workload-svc');
}

/**
 * What one version runs: its model, pod template and pod metadata. The spec's version's comes from the app
 * (versionWorkload); any other version's from its own live member (liveWorkload), since the app's spec now
 * describes another model: the operator changes only the weight, replicas, stop and route of those.
 */
export interface VersionWorkload {
  model: { uri: string; name: string };
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  template: Record<string, unknown>;
}

/** The spec's version, from the app's spec.model. */
export function versionWorkload(app: ServerlessApp, version: string): VersionWorkload {
  const model = app.spec.model;
  if (!model) throw new Error('versionWorkload needs a model app');
  // KServe copies spec.labels over its pod template's, whose app.kubernetes.io/{name,part-of,component} are its
  // Deployment's selector (workload.go GetWorkloadLabelSelector): the pods carry our own keys only.
  const labels = Object.fromEntries(Object.entries(podLabels(model, { [APP_LABEL]: app.metadata.name, [VERSION_LABEL]: version }))
    .filter(([k]) => !KSERVE_SELECTOR_KEYS.includes(k)));
  const annotations = podAnnotations(model, {});
  return {
    // One served name for every member: KServe routes a group only over members serving the same names (router_group.go).
    model: { uri: model.storageUri, name: model.servedModelName ?? app.metadata.name },
    // WorkloadSpec labels and annotations go on the pods KServe makes.
    labels, ...(Object.keys(annotations).length ? { annotations } : {}),
    template: {
      ...renderPodSpecFields(model),
      containers: [{
        name: MAIN_CONTAINER,
        ...(model.env ? { env: model.env } : {}),
        ...(model.resources ? { resources: model.resources } : {}),
        ...renderVolumeMounts(model),
      }],
    },
  };
}

/** Another version's, as its live member holds it (what the operator applied when it was the spec's); undefined if it holds none. */
export function liveWorkload(live: { spec?: unknown }): VersionWorkload | undefined {
  const spec = live.spec as Partial<VersionWorkload> | undefined;
  if (!spec?.model?.uri || !spec.template) return undefined;
  return { model: { uri: spec.model.uri, name: spec.model.name ?? '' }, labels: spec.labels ?? {}, ...(spec.annotations ? { annotations: spec.annotations } : {}), template: spec.template };
}

export function renderLlmMember(app: ServerlessApp, member: LlmMember, workload: VersionWorkload = versionWorkload(app, member.version)): LlmInferenceService {
  const name = memberName(app.metadata.name, member.version);
  // The routing-group label is what KServe's defaulter sets from router.route.group
  // (llm_inference_service_defaults.go): rendered here, so a default is never a field we drop on the next apply.
  const own = { ...childMetadata(app, name), labels: { ...childMetadata(app).labels, [VERSION_LABEL]: member.version, [ROUTING_GROUP_LABEL]: app.metadata.name } };
  const annotations = {
    ...(member.stopped ? { [STOP_ANNOTATION]: 'true' } : {}),
    ...(member.retiredAt ? { [RETIRED_AT_ANNOTATION]: member.retiredAt } : {}),
  };
  const ingress = app.spec.ingress;
  return {
    apiVersion: apiVersionOf(Kinds.LLMInferenceService),
    kind: Kinds.LLMInferenceService.kind,
    metadata: { ...own, ...(Object.keys(annotations).length ? { annotations } : {}) },
    spec: {
      model: workload.model,
      replicas: member.replicas,
      labels: workload.labels,
      ...(workload.annotations ? { annotations: workload.annotations } : {}),
      template: workload.template,
      router: {
        route: { group: app.metadata.name, weight: member.weight, ...(ingress ? { http: { spec: hostRoute(app, name, ingress.hosts) } } : {}) },
        // The app's gateways (namespace/name, allowed by the platform), or KServe's own (inferenceservice-config's
        // kserveIngressGateway) with its router-route preset: path-based, /publishers/<namespace>/models/<name>/v1/....
        gateway: ingress?.gateways?.length
          ? { refs: ingress.gateways.map((g) => { const [namespace, gateway] = g.split('/'); return { name: gateway!, namespace: namespace! }; }) }
          : {},
      },
    },
  };
}

/**
 * The route on the app's hosts. An inline spec replaces KServe's preset (config_merge.go; the CRD's default rule
 * would stand in for the preset's), so its rules are ours: `default`, everything on the host to this member's own
 * backend, which KServe rewrites into one weighted backend per routable member of the group
 * (router_group_routing.go: a rule whose backend is the member's workload Service); and `version`, the member's
 * own path /<namespace>/<member>/..., which KServe leaves alone, so each version answers by itself. No timeouts:
 * completions stream (as KServe's preset). Its parents are the app's gateways (config_merge.go sets them from
 * gateway.refs).
 */
function hostRoute(app: ServerlessApp, member: string, hosts: string[]) {
  // With the Gateway API schema's defaults (group "", weight 1) written out: a default the API server adds is never a field we drop.
  const backendRefs = [{ group: '', kind: 'Service', name: memberService(member), port: LLM_PORT, weight: 1 }];
  const timeouts = { request: '0s', backendRequest: '0s' };
  return {
    hostnames: hosts,
    rules: [
      {
        name: 'version', backendRefs, timeouts,
        matches: [{ path: { type: 'PathPrefix', value: `/${app.metadata.namespace}/${member}` } }],
        filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } }],
      },
      { name: 'default', backendRefs, timeouts, matches: [{ path: { type: 'PathPrefix', value: '/' } }] },
    ],
  };
}

/**
 * knative.dev/pkg kmeta.ChildName (kmeta/names.go) for suffixes shorter than 31 characters: the parent and
 * suffix when they fit in 63 characters, else the parent cut to make room for its MD5 in hex, then the suffix.
 */
export function childName(parent: string, suffix: string): string {
  const LONGEST = 63, HEAD = LONGEST - 32;
  if (suffix.length >= HEAD) throw new Error(`childName handles suffixes shorter than ${HEAD} characters`);
  if (parent.length <= LONGEST - suffix.length) return parent + suffix;
  return `${parent.slice(0, HEAD - suffix.length)}${md5Hex(parent)}${suffix}`;
}

function md5Hex(s: string): string {
  return createHash('md5').update(s).digest('hex');
}
