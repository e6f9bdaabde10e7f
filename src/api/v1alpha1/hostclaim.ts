// The HostClaim API (serverlessapp.io/v1alpha1, cluster-scoped): which
// namespace owns a host, as Knative's ClusterDomainClaim binds a domain to a
// namespace. Ownership is decided by the API server, not by the operator's
// memory: a claim's name is derived from its host, so of two creates of the
// same host only one succeeds. A claim belongs to a namespace, not to an app:
// it has no owner and outlives the apps that use it. The operator creates the
// claims an app needs; the platform may create one with kubectl to pre-assign
// a host, and deletes one to release it. This file is the source of the CRD
// in crds/ and the chart (see crd.ts for the ServerlessApp one).

import { object, required, string, type TypeOf } from '../openapi.ts';
import { GROUP, HOSTNAME, VERSION } from './serverlessapp.ts';
import { column, CRD_PART_OF } from './crd.ts';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../util/managed-by.ts';
import { apiVersionOf, Kinds } from '../../util/kinds.ts';
import { DNS_LABEL } from '../../util/k8s-names.ts';

export const HOST_CLAIM_KIND = Kinds.HostClaim.kind;
export const HOST_CLAIM_PLURAL = Kinds.HostClaim.plural;

/**
 * The first label of a wildcard claim's name. Object names have the alphabet
 * and grammar of host names, so a wildcard cannot get a name no exact host
 * could have; this label is reserved instead. It has "--" in its 3rd and 4th
 * characters, a reserved LDH label that IDNA forbids in any real host name
 * (RFC 5890 2.3.1), and an exact host starting with it is refused.
 */
export const WILDCARD_LABEL = 'wc--any';

/** Longest object name the API server accepts (a DNS subdomain). */
const MAX_NAME = 253;

/**
 * The name of the claim of `host` (normalised: lower case, no trailing dot):
 * the host itself, or for a wildcard "*.example.com", "wc--any.example.com".
 * Undefined when the host cannot be claimed: it starts with the reserved
 * label, or a wildcard too long for a name once encoded.
 */
export function hostClaimName(host: string): string | undefined {
  if (host.startsWith(`${WILDCARD_LABEL}.`)) return undefined;
  const name = host.startsWith('*.') ? `${WILDCARD_LABEL}.${host.slice(2)}` : host;
  return name.length <= MAX_NAME ? name : undefined;
}

/** Why `host` cannot be claimed (see hostClaimName), for a message naming the field. */
export function unclaimableHost(host: string): string | undefined {
  if (hostClaimName(host) !== undefined) return undefined;
  return host.startsWith(`${WILDCARD_LABEL}.`)
    ? `host ${host} starts with the label "${WILDCARD_LABEL}", which is reserved (it names wildcard claims)`
    : `wildcard host ${host} is too long to claim: at most ${MAX_NAME - WILDCARD_LABEL.length + 1} characters`;
}


export const hostClaimSpecSchema = object('Which namespace owns a host. Set when the claim is made and never changed: to move a host, delete the claim and create another.', {
  host: required(string(`The host, as apps name it in spec.ingress.hosts: an exact host (shop.example.com) or a wildcard (*.example.com, which covers every name under example.com, at any depth, and conflicts with claims of those names). An exact host may not start with the label "${WILDCARD_LABEL}".`, {
    pattern: HOSTNAME, maxLength: MAX_NAME,
    rules: [
      { rule: 'self == oldSelf', message: 'spec.host is immutable' },
      { rule: `!self.startsWith('${WILDCARD_LABEL}.')`, message: `an exact host may not start with the label "${WILDCARD_LABEL}": it names wildcard claims` },
    ],
  })),
  namespace: required(string('The namespace whose ServerlessApps may route the host.', {
    pattern: DNS_LABEL, maxLength: 63,
    rules: [{ rule: 'self == oldSelf', message: 'spec.namespace is immutable: delete the claim to release the host, then create a new one' }],
  })),
});

export type HostClaimSpec = TypeOf<typeof hostClaimSpecSchema>;

export interface HostClaim {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid?: string; resourceVersion?: string; creationTimestamp?: string; labels?: Record<string, string> };
  spec: HostClaimSpec;
}

/** The claim a namespace makes for `host`; undefined when the host cannot be claimed. */
export function hostClaimFor(host: string, namespace: string): HostClaim | undefined {
  const name = hostClaimName(host);
  if (!name) return undefined;
  return {
    apiVersion: apiVersionOf(Kinds.HostClaim), kind: HOST_CLAIM_KIND,
    metadata: { name, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    spec: { host, namespace },
  };
}

export function hostClaimCRD() {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${HOST_CLAIM_PLURAL}.${GROUP}`,
      labels: { 'app.kubernetes.io/part-of': CRD_PART_OF },
    },
    spec: {
      group: GROUP,
      names: { kind: HOST_CLAIM_KIND, listKind: `${HOST_CLAIM_KIND}List`, plural: HOST_CLAIM_PLURAL, singular: 'hostclaim' },
      scope: 'Cluster',
      versions: [{
        name: VERSION,
        served: true,
        storage: true,
        additionalPrinterColumns: [
          column('Host', '.spec.host', 'string', 'The claimed host.'),
          column('Namespace', '.spec.namespace', 'string', 'The namespace that owns it.'),
          column('Age', '.metadata.creationTimestamp', 'date'),
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'HostClaim gives one namespace a host for its ServerlessApps (spec.ingress.hosts). The first claim of a host wins: the ServerlessApp operator creates a claim the first time an app of a namespace routes a host, and an app of another namespace naming it is refused (HostConflict). A claim outlives the apps that use it; the platform pre-assigns a host by creating a claim and releases one by deleting it. The name is the host, or "wc--any.<domain>" for the wildcard "*.<domain>".',
            required: ['spec'],
            'x-kubernetes-validations': [{
              rule: `self.metadata.name == (self.spec.host.startsWith('*.') ? '${WILDCARD_LABEL}.' + self.spec.host.substring(2) : self.spec.host)`,
              message: `metadata.name must be spec.host, or "${WILDCARD_LABEL}.example.com" for the wildcard host "*.example.com"`,
            }],
            properties: {
              apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
              kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
              metadata: { type: 'object' },
              spec: hostClaimSpecSchema.openapi,
            },
          },
        },
      }],
    },
  };
}
