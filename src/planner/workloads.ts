// The two kinds of workload an app can have, behind one small interface: a
// Knative Service (container apps) or a KServe InferenceService (model apps).
// Each knows its kind, the revision a version runs on, how to render itself
// from the rollout plan, and how to read readiness and traffic back.

import type { ServerlessApp, TrafficStatus } from '../api/v1alpha1/serverlessapp.ts';
import { boundsAnnotations, INITIAL_SCALE, templateAutoscaling } from '../render/autoscaling.ts';
import { renderInferenceService } from '../render/inference-service.ts';
import { knativeTemplate, renderKnativeService } from '../render/knative-service.ts';
import { CANDIDATE_TAG, KSERVE_LATEST_TAG, KSERVE_PREVIOUS_TAG, STABLE_TAG, kserveRouter, knativeRouter, tagHost, trafficInForce, type KnativeTrafficTarget, type TrafficPlan } from '../render/traffic.ts';
import type { ObservedRevision, RolloutPlan } from '../rollout/canary.ts';
import { Kinds, type ResourceKind } from '../util/kinds.ts';
import { latestBounds, revisionBounds } from '../scaling/revision-bounds.ts';
import type { ScaleBounds } from '../scaling/windows.ts';
import { newestFirst, observeRevision, type KnativeCondition, type Revision } from './revisions.ts';
import { clusterLocalHost } from '../util/cluster-local-host.ts';
import { findCondition } from '../util/conditions.ts';
import type { WriteRuleName } from './write-rules.ts';

export interface WorkloadObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; creationTimestamp?: string; labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: Array<{ uid: string; kind: string; controller?: boolean }>; generation?: number };
  spec?: unknown;
  status?: {
    observedGeneration?: number;
    conditions?: KnativeCondition[];
    url?: string;
    traffic?: KnativeTrafficTarget[];
    components?: { predictor?: { traffic?: KnativeTrafficTarget[]; url?: string } };
  };
}

export interface WorkloadSummary {
  /** Ready as the data plane reports it; undefined while it has not said. */
  ready?: boolean;
  /** The data plane's own Ready as it says it: Unknown while it works, False when it reports a problem. */
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  url?: string;
  traffic: TrafficStatus[];
  /**
   * The workload answers on the cluster-local host the VirtualService points at. Not the same as
   * `ready`: an InferenceService's Ready also waits for KServe's own ingress (its VirtualService and
   * an ExternalName Service named after the app), which our route does not use. Nor is reported
   * traffic enough: a Knative Route reports its split before its ingress is programmed.
   */
  routeReady: boolean;
}

export interface RenderContext {
  app: ServerlessApp;
  version: string;
  plan: RolloutPlan;
  effective: ScaleBounds;
  prewarmReplicas: number;
  revisions: Revision[];
}

export interface RouteHosts {
  defaultHost: string;
  stableHost: string;
  candidateHost: string;
  /** The data plane's tags behind stableHost and candidateHost, as its traffic in force reports them. */
  stableTag: string;
  candidateTag: string;
}

export interface Workload {
  readonly kind: ResourceKind;
  /** How its objects must be written (write-rules.ts). */
  readonly write: WriteRuleName;
  /** Whether scale bounds are set on live Revisions (Knative >= 1.21) rather than in the workload. */
  readonly boundsOnRevisions: boolean;
  /** The Knative Service that runs the app's revisions of this kind (madeBy tells its revisions): ours, or KServe's predictor; none for LLM apps. */
  knativeServiceName(app: ServerlessApp): string;
  /** Whether `r` (a Revision, or an LLM app's member read as one) runs in this kind's workload of `app`. */
  runs(r: Revision, app: ServerlessApp): boolean;
  /** What the rollout reads of one of its revisions (readiness, replicas, why not ready). */
  observe(r: Revision): ObservedRevision;
  /** The revision the spec's version runs on: known in advance (Knative) or read back (KServe). */
  desiredRevision(app: ServerlessApp, version: string, effective: ScaleBounds, revisions: Revision[]): string | undefined;
  render(ctx: RenderContext): WorkloadObject;
  /** Cluster-local hosts of the app and of its stable and candidate versions (each one revision's, under these tags), for the VirtualService. */
  hosts(app: ServerlessApp): RouteHosts;
  summarize(live: WorkloadObject | undefined, versionOf: (revision: string) => string | undefined): WorkloadSummary;
  /**
   * A revision of this kind's Knative Service that `live` did not make: an earlier workload of the
   * same name left it (deleted, not yet garbage-collected). Switching back to a kind reuses names
   * (a container version's BYO name, KServe's `<app>-predictor-00001`), so such a revision can carry
   * the very name and version the new workload is about to create; it must not count as that one.
   */
  isStale(r: Revision, app: ServerlessApp, live: WorkloadObject | undefined): boolean;
}

