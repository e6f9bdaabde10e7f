// Pure: the Knative Service KServe (Knative deployment mode) builds for an
// InferenceService's predictor, after components/predictor.go and
// reconcilers/knative/ksvc_reconciler.go: `<isvc>-predictor`, labels and
// annotations merged ISVC < predictor, autoscaling annotations from
// minReplicas (default 1) / maxReplicas / scaleTarget / scaleMetric, no
// revision name (so every predictor change makes `<isvc>-predictor-0000N`),
// and the canary traffic split. No ServingRuntime is resolved: the image is a
// placeholder `kserve-standin/<format>-server:latest`.

import type { KubeObject } from './kube.ts';

export const KSERVE = 'serving.kserve.io';
export const ISVC_LABEL = `${KSERVE}/inferenceservice`;
export const ENABLE_TAG_ROUTING = `${KSERVE}/enable-tag-routing`;
export const DEPLOYMENT_MODE_ANNOTATION = `${KSERVE}/deploymentMode`;
export const STORAGE_URI_ANNOTATION = `internal.${KSERVE}/storage-initializer-sourceuri`;
export const ROLLOUT_DURATION = 'serving.knative.dev/rollout-duration';
const AUTOSCALING = 'autoscaling.knative.dev';
/** constants.ServiceAnnotationDisallowedList: never copied from the ISVC to the revision template. */
const DISALLOWED_ANNOTATIONS = [`${AUTOSCALING}/min-scale`, `${AUTOSCALING}/max-scale`, STORAGE_URI_ANNOTATION, 'kubectl.kubernetes.io/last-applied-configuration', 'modelFormat'];
/** constants.RevisionTemplateLabelDisallowedList */
const DISALLOWED_TEMPLATE_LABELS = ['networking.knative.dev/visibility'];
/** The pre-`model` predictor spellings: the key is the model format. */
const FRAMEWORKS = ['sklearn', 'xgboost', 'lightgbm', 'tensorflow', 'pytorch', 'triton', 'onnx', 'pmml', 'paddle', 'huggingface'];
/** Test/demo convention: a storageUri containing this renders an image the Knative stand-in never makes Ready. */
export const UNREADY_MODEL_MARKER = 'unready';

export interface PredictorTrafficTarget {
  latestRevision: boolean;
  revisionName?: string;
  percent: number;
  tag?: string;
}

/** Knative mode unless the status or annotation says otherwise (the mode is sticky once in status). */
export function deploymentMode(isvc: KubeObject): string {
  const raw: string = isvc.status?.deploymentMode || isvc.metadata.annotations?.[DEPLOYMENT_MODE_ANNOTATION] || 'Knative';
  if (raw === 'Serverless') return 'Knative';
  if (raw === 'RawDeployment') return 'Standard';
  return raw;
}

export function predictorServiceName(isvc: KubeObject): string {
  return `${isvc.metadata.name}-predictor`;
}

/** The model as the predictor names it: `model.modelFormat` or a framework key such as `sklearn`. */
export function predictorModel(predictor: any): { format: string; spec: any } | undefined {
  if (predictor?.model) return { format: predictor.model.modelFormat?.name ?? 'custom', spec: predictor.model };
  const framework = FRAMEWORKS.find((f) => predictor?.[f]);
  return framework ? { format: framework, spec: predictor[framework] } : undefined;
}

export function storageUri(isvc: KubeObject): string | undefined {
  const predictor = isvc.spec?.predictor;
  return predictorModel(predictor)?.spec?.storageUri
    ?? predictor?.containers?.[0]?.env?.find((e: any) => e.name === 'STORAGE_URI')?.value;
}

/** createKnativeService's traffic: canary split against the last rolled-out revision, else all on latest. */
export function predictorTraffic(canaryTrafficPercent: number | undefined, latestRolledoutRevision: string | undefined, tagRouting: boolean): PredictorTrafficTarget[] {
  const latestTag = tagRouting ? { tag: 'latest' } : {};
  if (canaryTrafficPercent !== undefined && canaryTrafficPercent !== null && latestRolledoutRevision) {
    const targets: PredictorTrafficTarget[] = [{ latestRevision: true, percent: canaryTrafficPercent, ...latestTag }];
    if (canaryTrafficPercent < 100) {
      targets.push({ revisionName: latestRolledoutRevision, latestRevision: false, percent: 100 - canaryTrafficPercent, tag: 'prev' });
    }
    return targets;
  }
  return [{ latestRevision: true, percent: 100, ...latestTag }];
}

