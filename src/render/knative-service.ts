// Container app -> Knative Service (serving.knative.dev/v1). Pure: the same app
// and plan always give the same object. The template carries a deterministic
// revision name (`<app>-<hash>`), so every version is addressable and traffic
// can be pinned to it by name.

import type { IService } from '@kubernetes-models/knative/serving.knative.dev/v1/Service';
import type { ContainerSpec, ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { revisionName } from '../rollout/version.ts';
import { VERSION_LABEL, appLabels, childMetadata } from './metadata.ts';
import { podAnnotations, podLabels, renderPodSpecFields, renderVolumeMounts } from './pod-template.ts';
import type { KnativeTrafficTarget } from './traffic.ts';
import { apiVersionOf, Kinds } from '../util/kinds.ts';

export interface KnativeTemplate {
  /** The revision this template creates. */
  revision: string;
  annotations: Record<string, string>;
}

/**
 * The template identity of a version: its revision name follows from its annotations.
 * `born` annotations ride along without naming the revision: the scale bounds a revision
 * starts with where Knative (>= 1.21) changes them in place afterwards.
 */
export function knativeTemplate(app: ServerlessApp, version: string, annotations: Record<string, string>, born: Record<string, string> = {}): KnativeTemplate {
  return { revision: revisionName(app.metadata.name, version, annotations), annotations: { ...annotations, ...born } };
}

export function renderContainer(c: ContainerSpec) {
  return {
    name: 'app',
    image: c.image,
    ...(c.port ? { ports: [{ name: 'http1', containerPort: c.port }] } : {}),
    ...(c.command ? { command: c.command } : {}),
    ...(c.args ? { args: c.args } : {}),
    ...(c.env ? { env: c.env } : {}),
    ...(c.envFrom ? { envFrom: c.envFrom } : {}),
    ...(c.resources ? { resources: c.resources } : {}),
    ...(c.readinessProbe ? { readinessProbe: c.readinessProbe } : {}),
    ...(c.livenessProbe ? { livenessProbe: c.livenessProbe } : {}),
    ...renderVolumeMounts(c),
  };
}

export function renderKnativeService(app: ServerlessApp, version: string, template: KnativeTemplate, traffic: KnativeTrafficTarget[]): IService {
  const container = app.spec.container;
  if (!container) throw new Error('renderKnativeService needs a container app');
  return {
    apiVersion: apiVersionOf(Kinds.KnativeService),
    kind: Kinds.KnativeService.kind,
    metadata: childMetadata(app),
    spec: {
      template: {
        metadata: {
          name: template.revision,
          labels: podLabels(container, { ...appLabels(app), [VERSION_LABEL]: version }),
          annotations: podAnnotations(container, template.annotations),
        },
        spec: {
          ...(container.containerConcurrency !== undefined ? { containerConcurrency: container.containerConcurrency } : {}),
          ...(container.timeoutSeconds !== undefined ? { timeoutSeconds: container.timeoutSeconds } : {}),
          ...renderPodSpecFields(container),
          containers: [renderContainer(container)],
        },
      },
      traffic,
    },
  } as IService;
}
