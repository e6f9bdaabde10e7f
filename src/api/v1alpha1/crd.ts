// Builds the ServerlessApp CustomResourceDefinition from the schema in
// serverlessapp.ts. scripts/generate-crds.ts writes it to crds/ and to the Helm
// chart; a test fails when those files differ from what this returns.

import { GROUP, KIND, PLURAL, VERSION, specSchema, statusSchema } from './serverlessapp.ts';

/** The app.kubernetes.io/part-of value of the operator's CRDs (ServerlessApp, HostClaim). */
export const CRD_PART_OF = 'serverlessapp-operator';

/** A printer column of a CRD (what `kubectl get` shows). */
export const column = (name: string, jsonPath: string, type = 'string', description = '', priority = 0) =>
  ({ name, type, jsonPath, ...(description ? { description } : {}), ...(priority ? { priority } : {}) });

export function serverlessAppCRD() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${PLURAL}.${GROUP}`,
      labels: { 'app.kubernetes.io/part-of': CRD_PART_OF },
    },
    spec: {
      group: GROUP,
      names: {
        kind: KIND,
        listKind: `${KIND}List`,
        plural: PLURAL,
        singular: 'serverlessapp',
        shortNames: ['sapp'],
        categories: ['serverless'],
      },
      scope: 'Namespaced',
      versions: [{
        name: VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          column('Ready', '.status.conditions[?(@.type=="Ready")].status', 'string', 'True when the spec\'s desired state is reached and served; Unknown while it is being reached; False when it cannot be.'),
          column('Reconciling', '.status.conditions[?(@.type=="Reconciling")].reason', 'string', 'What is in progress toward the spec (Deploying, Prewarming, CanaryProgressing, Promoting, WindowOpening...); empty when nothing is.'),
          column('Stalled', '.status.conditions[?(@.type=="Stalled")].reason', 'string', 'Why the spec cannot be reached without a new edit (a failed or aborted rollout, a refused spec); empty otherwise.'),
          column('Phase', '.status.phase', 'string', 'Pending, Stable, Canary, Testing, Paused, Promoting, RolledBack, Aborted or Failed.'),
          column('Stable', '.status.versions.stable.summary', 'string', 'What the stable version runs: image name and tag, or model format and file.'),
          column('Candidate', '.status.versions.candidate.summary', 'string', 'What the candidate version runs, while there is one.'),
          column('Weight', '.status.canary.trafficPercent', 'integer', 'Traffic share of the candidate version, as the data plane reports it.'),
          column('Min', '.status.scaling.minScale', 'integer', 'Effective minimum replicas (after windows).'),
          column('Max', '.status.scaling.maxScale', 'integer', 'Effective maximum replicas (after windows).'),
          column('URL', '.status.url', 'string', 'Public URL.', 1),
          column('Version', '.status.versions.stable.version', 'string', 'Stable version hash.', 1),
          column('Candidate Version', '.status.versions.candidate.version', 'string', 'Candidate version hash (rollout.promote takes it).', 1),
          column('Reason', '.status.conditions[?(@.type=="Ready")].reason', 'string', 'Why Ready is what it is.', 1),
          column('Age', '.metadata.creationTimestamp', 'date'),
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'ServerlessApp runs a container or a model as a serverless app: Knative or KServe for serving, Istio for routing, with canary rollouts by editing the spec, scheduled scale windows and prewarming.',
            required: ['spec'],
            // Revision names are `<app>-<hash>` and must stay DNS-1035 labels of at most 63 characters.
            'x-kubernetes-validations': [{
              rule: "self.metadata.name.size() <= 50 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
              message: 'metadata.name must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter) of at most 50 characters',
            }],
            properties: {
              apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
              kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
              metadata: { type: 'object' },
              spec: specSchema.openapi,
              status: statusSchema.openapi,
            },
          },
        },
      }],
    },
  };
}
