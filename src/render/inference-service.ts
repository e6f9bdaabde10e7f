// Model app -> KServe InferenceService (serving.kserve.io/v1beta1) in Knative
// (serverless) mode. Pure. KServe names revisions itself, so the version is
// carried as a predictor label that KServe propagates to the Knative revisions;
// that is how the operator knows which revision serves which version.

import { SCALING_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { ScaleBounds } from '../scaling/windows.ts';
import { apiVersionOf, Kinds, type ApiVersion } from '../util/kinds.ts';
import { SCALE_TO_ZERO_RETENTION } from './autoscaling.ts';
import { VERSION_LABEL, appLabels, childMetadata } from './metadata.ts';
import { podAnnotations, podLabels, renderPodSpecFields, renderVolumeMounts } from './pod-template.ts';

/** KServe v0.20 renamed "Serverless" to "Knative"; older releases still read "Serverless". */
export const DEPLOYMENT_MODE = 'Knative';

export interface InferenceService {
  apiVersion: ApiVersion<typeof Kinds.InferenceService>;
  kind: typeof Kinds.InferenceService.kind;
  metadata: ReturnType<typeof childMetadata> & { annotations: Record<string, string> };
  spec: { predictor: Record<string, unknown> };
  status?: Record<string, unknown>;
}

export function renderInferenceService(app: ServerlessApp, version: string, bounds: ScaleBounds, traffic: { canaryTrafficPercent?: number }): InferenceService {
  const model = app.spec.model;
  // The schema requires format unless serving is llm, which renders an LLMInferenceService instead.
  if (!model?.format) throw new Error('renderInferenceService needs a predictor model app (with format)');
  const format = model.format;
  const scaling = app.spec.scaling ?? {};
  const annotations = podAnnotations(model, scaling.scaleToZeroAfter ? { [SCALE_TO_ZERO_RETENTION]: scaling.scaleToZeroAfter } : {});
  return {
    apiVersion: apiVersionOf(Kinds.InferenceService),
    kind: Kinds.InferenceService.kind,
    metadata: {
      ...childMetadata(app),
      annotations: {
        'serving.kserve.io/deploymentMode': DEPLOYMENT_MODE,
        // Tags latest/prev give the candidate and the stable revision their own addresses.
        'serving.kserve.io/enable-tag-routing': 'true',
      },
    },
    spec: {
      predictor: {
        // KServe's minReplicas defaults to 1: scale-to-zero must be explicit.
        minReplicas: bounds.minScale,
        ...(bounds.maxScale !== undefined ? { maxReplicas: bounds.maxScale } : {}),
        ...(scaling.target !== undefined ? { scaleTarget: scaling.target } : {}),
        scaleMetric: scaling.metric ?? SCALING_DEFAULTS.metric,
        ...(traffic.canaryTrafficPercent !== undefined ? { canaryTrafficPercent: traffic.canaryTrafficPercent } : {}),
        // KServe's ComponentExtensionSpec: "timeout" is Knative's timeoutSeconds.
        ...(model.containerConcurrency !== undefined ? { containerConcurrency: model.containerConcurrency } : {}),
        ...(model.timeoutSeconds !== undefined ? { timeout: model.timeoutSeconds } : {}),
        labels: podLabels(model, { ...appLabels(app), [VERSION_LABEL]: version }),
        ...(Object.keys(annotations).length ? { annotations } : {}),
        // The predictor embeds a core/v1 PodSpec.
        ...renderPodSpecFields(model),
        model: {
          modelFormat: { name: format.name, ...(format.version ? { version: format.version } : {}) },
          storageUri: model.storageUri,
          ...(model.runtime ? { runtime: model.runtime } : {}),
          ...(model.protocolVersion ? { protocolVersion: model.protocolVersion } : {}),
          ...(model.args ? { args: model.args } : {}),
          ...(model.env ? { env: model.env } : {}),
          ...(model.resources ? { resources: model.resources } : {}),
          ...renderVolumeMounts(model),
        },
      },
    },
  };
}

/** GPUs requested or limited: scale-to-zero is risky for these (kserve#1247). */
export function requestsGpu(app: ServerlessApp): boolean {
  const r = app.spec.model?.resources ?? app.spec.container?.resources;
  const keys = [...Object.keys(r?.limits ?? {}), ...Object.keys(r?.requests ?? {})];
  return keys.some((k) => k.endsWith('/gpu'));
}
