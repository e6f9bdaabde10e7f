// One reconcile's pure half for a generated app, and the invariants its
// rendered children must hold: shared by the schema fuzzer (src/schema-fuzz.test.ts)
// and the admission fuzz test (test/integration/fuzz-admission.test.ts).
import { llmWorkload } from '../../src/planner/llm-workload.ts';
import { serverlessAppCRD } from '../../src/api/v1alpha1/crd.ts';
import { OPERATOR_LABEL_KEYS, RESERVED_KEY_PATTERN } from '../../src/api/v1alpha1/pod-template.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { wantsCache } from '../../src/controllers/model-cache.ts';
import { decide, desiredWorkload } from '../../src/planner/decide.ts';
import { composeStatus } from '../../src/planner/status.ts';
import { knativeWorkload, kserveWorkload } from '../../src/planner/workloads.ts';
import { renderLocalModelCache } from '../../src/render/local-model-cache.ts';
import { APP_NAMESPACE_LABEL } from '../../src/render/metadata.ts';
import { renderVirtualService } from '../../src/render/virtual-service.ts';
import { reservedPodKeys } from '../../src/testing/reserved-pod-keys.ts';
import type { JSONSchema } from '../../src/testing/schema-fuzz.ts';

/** The fixed clock of every fuzzed reconcile. */
const NOW = new Date('2026-11-23T09:00:00Z');

/** The spec schema exactly as the CRD carries it (crds/ is generated from the same builder). */
export function specSchemaOfCRD(): JSONSchema {
  const crd = serverlessAppCRD();
  return (crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec) as JSONSchema;
}

/** The same app without the tenant's pod labels and annotations: what the operator sets by itself. */
function withoutPodMetadata(app: ServerlessApp): ServerlessApp {
  const copy = structuredClone(app);
  for (const w of [copy.spec.container, copy.spec.model]) {
    if (!w) continue;
    delete w.podLabels;
    delete w.podAnnotations;
  }
  return copy;
}

/** A key the CRD's own pod-key rule refuses at admission (the CEL rule is built from these constants). */
const refusedByCrd = (key: string) => new RegExp(RESERVED_KEY_PATTERN).test(key) || (OPERATOR_LABEL_KEYS as readonly string[]).includes(key);

interface Child { kind?: string; metadata: { name?: string; namespace?: string; labels?: Record<string, string> }; spec?: unknown }

/** Everything one reconcile of a valid app renders, for both Knative bound modes, with the status it would report. */
export function reconcileOnce(app: ServerlessApp): Child[] {
  const children: Child[] = [];
  for (const inPlace of [true, false]) {
    let current = app;
    // Twice: the second pass reads the status the first one reported, as the next reconcile would.
    for (let pass = 0; pass < 2; pass++) {
      const d = decide({ app: current, now: NOW, knative: { workload: knativeWorkload(inPlace) }, kserve: { workload: kserveWorkload(inPlace) }, llm: { workload: llmWorkload(), members: [], objects: [] }, revisions: [] });
      children.push(desiredWorkload(current, d) as Child);
      if (current.spec.ingress) {
        children.push(renderVirtualService(current, {
          localGateway: 'knative-local-gateway.istio-system.svc.cluster.local', candidateReady: true,
          ...d.workload.hosts(current), candidateRevision: `${current.metadata.name}-candidate`,
          traffic: { stable: { revision: `${current.metadata.name}-stable`, version: '0123456789' }, candidate: { revision: `${current.metadata.name}-candidate`, version: 'abcdef0123', percent: 20, ready: true } },
          inForce: [{ revision: `${current.metadata.name}-stable`, percent: 80, tag: d.workload.hosts(current).stableTag }, { revision: `${current.metadata.name}-candidate`, percent: 20, tag: d.workload.hosts(current).candidateTag }], routesReady: true,
        }) as unknown as Child);
      }
      const status = composeStatus(current, { plan: d.plan, workload: d.serving, revisions: d.observed, ...(d.prewarm ? { prewarm: d.prewarm } : {}), scale: d.scale, now: NOW, describe: () => ({}) });
      current = { ...current, status };
    }
  }
  // The CRD requires model.size with cacheModel (a CEL rule); the cache is rendered only then.
  if (wantsCache(app) && app.spec.model?.size !== undefined) {
    children.push(renderLocalModelCache(app, 'namespace', 'gpu') as Child, renderLocalModelCache(app, 'cluster', 'gpu') as Child);
  }
  return children;
}

/** Invariant breaches of one valid app's rendered children. */
export function breaches(app: ServerlessApp): string[] {
  const out: string[] = [];
  const children = reconcileOnce(app);
  // What the operator sets by itself differs only where the tenant set pod labels or annotations.
  const w = app.spec.container ?? app.spec.model;
  const own = Object.keys(w?.podLabels ?? {}).length + Object.keys(w?.podAnnotations ?? {}).length ? reconcileOnce(withoutPodMetadata(app)) : children;
  children.forEach((child, i) => {
    const ns = child.metadata.namespace ?? child.metadata.labels?.[APP_NAMESPACE_LABEL];
    if (ns !== app.metadata.namespace) out.push(`${child.kind} ${child.metadata.name} rendered in namespace ${ns}, not ${app.metadata.namespace}`);
    for (const key of reservedPodKeys(child, own[i]!)) {
      if (!refusedByCrd(key.split(' ')[1]!)) out.push(`${child.kind} ${child.metadata.name}: tenant ${key} reaches the pods`);
    }
  });
  return out;
}

