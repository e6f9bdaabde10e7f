// The pod-level part of a container or model (spec.*.nodeSelector, volumes, ...)
// in the core/v1 PodSpec shape that both a Knative revision template and a
// KServe predictor embed. Pure. The operator's own labels and annotations are
// merged over the app's, so they always win (admission refuses the clashes).

import type { ContainerSpec, ModelSpec } from '../api/v1alpha1/serverlessapp.ts';

type PodTemplate = ContainerSpec | ModelSpec;

/** PodSpec fields: scheduling, identity and volumes. */
export function renderPodSpecFields(w: PodTemplate) {
  return {
    ...(w.serviceAccountName ? { serviceAccountName: w.serviceAccountName } : {}),
    ...(w.imagePullSecrets?.length ? { imagePullSecrets: w.imagePullSecrets.map((name) => ({ name })) } : {}),
    ...(w.nodeSelector ? { nodeSelector: w.nodeSelector } : {}),
    ...(w.tolerations?.length ? { tolerations: w.tolerations } : {}),
    ...(w.affinity ? { affinity: w.affinity } : {}),
    ...(w.volumes?.length ? { volumes: w.volumes } : {}),
  };
}

/** The container's mounts. ConfigMap and Secret mounts are read-only whether or not the app says so: Knative refuses anything else. */
export function renderVolumeMounts(w: PodTemplate) {
  if (!w.volumeMounts?.length) return {};
  const writable = new Set((w.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
  return {
    volumeMounts: w.volumeMounts.map((m) => ({
      name: m.name, mountPath: m.mountPath,
      ...(m.subPath ? { subPath: m.subPath } : {}),
      ...(writable.has(m.name) ? (m.readOnly ? { readOnly: true } : {}) : { readOnly: true }),
    })),
  };
}

/** The app's pod labels under the operator's. */
export function podLabels(w: PodTemplate, own: Record<string, string>): Record<string, string> {
  return { ...w.podLabels, ...own };
}

/** The app's pod annotations under the operator's. */
export function podAnnotations(w: PodTemplate, own: Record<string, string>): Record<string, string> {
  return { ...w.podAnnotations, ...own };
}
