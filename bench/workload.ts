// What the benchmark asks of the cluster: N ServerlessApps spread over a few
// namespaces (a quarter with an ingress, so VirtualServices are part of the
// load), written with bounded concurrency like a GitOps sync would; and, for
// the ceiling, the Knative Services the operator would render for them,
// written straight to the API server by a bare client.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { templateAutoscaling } from '../src/render/autoscaling.ts';
import { knativeTemplate, renderKnativeService } from '../src/render/knative-service.ts';
import { versionOf } from '../src/rollout/version.ts';
import { Kinds } from '../src/util/kinds.ts';
import { sleep } from './stats.ts';

export const IN_FLIGHT = 32;

export interface AppRef {
  namespace: string;
  name: string;
}

export const keyOf = (a: AppRef) => `${a.namespace}/${a.name}`;

export function appRefs(count: number, namespaces: string[]): AppRef[] {
  return Array.from({ length: count }, (_, i) => ({ namespace: namespaces[i % namespaces.length]!, name: `app-${i}` }));
}

export function benchApp(ref: AppRef, image: string, extra: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  const i = Number(ref.name.replace(/\D/g, ''));
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: ref.name, namespace: ref.namespace },
    spec: {
      container: { image, port: 8080, env: [{ name: 'APP', value: ref.name }], resources: { requests: { cpu: '100m', memory: '128Mi' } } },
      scaling: { minScale: 0, maxScale: 10, target: 100 },
      ...(i % 4 === 0 ? { ingress: { hosts: [`${ref.name}.${ref.namespace}.example.com`], timeout: '30s' } } : {}),
      ...extra,
    },
  };
}

/** A model app (KServe's sklearn runtime), scaling to zero: rendered as an InferenceService. */
export function benchModelApp(ref: AppRef): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: ref.name, namespace: ref.namespace },
    spec: {
      model: { format: { name: 'sklearn' }, storageUri: `gs://bench-models/${ref.name}`, resources: { requests: { cpu: '100m', memory: '256Mi' } } },
      scaling: { minScale: 0, maxScale: 10, target: 100 },
    },
  };
}

export const imageOf = (ref: AppRef, version: number) => `registry.example.com/bench/${ref.name}:${version}`;

/** Runs `work` on every item with at most `inFlight` at once; each call is retried a few times. */
export async function forEachBounded<T>(items: readonly T[], inFlight: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      for (let attempt = 1; ; attempt++) {
        try {
          await work(item);
          break;
        } catch (e) {
          if (attempt >= 5) throw e;
          await sleep(200 * attempt);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, worker));
}

/**
 * The Knative Service the operator renders for `app` once its first version
 * serves, relabelled so that neither the operator nor the stand-ins watch it.
 */
export function renderedKnativeService(app: ServerlessApp): object {
  const version = versionOf(app.spec);
  const template = knativeTemplate(app, version, templateAutoscaling(app.spec.scaling));
  const ksvc = renderKnativeService({ ...app, metadata: { ...app.metadata, uid: '00000000-0000-4000-8000-000000000000' } }, version, template,
    [{ revisionName: template.revision, percent: 100, tag: 'stable' }]) as { metadata: { labels: Record<string, string> } };
  ksvc.metadata.labels['app.kubernetes.io/managed-by'] = 'serverlessapp-bench';
  return ksvc;
}

/** Deletes every Knative Service in `namespace` with one request. */
export async function deleteKnativeServices(kc: KubeConfig, namespace: string): Promise<void> {
  const { group, version, plural } = Kinds.KnativeService;
  await kc.makeApiClient(CustomObjectsApi).deleteCollectionNamespacedCustomObject({ group, version, namespace, plural });
}