/** Knative labels each Revision with its Knative Service's name and UID. */
const KNATIVE_SERVICE_LABEL = 'serving.knative.dev/service';
const SERVICE_UID_LABEL = 'serving.knative.dev/serviceUID';

/** The Knative Service KServe makes for an InferenceService's predictor (and names its revisions after). */
function predictorName(app: ServerlessApp): string {
  return `${app.metadata.name}-predictor`;
}

/** Knative labels each revision with the name of the Knative Service that made it. */
export function madeBy(r: Revision, service: string): boolean {
  return r.metadata.labels?.[KNATIVE_SERVICE_LABEL] === service;
}

/** `r` belongs to Knative Service `service`, but not to `live` (by UID when known, else created before it; Kubernetes times are whole seconds). */
function staleRevision(r: Revision, service: string, live: WorkloadObject | undefined, liveServiceUid: string | undefined): boolean {
  if (!madeBy(r, service)) return false;
  if (!live) return true;
  const uid = r.metadata.labels?.[SERVICE_UID_LABEL];
  if (liveServiceUid && uid) return uid !== liveServiceUid;
  const born = r.metadata.creationTimestamp, since = live.metadata.creationTimestamp;
  return !!born && !!since && Date.parse(born) < Date.parse(since);
}

/**
 * Knative's visibility label, which KServe passes on to its predictor's Knative Service
 * (constants.VisibilityLabel; kept off revision templates, so no new revision). Cluster-local:
 * Knative gives the app no route on its external domain, so tenants are reached only through
 * the VirtualService hosts the platform allows them.
 */
export const VISIBILITY_LABEL = 'networking.knative.dev/visibility';

function withVisibility(obj: WorkloadObject, clusterLocal: boolean): WorkloadObject {
  if (!clusterLocal) return obj;
  return { ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata.labels, [VISIBILITY_LABEL]: 'cluster-local' } } };
}

export function trafficPlan(plan: RolloutPlan, latest?: string): TrafficPlan {
  const c = plan.candidate;
  return {
    ...(plan.initial ? { initial: { version: plan.initial.version, ...(plan.initial.revision ? { revision: plan.initial.revision } : {}) } } : {}),
    ...(plan.stable ? { stable: plan.stable } : {}),
    // A ready candidate joins the traffic block at 0% even before it is warm: Knative keeps an
    // unrouted revision in "reserve" at zero replicas, whatever its min-scale, so it could not be
    // prewarmed otherwise. Its weight stays 0 until it is warm (the rollout plan decides that).
    ...(c && c.revision ? { candidate: { revision: c.revision, version: c.version, percent: c.percent, ready: c.ready } } : {}),
    ...(latest ? { latest } : {}),
  };
}

/** WorkloadReady's reason while the data plane has not reported on the workload at all. */
export const UNREPORTED = 'Pending';

function summarizeConditions(live: WorkloadObject | undefined, traffic: KnativeTrafficTarget[] | undefined, url: string | undefined, routeCondition: string, versionOf: (r: string) => string | undefined): WorkloadSummary {
  if (!live?.status?.conditions) return { status: 'Unknown', reason: UNREPORTED, message: `waiting for ${live?.kind ?? 'the workload'} to report status`, traffic: [], routeReady: false };
  const ready = findCondition(live.status.conditions, 'Ready');
  const routes = findCondition(live.status.conditions, 'RoutesReady') ?? findCondition(live.status.conditions, 'PredictorRouteReady');
  const notReady = live.status.conditions.find((c) => c.status !== 'True' && c.type !== 'Ready');
  return {
    ...(ready ? { ready: ready.status === 'True' } : {}),
    status: ready?.status === 'True' || ready?.status === 'False' ? ready.status : 'Unknown',
    reason: ready?.status === 'True' ? 'Ready' : (ready?.reason ?? notReady?.reason ?? 'Pending'),
    message: ready?.status === 'True' ? `${live.kind} is ready` : (ready?.message ?? notReady?.message ?? routes?.message ?? `${live.kind} is not ready`),
    ...(url ? { url } : {}),
    traffic: trafficInForce({ ...(traffic ? { traffic } : {}) }, versionOf),
    routeReady: findCondition(live.status.conditions, routeCondition)?.status === 'True',
  };
}

