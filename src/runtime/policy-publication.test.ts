import assert from 'node:assert/strict';
import { parseConfig, validationPolicy } from '../config.ts';
import { policyConfigMap, POLICY_CONFIGMAP, readPolicyConfigMap, type PublishedPolicy } from './policy-publication.ts';

describe('the policy the operator publishes for kubectl sapp plan', () => {
  const config = parseConfig(['--allowed-gateways', 'istio-system/public-gateway', '--allowed-host-suffixes', '{namespace}.apps.example.com', '--max-host-claims-per-namespace', '3'], {});
  const published: PublishedPolicy = {
    identity: 'op-1', publishedAt: '2026-11-28T20:00:00.000Z', lease: 'serverlessapp-system/serverlessapp-operator-leader',
    settings: { policy: validationPolicy(config), localGateway: config.localGateway, router: config.router, inPlaceBounds: true, clusterLocal: true, cacheScope: 'namespace' },
  };

  it('reads back exactly what was published: the plan judges by the same policy values the operator enforces', () => {
    const cm = policyConfigMap('serverlessapp-system', published);
    assert.equal(cm.metadata.name, POLICY_CONFIGMAP);
    assert.equal(cm.metadata.namespace, 'serverlessapp-system');
    assert.deepEqual(readPolicyConfigMap(JSON.parse(JSON.stringify(cm))), published);
  });

  it('reads nothing from a ConfigMap that holds no policy of this version (absent, empty, not JSON, another shape)', () => {
    for (const cm of [undefined, {}, { data: {} as Record<string, string> }, { data: { 'policy.json': '{' } }, { data: { 'policy.json': '{"identity":"x"}' } }]) assert.equal(readPolicyConfigMap(cm), undefined, JSON.stringify(cm));
  });
});
