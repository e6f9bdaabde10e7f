// Pure: an InferenceService's status in Knative mode, derived from its
// predictor Knative Service the way KServe's PropagateStatus,
// PropagateCrossComponentStatus, the ingress reconciler and
// PropagateModelStatus do (pkg/apis/serving/v1beta1/inference_service_status.go).
// Quirks kept on purpose: observedGeneration is copied from the Knative
// Service, and transitionStatus reads InProgress while scaled to zero (kserve#6079).

import { applyConditions, findCondition } from './conditions.ts';
import type { Condition, ConditionSet, ConditionUpdate } from './conditions.ts';
import type { KubeObject } from './kube.ts';

export const ISVC_CONDITIONS: ConditionSet = { happy: 'Ready', dependents: ['PredictorReady', 'IngressReady'] };

export interface IsvcStatusInput {
  isvc: KubeObject;
  /** The `<isvc>-predictor` Knative Service, if it exists yet. */
  ksvc: KubeObject | undefined;
  /** The latest created revision of the predictor, for its pod counts. */
  latestRevision: KubeObject | undefined;
  domain: string;
  nowMs: number;
}

function copyCondition(type: string, from: Condition | undefined): ConditionUpdate[] {
  return from ? [{ type, status: from.status, reason: from.reason, message: from.message }] : [];
}

/** PropagateStatus's rolled-out bookkeeping: a revision that reaches 100% as "latest" is rolled out. */
export function rolledOut(previous: any, ksvcStatus: any): { latestRolledoutRevision?: string; previousRolledoutRevision?: string } {
  let latest: string | undefined = previous?.latestRolledoutRevision;
  let prior: string | undefined = previous?.previousRolledoutRevision;
  const lr: string | undefined = ksvcStatus.latestReadyRevisionName;
  const lc: string | undefined = ksvcStatus.latestCreatedRevisionName;
  const byRevision = new Map<string, number>();
  for (const t of ksvcStatus.traffic ?? []) if (t.percent !== undefined) byRevision.set(t.revisionName, (byRevision.get(t.revisionName) ?? 0) + t.percent);
  for (const t of ksvcStatus.traffic ?? []) {
    if (t.revisionName !== lr || t.latestRevision !== true) continue;
    if (latest !== lr) {
      if (t.percent === 100) {
        prior = latest;
        latest = lr;
      }
    } else if (lr === lc && t.percent !== undefined && t.percent < 100 && byRevision.get(t.revisionName) === 100 && prior) {
      // Rolled back: the split is over the same revision, so the previous one is the rolled-out one again.
      latest = prior;
    }
  }
  return { ...(latest ? { latestRolledoutRevision: latest } : {}), ...(prior ? { previousRolledoutRevision: prior } : {}) };
}

/**
 * PropagateModelStatus, with the latest created revision's replicas standing in
 * for its pods (a starting revision's desired pods exist but are not ready).
 * KServe reads Ready from before this reconcile's ingress step and converges on
 * the next pass; the stand-in uses the final Ready and gets there in one.
 */
function modelStatus(previous: any, ready: boolean, ksvcStatus: any, predictor: any, rev: KubeObject | undefined) {
  const readyPods: number = rev?.status?.actualReplicas ?? 0;
  const starting = findCondition(rev?.status?.conditions, 'Ready')?.status === 'Unknown';
  const pods = starting ? Math.max(readyPods, rev?.status?.desiredReplicas ?? 0) : readyPods;
  let target: string;
  if (pods === 0) {
    target = (ksvcStatus?.conditions ?? []).some((c: Condition) => c.status === 'False') ? 'FailedToLoad' : 'Pending';
  } else if (ready && predictor?.latestCreatedRevision === predictor?.latestReadyRevision) {
    target = 'Loaded';
  } else {
    target = 'Pending';
  }
  const transition = target === 'Loaded' ? 'UpToDate' : target === 'FailedToLoad' ? 'BlockedByFailedLoad' : 'InProgress';
  const active: string = target === 'Loaded' ? 'Loaded' : (previous?.states?.activeModelState ?? '');
  return {
    transitionStatus: transition,
    states: { activeModelState: active, targetModelState: target },
    copies: { failedCopies: 0, totalCopies: readyPods },
  };
}

export function isvcStatus(input: IsvcStatusInput): any {
  const { isvc, ksvc, domain, nowMs } = input;
  const { name, namespace } = isvc.metadata;
  const previous = isvc.status ?? {};
  const prevPredictor = previous.components?.predictor ?? {};
  const ks = ksvc?.status;
  const updates: ConditionUpdate[] = [{ type: 'Stopped', status: 'False' }];
  let predictor: any = prevPredictor;

  if (ks) {
    const ksReady = findCondition(ks.conditions, 'Ready');
    predictor = {
      ...prevPredictor,
      ...(ks.latestCreatedRevisionName ? { latestCreatedRevision: ks.latestCreatedRevisionName } : {}),
      ...(ks.latestReadyRevisionName ? { latestReadyRevision: ks.latestReadyRevisionName } : {}),
      ...rolledOut(prevPredictor, ks),
      ...(ksReady?.status === 'True' && ks.url ? { url: ks.url } : {}),
      ...(ksReady?.status === 'True' && ks.address ? { address: ks.address } : {}),
      ...(ks.traffic ? { traffic: ks.traffic } : {}),
    };
    updates.push(
      ...copyCondition('PredictorReady', ksReady),
      ...copyCondition('PredictorRouteReady', findCondition(ks.conditions, 'RoutesReady')),
      ...copyCondition('PredictorConfigurationReady', findCondition(ks.conditions, 'ConfigurationsReady')),
    );
  }
  // PropagateCrossComponentStatus and the ingress reconciler see the conditions set so far.
  const sofar = applyConditions(ISVC_CONDITIONS, previous.conditions, updates, nowMs);
  const cross = (type: string, from: string): ConditionUpdate => {
    const c = findCondition(sofar, from);
    if (c?.status === 'True') return { type, status: 'True' };
    return { type, status: !c || c.status === 'Unknown' ? 'Unknown' : 'False', reason: `${from} not ready` };
  };
  updates.push(cross('RoutesReady', 'PredictorRouteReady'), cross('LatestDeploymentReady', 'PredictorConfigurationReady'));
  const predictorReady = findCondition(sofar, 'PredictorReady');
  if (predictorReady?.status === 'True') {
    updates.push({ type: 'IngressReady', status: 'True' });
  } else {
    updates.push({ type: 'IngressReady', status: predictorReady?.status === 'False' ? 'False' : 'Unknown', reason: 'Predictor ingress not created' });
  }
  const conditions = applyConditions(ISVC_CONDITIONS, previous.conditions, updates, nowMs);
  const ready = findCondition(conditions, 'Ready')?.status === 'True';
  const routed = predictorReady?.status === 'True' && predictor.url;

  return {
    observedGeneration: ks?.observedGeneration ?? previous.observedGeneration ?? 0,
    conditions,
    ...(routed ? { url: `http://${name}.${namespace}.${domain}`, address: { url: `http://${name}.${namespace}.svc.cluster.local` } }
      : { ...(previous.url ? { url: previous.url } : {}), ...(previous.address ? { address: previous.address } : {}) }),
    components: { ...(previous.components ?? {}), predictor },
    modelStatus: modelStatus(previous.modelStatus, ready, ks, predictor, input.latestRevision),
    deploymentMode: 'Knative',
  };
}
