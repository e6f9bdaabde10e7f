// ServerlessApps the unit tests of every layer render, plan and validate (test data: not built into dist/).
import type { ContainerSpec, ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

/** Every pod-template field (spec.container or spec.model), as a real app might set them. */
export function podTemplate(): Partial<ContainerSpec> {
  return {
    nodeSelector: { 'topology.kubernetes.io/region': 'eu-west1' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'shop', effect: 'NoSchedule' }],
    affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'topology.kubernetes.io/zone', labelSelector: { matchLabels: { 'team': 'a' } } } }] } },
    serviceAccountName: 'model-reader',
    imagePullSecrets: ['registry-creds'],
    volumes: [
      { name: 'config', configMap: { name: 'app-config', items: [{ key: 'app.yaml', path: 'app.yaml' }] } },
      { name: 'tls', secret: { secretName: 'app-tls', defaultMode: 256 } },
      { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '256Mi' } },
    ],
    volumeMounts: [
      { name: 'config', mountPath: '/etc/app' },
      { name: 'tls', mountPath: '/etc/tls', readOnly: true },
      { name: 'scratch', mountPath: '/tmp/scratch' },
    ],
    containerConcurrency: 10,
    timeoutSeconds: 120,
    podLabels: { team: 'a', 'app.kubernetes.io/version': '1.4.0' },
    podAnnotations: { 'prometheus.io/scrape': 'true' },
  };
}

export function containerApp(overrides: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: 'shop', namespace: 'team-a', uid: '11111111-2222-3333-4444-555555555555', generation: 3 },
    spec: {
      container: {
        image: 'ghcr.io/acme/shop:1.4.0', port: 8080,
        env: [{ name: 'MODE', value: 'prod' }],
        resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 } },
      },
      scaling: { minScale: 0, maxScale: 10, target: 100, metric: 'concurrency', scaleToZeroAfter: '15m' },
      ...overrides,
    },
  };
}

export function modelApp(overrides: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: 'fraud', namespace: 'ml', uid: '99999999-2222-3333-4444-555555555555', generation: 1 },
    spec: {
      model: {
        format: { name: 'sklearn', version: '1' }, storageUri: 'gs://models/fraud/v7', size: '2Gi',
        resources: { limits: { 'nvidia.com/gpu': 1, memory: '8Gi' } },
        // GPU nodes are tainted so that only GPU workloads land there.
        nodeSelector: { 'nvidia.com/gpu.present': 'true' },
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
      },
      scaling: { minScale: 0, maxScale: 4, target: 5, metric: 'rps' },
      prewarm: { replicas: 2, warmup: { path: '/v1/models/fraud:predict', method: 'POST', body: '{"instances":[[1,2,3]]}', count: 3 }, cacheModel: true },
      ...overrides,
    },
  };
}

/** An LLM app (model.serving: llm) behind a gateway, with warmup by a short completion. */
export function llmApp(overrides: Partial<ServerlessApp['spec']> = {}): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: 'chat', namespace: 'ml', uid: '99999999-3333-4444-5555-666666666666', generation: 1 },
    spec: {
      model: {
        serving: 'llm', storageUri: 'hf://Qwen/Qwen2.5-7B-Instruct', servedModelName: 'Qwen/Qwen2.5-7B-Instruct',
        env: [{ name: 'VLLM_ADDITIONAL_ARGS', value: '--max-model-len 8192' }],
        resources: { limits: { 'nvidia.com/gpu': 1, memory: '32Gi' }, requests: { cpu: '4', memory: '16Gi' } },
        nodeSelector: { 'nvidia.com/gpu.present': 'true' },
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
      },
      scaling: { minScale: 2 },
      prewarm: { warmup: { path: '/v1/completions', method: 'POST', body: '{"model":"Qwen/Qwen2.5-7B-Instruct","prompt":"Hi","max_tokens":1}', count: 2 } },
      ingress: { hosts: ['chat.example.com'], gateways: ['gateways/public'] },
      ...overrides,
    },
  };
}
