// ServerlessApps used by the render and controller unit tests.
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

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
      },
      scaling: { minScale: 0, maxScale: 4, target: 5, metric: 'rps' },
      prewarm: { replicas: 2, warmup: { path: '/v1/models/fraud:predict', method: 'POST', body: '{"instances":[[1,2,3]]}', count: 3 }, cacheModel: true },
      ...overrides,
    },
  };
}
