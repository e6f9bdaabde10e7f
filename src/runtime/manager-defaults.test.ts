import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parse } from 'yaml';
import { DEFAULT_LEASE_NAME, DEFAULT_METRICS_ADDR, DEFAULT_PROBE_ADDR, newReplicaIdentity } from './manager-defaults.ts';

const chart = parse(readFileSync(new URL('../../charts/serverlessapp-operator/values.yaml', import.meta.url), 'utf8')) as {
  leaderElection: { leaseName: string }; metrics: { port: number }; healthProbePort: number;
};

describe('the manager\'s defaults', () => {
  // The chart's Role grants the Lease by name: a manager without a name must ask for that one.
  const asDeployed: Array<[string, string, string]> = [
    ['Lease name', DEFAULT_LEASE_NAME, chart.leaderElection.leaseName],
    ['metrics address', DEFAULT_METRICS_ADDR, `:${chart.metrics.port}`],
    ['probe address', DEFAULT_PROBE_ADDR, `:${chart.healthProbePort}`],
  ];
  for (const [what, ours, chartsOwn] of asDeployed) it(`${what} is the Helm chart's`, () => assert.equal(ours, chartsOwn));

  it('names each replica anew, hostname_uuid as client-go does, so two processes never share a name', () => {
    const [a, b] = [newReplicaIdentity(), newReplicaIdentity()];
    assert.ok(a.startsWith(`${hostname()}_`), a);
    assert.match(a.slice(hostname().length + 1), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.notEqual(a, b);
  });
});