function without(map: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => !keys.includes(k)));
}

function container(isvc: KubeObject): any {
  const predictor = isvc.spec?.predictor ?? {};
  const model = predictorModel(predictor);
  if (!model) {
    const [first, ...rest] = predictor.containers ?? [{ image: 'kserve-standin/custom-server:latest' }];
    return [{ ...first, name: 'kserve-container' }, ...rest];
  }
  const spec = model.spec;
  const uri: string | undefined = spec.storageUri;
  const tag = uri?.includes(UNREADY_MODEL_MARKER) ? UNREADY_MODEL_MARKER : 'latest';
  return [{
    name: 'kserve-container',
    image: spec.image ?? `kserve-standin/${model.format}-server:${tag}`,
    args: [`--model_name=${isvc.metadata.name}`, '--model_dir=/mnt/models', '--http_port=8080', ...(spec.args ?? [])],
    env: [...(uri ? [{ name: 'STORAGE_URI', value: uri }] : []), ...(spec.env ?? [])],
    ...(spec.resources ? { resources: spec.resources } : {}),
  }];
}

/** The desired `<isvc>-predictor` Knative Service, owned by the ISVC. */
export function renderPredictorService(isvc: KubeObject): KubeObject {
  const predictor = isvc.spec?.predictor ?? {};
  const { name, namespace, uid } = isvc.metadata;
  const labels = {
    ...(isvc.metadata.labels ?? {}),
    ...(predictor.labels ?? {}),
    [ISVC_LABEL]: name,
    component: 'predictor',
  };
  const uri = storageUri(isvc);
  const annotations: Record<string, string> = {
    ...without(isvc.metadata.annotations, DISALLOWED_ANNOTATIONS),
    ...(uri ? { [STORAGE_URI_ANNOTATION]: uri } : {}),
    ...without(predictor.annotations, DISALLOWED_ANNOTATIONS),
  };
  // knutils.SetAutoScalingAnnotations
  annotations[`${AUTOSCALING}/class`] ??= 'kpa.autoscaling.knative.dev';
  if (predictor.scaleTarget !== undefined) annotations[`${AUTOSCALING}/target`] = String(predictor.scaleTarget);
  if (predictor.scaleMetric !== undefined) annotations[`${AUTOSCALING}/metric`] = String(predictor.scaleMetric);
  annotations[`${AUTOSCALING}/min-scale`] = String(predictor.minReplicas ?? 1);
  if (predictor.maxReplicas) annotations[`${AUTOSCALING}/max-scale`] = String(predictor.maxReplicas);
  // rollout-duration belongs on the Service itself, not its template (kserve#2009).
  const ksvcAnnotations: Record<string, string> = {};
  if (annotations[ROLLOUT_DURATION] !== undefined) {
    ksvcAnnotations[ROLLOUT_DURATION] = annotations[ROLLOUT_DURATION];
    delete annotations[ROLLOUT_DURATION];
  }
  const rolledOut: string | undefined = isvc.status?.components?.predictor?.latestRolledoutRevision;
  const tagRouting = isvc.metadata.annotations?.[ENABLE_TAG_ROUTING] === 'true';
  return {
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    metadata: {
      name: predictorServiceName(isvc),
      namespace: namespace!,
      labels,
      annotations: ksvcAnnotations,
      ownerReferences: [{ apiVersion: `${KSERVE}/v1beta1`, kind: 'InferenceService', name, uid: uid!, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      template: {
        metadata: { labels: without(labels, DISALLOWED_TEMPLATE_LABELS), annotations },
        spec: {
          ...(predictor.timeout !== undefined ? { timeoutSeconds: predictor.timeout, responseStartTimeoutSeconds: predictor.timeout } : {}),
          ...(predictor.containerConcurrency !== undefined ? { containerConcurrency: predictor.containerConcurrency } : {}),
          ...(predictor.serviceAccountName ? { serviceAccountName: predictor.serviceAccountName } : {}),
          containers: container(isvc),
        },
      },
      traffic: predictorTraffic(predictor.canaryTrafficPercent, rolledOut, tagRouting),
    },
  };
}