export function knativeWorkload(inPlaceBounds: boolean, clusterLocal = true): Workload {
  const template = (app: ServerlessApp, version: string, effective: ScaleBounds, plan?: RolloutPlan, prewarmReplicas = 0) => {
    const annotations = templateAutoscaling(app.spec.scaling);
    if (inPlaceBounds) {
      // Born with the bounds it should have now, so a new revision needs no patch of its own;
      // they are changed on the live Revision afterwards and do not name it.
      const name = knativeTemplate(app, version, annotations).revision;
      const born = plan ? revisionBounds(plan, effective, prewarmReplicas).get(name) : undefined;
      return knativeTemplate(app, version, annotations, boundsAnnotations(born ?? effective));
    }
    // Legacy Knative: bounds are baked into the revision, and the prewarm buffer rides on initial-scale.
    // prewarm.replicas only, not bufferReplicas (warmup alone asks for 1): the annotations name the revision,
    // so counting warmup would give every warmup-only app a new revision, never warmed, on upgrade; without
    // the annotation Knative starts the cluster's initial-scale (1 unless the platform changed it).
    const replicas = app.spec.prewarm?.replicas ?? 0;
    return knativeTemplate(app, version, {
      ...annotations, ...boundsAnnotations(effective),
      ...(replicas > 0 ? { [INITIAL_SCALE]: String(replicas) } : {}),
    });
  };
  // Ours is named after the app (render/metadata.ts childMetadata).
  const serviceName = (app: ServerlessApp) => app.metadata.name;
  return {
    kind: Kinds.KnativeService,
    write: 'named-template',
    boundsOnRevisions: inPlaceBounds,
    knativeServiceName: serviceName,
    runs: (r, app) => madeBy(r, serviceName(app)),
    observe: observeRevision,
    desiredRevision: (app, version, effective) => template(app, version, effective).revision,
    render: ({ app, version, plan, effective, prewarmReplicas, revisions }) => {
      const t = template(app, version, effective, plan, prewarmReplicas);
      const latest = newestFirst(revisions)[0]?.metadata.name;
      return withVisibility(renderKnativeService(app, version, t, knativeRouter.routes(trafficPlan(plan, latest)).traffic) as unknown as WorkloadObject, clusterLocal);
    },
    hosts: (app) => ({
      defaultHost: clusterLocalHost(serviceName(app), app.metadata.namespace),
      stableHost: tagHost(STABLE_TAG, serviceName(app), app.metadata.namespace),
      candidateHost: tagHost(CANDIDATE_TAG, serviceName(app), app.metadata.namespace),
      stableTag: STABLE_TAG, candidateTag: CANDIDATE_TAG,
    }),
    summarize: (live, versionOf) => summarizeConditions(live, live?.status?.traffic, live?.status?.url, 'Ready', versionOf),
    isStale: (r, app, live) => staleRevision(r, serviceName(app), live, live?.metadata.uid),
  };
}

/**
 * Model apps. minReplicas/maxReplicas carry the effective bounds (windows). A
 * change there makes KServe cut a new predictor revision, so what differs per
 * revision (a prewarm buffer, a rolled-back candidate at zero) is set on the
 * live Revisions in place where Knative allows it (>= 1.21): releasing a
 * buffer must not replace the warm revision with a cold one. Older Knative
 * gets it all through minReplicas.
 */
export function kserveWorkload(inPlaceBounds: boolean, clusterLocal = true): Workload {
  return {
    kind: Kinds.InferenceService,
    write: 'apply',
    boundsOnRevisions: inPlaceBounds,
    knativeServiceName: predictorName,
    runs: (r, app) => madeBy(r, predictorName(app)),
    observe: observeRevision,
    desiredRevision: (_app, version, _effective, revisions) =>
      newestFirst(revisions).find((r) => observeRevision(r).version === version)?.metadata.name,
    render: ({ app, version, plan, effective, prewarmReplicas, revisions }) => {
      const latest = newestFirst(revisions)[0]?.metadata.name;
      const bounds = inPlaceBounds ? effective : latestBounds(plan, effective, prewarmReplicas);
      return withVisibility(renderInferenceService(app, version, bounds, kserveRouter.routes(trafficPlan(plan, latest))) as unknown as WorkloadObject, clusterLocal);
    },
    hosts: (app) => ({
      defaultHost: clusterLocalHost(predictorName(app), app.metadata.namespace),
      // KServe tags the stable revision "prev" while a canary percent below 100 is set: the only time a
      // sticky route sends a session to it rather than to the default host.
      stableHost: tagHost(KSERVE_PREVIOUS_TAG, predictorName(app), app.metadata.namespace),
      candidateHost: tagHost(KSERVE_LATEST_TAG, predictorName(app), app.metadata.namespace),
      stableTag: KSERVE_PREVIOUS_TAG, candidateTag: KSERVE_LATEST_TAG,
    }),
    // Our VirtualService routes to the predictor's host: its readiness is KServe's PredictorReady.
    summarize: (live, versionOf) => summarizeConditions(live, live?.status?.components?.predictor?.traffic, live?.status?.url, 'PredictorReady', versionOf),
    // The predictor's Knative Service (and its UID) is KServe's: only its creation time tells an earlier one apart.
    isStale: (r, app, live) => staleRevision(r, predictorName(app), live, undefined),
  };
}
