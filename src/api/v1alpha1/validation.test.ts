import assert from 'node:assert/strict';
import { containerApp } from '../../render/fixtures.ts';
import { gatewayAllowed, validateApp } from './validation.ts';

describe('controller-side validation', () => {
  const policy = { allowedGateways: ['istio-system/public', '{namespace}/*'] };

  it('accepts a valid app', () => {
    assert.deepEqual(validateApp(containerApp(), policy), []);
  });

  it('names the window and field of a bad cron expression or time zone (InvalidSchedule)', () => {
    const app = containerApp({ scaling: { windows: [
      { name: 'day', schedule: '0 25 * * *', duration: '8h', minScale: 2 },
      { name: 'night', schedule: '0 22 * * *', duration: '8h', timeZone: 'Mars/Olympus', minScale: 0 },
    ] } });
    const problems = validateApp(app, policy);
    assert.deepEqual(problems.map((p) => [p.reason, p.field]), [['InvalidSchedule', 'spec.scaling.windows[0].schedule'], ['InvalidSchedule', 'spec.scaling.windows[1].timeZone']]);
    assert.match(problems[0]!.message, /window "day"/);
  });

  it('rejects an invalid header regex, naming the rule', () => {
    const app = containerApp({ ingress: { hosts: ['a.example.com'] }, rollout: { match: [{ header: 'x', exact: 'y' }, { header: 'x-user', regex: '(unclosed' }] } });
    const [p] = validateApp(app, policy);
    assert.equal(p?.field, 'spec.rollout.match[1].regex');
    assert.equal(p?.reason, 'InvalidSpec');
  });

  it('rejects steps that do not increase', () => {
    assert.equal(validateApp(containerApp({ rollout: { steps: [10, 50, 25] } }), policy)[0]?.field, 'spec.rollout.steps');
  });

  it('allows only configured gateways (a namespace cannot attach to another team\'s gateway)', () => {
    assert.ok(gatewayAllowed('istio-system/public', 'team-a', policy.allowedGateways));
    assert.ok(gatewayAllowed('own-gw', 'team-a', policy.allowedGateways), 'own namespace via {namespace}/*');
    assert.ok(!gatewayAllowed('team-b/gw', 'team-a', policy.allowedGateways));
    const app = containerApp({ ingress: { hosts: ['a.example.com'], gateways: ['team-b/private'] } });
    const [p] = validateApp(app, policy);
    assert.equal(p?.reason, 'GatewayNotAllowed');
    assert.equal(p?.field, 'spec.ingress.gateways[0]');
  });
});
