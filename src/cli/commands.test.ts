import assert from 'node:assert/strict';
import type { ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { FieldSet } from '../runtime/apply.ts';
import { CommandError, ownedControls, parseWeight, rolloutEdit, type LiveApp, type RolloutCommand } from './commands.ts';

const candidate = { version: 'b2b2b2b2b2', revision: 'shop-00002', image: 'ghcr.io/acme/shop:2', summary: 'shop:2', ready: true, warm: true };
const stable = { version: 'a1a1a1a1a1', revision: 'shop-00001', image: 'ghcr.io/acme/shop:1', summary: 'shop:1', ready: true, warm: true };

/** fieldsV1 for spec.rollout.<fields>. */
const rolloutFields = (...fields: string[]): FieldSet => ({ 'f:spec': { 'f:rollout': Object.fromEntries(fields.map((f) => [`f:${f}`, {}])) } });

function shop(o: { rollout?: LiveApp['spec']['rollout']; status?: ServerlessAppStatus; owners?: Record<string, string[]>; generation?: number } = {}): LiveApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: {
      name: 'shop', namespace: 'demo', resourceVersion: '42', ...(o.generation !== undefined ? { generation: o.generation } : {}),
      managedFields: Object.entries(o.owners ?? {}).map(([manager, fields]) => ({ manager, operation: 'Apply', fieldsV1: rolloutFields(...fields) })),
    },
    spec: { container: { image: 'ghcr.io/acme/shop:2' }, ...(o.rollout ? { rollout: o.rollout } : {}) },
    ...(o.status ? { status: o.status } : {}),
  };
}

const canary: ServerlessAppStatus = { phase: 'Canary', versions: { stable, candidate } };
const failed: ServerlessAppStatus = { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'WarmupFailed', message: 'x', retry: 0 } } };
/** What the operator writes for a spec it will not serve (planner/status.ts invalidSpecStatus), for generation `g`. */
const gatewayRefused = (status: ServerlessAppStatus, g: number): ServerlessAppStatus => ({
  ...status, observedGeneration: g,
  conditions: [{ type: 'Ready', status: 'False', reason: 'GatewayNotAllowed', message: 'spec.gateways[0]: gateway "istio-system/public" is not allowed; allowed: demo/*. The running version is left as it was.', lastTransitionTime: '2026-11-23T09:00:00Z' }],
});

describe('kubectl sapp rollout commands (apply bodies)', () => {
  const cases: Array<{ name: string; app: LiveApp; command: RolloutCommand; rollout: object; done: RegExp }> = [
    { name: 'pause sets paused', app: shop({ status: canary }), command: { verb: 'pause' }, rollout: { paused: true }, done: /^paused$/ },
    { name: 'resume sets paused false', app: shop({ rollout: { paused: true }, status: canary, owners: { 'kubectl-sapp': ['paused'] } }), command: { verb: 'resume' }, rollout: { paused: false }, done: /^resumed$/ },
    {
      name: 'set-weight after pause keeps paused (SSA would drop a field kubectl-sapp stops stating)',
      app: shop({ rollout: { paused: true, steps: [10, 50] }, status: canary, owners: { 'kubectl-sapp': ['paused'], kubectl: ['steps'] } }),
      command: { verb: 'set-weight', weight: 20 }, rollout: { paused: true, canaryPercent: 20 }, done: /^canary weight set to 20%$/,
    },
    {
      name: 'states only the controls kubectl-sapp owns, at their current values',
      app: shop({ rollout: { paused: true, canaryPercent: 30, retry: 2 }, status: canary, owners: { 'kubectl-sapp': ['canaryPercent'], argocd: ['paused', 'retry'] } }),
      command: { verb: 'abort' }, rollout: { canaryPercent: 30, abort: true }, done: /^aborted: all traffic back on the stable version, candidate b2b2b2b2b2/,
    },
    {
      name: 'leaves out an owned control whose value is gone',
      app: shop({ rollout: {}, status: canary, owners: { 'kubectl-sapp': ['paused'] } }),
      command: { verb: 'set-weight', weight: 0 }, rollout: { canaryPercent: 0 }, done: /^canary weight set to 0%$/,
    },
    {
      name: 'retry of a failure bumps rollout.retry past the value in force when it failed',
      app: shop({ rollout: { retry: 3 }, status: { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'AnalysisFailed', message: 'error-rate 0.2 > 0.05', retry: 3 } } } }),
      command: { verb: 'retry' }, rollout: { retry: 4 }, done: /^retried \(rollout\.retry 4\)/,
    },
    {
      name: 'retry of a failure before any retry sets 1',
      app: shop({ status: { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'ProgressDeadlineExceeded', message: 'not ready after 10m' } } } }),
      command: { verb: 'retry' }, rollout: { retry: 1 }, done: /rollout\.retry 1/,
    },
    {
      name: 'retry twice before the operator noticed stays one retry',
      app: shop({ rollout: { retry: 1 }, status: { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'WarmupFailed', message: 'x', retry: 0 } } }, owners: { 'kubectl-sapp': ['retry'] } }),
      command: { verb: 'retry' }, rollout: { retry: 1 }, done: /rollout\.retry 1/,
    },
    {
      name: 'retry of an aborted rollout lifts the abort',
      app: shop({ rollout: { abort: true }, status: { ...canary, phase: 'Aborted' }, owners: { 'kubectl-sapp': ['abort'] } }),
      command: { verb: 'retry' }, rollout: { abort: false }, done: /^abort lifted/,
    },
    {
      name: 'retry of a failure whose refused spec was changed since (the status is about an older generation) bumps rollout.retry',
      app: shop({ generation: 5, status: gatewayRefused(failed, 4) }),
      command: { verb: 'retry' }, rollout: { retry: 1 }, done: /rollout\.retry 1/,
    },
    {
      name: 'promote writes the candidate\'s version hash',
      app: shop({ status: canary }), command: { verb: 'promote' }, rollout: { promote: 'b2b2b2b2b2' }, done: /^promoting candidate b2b2b2b2b2 \(shop:2\)$/,
    },
    {
      name: 'promote of a candidate whose failure a retry has lifted (rollout.retry bumped, the operator not yet reconciled)',
      app: shop({ rollout: { retry: 1 }, status: { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'AnalysisFailed', message: 'error-rate too high' } } } }),
      command: { verb: 'promote' }, rollout: { promote: 'b2b2b2b2b2' }, done: /^promoting candidate b2b2b2b2b2/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const edit = rolloutEdit(c.app, c.command);
      assert.deepEqual(edit.body, {
        apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
        metadata: { name: 'shop', namespace: 'demo', resourceVersion: '42' },
        spec: { rollout: c.rollout },
      });
      assert.match(edit.done, c.done);
    });
  }

  const refusals: Array<{ name: string; app: LiveApp; command: RolloutCommand; error: RegExp }> = [
    { name: 'promote without a candidate', app: shop({ status: { phase: 'Stable', versions: { stable } } }), command: { verb: 'promote' }, error: /^shop has no candidate to promote \(phase Stable\): status\.versions\.candidate is empty$/ },
    { name: 'promote before the operator reported anything', app: shop(), command: { verb: 'promote' }, error: /^shop has no candidate to promote \(phase unknown\)/ },
    {
      name: 'promote of a failed candidate',
      app: shop({ status: { ...canary, phase: 'Failed', canary: { failure: { version: candidate.version, reason: 'AnalysisFailed', message: 'error-rate too high' } } } }),
      command: { verb: 'promote' }, error: /candidate b2b2b2b2b2 of shop failed \(AnalysisFailed: error-rate too high\); .*kubectl sapp retry shop/,
    },
    { name: 'promote of an aborted rollout', app: shop({ rollout: { abort: true }, status: { ...canary, phase: 'Aborted' } }), command: { verb: 'promote' }, error: /aborted \(spec\.rollout\.abort\): run `kubectl sapp retry shop`/ },
    { name: 'abort without a candidate', app: shop({ status: { phase: 'Stable', versions: { stable } } }), command: { verb: 'abort' }, error: /^shop has no candidate to abort \(phase Stable\)$/ },
    { name: 'retry of a healthy rollout', app: shop({ status: canary }), command: { verb: 'retry' }, error: /^shop has nothing to retry: it is Canary, not Failed or Aborted$/ },
    {
      name: 'retry of a new app whose spec the operator refused (phase Pending): only a spec change helps',
      app: shop({ generation: 1, status: gatewayRefused({ phase: 'Pending' }, 1) }), command: { verb: 'retry' },
      error: /^shop cannot be retried: the spec is invalid: spec\.gateways\[0\]: gateway "istio-system\/public" is not allowed; allowed: demo\/\*\. The running version is left as it was\.; fix the spec, retry is for a failed candidate$/,
    },
    {
      name: 'retry of a failed candidate while the current spec is refused: the retry would change nothing',
      app: shop({ generation: 4, status: gatewayRefused(failed, 4) }), command: { verb: 'retry' }, error: /^shop cannot be retried: the spec is invalid: spec\.gateways\[0\]/,
    },
    {
      name: 'retry of an aborted rollout while the current spec is refused',
      app: shop({ generation: 4, rollout: { abort: true }, status: gatewayRefused({ ...canary, phase: 'Aborted' }, 4) }), command: { verb: 'retry' }, error: /the spec is invalid: .*; fix the spec, retry is for a failed candidate$/,
    },
    { name: 'set-weight above 100', app: shop({ status: canary }), command: { verb: 'set-weight', weight: 101 }, error: /^set-weight takes a whole percentage from 0 to 100, not 101$/ },
    { name: 'set-weight of a fraction', app: shop({ status: canary }), command: { verb: 'set-weight', weight: 2.5 }, error: /not 2\.5$/ },
  ];
  for (const r of refusals) {
    it(`refuses ${r.name}, saying why`, () => {
      assert.throws(() => rolloutEdit(r.app, r.command), (err: Error) => err instanceof CommandError && r.error.test(err.message));
    });
  }

  it('warns about fields it takes over from another manager with a different value, not about shared equal ones', () => {
    const app = shop({ rollout: { canaryPercent: 10, paused: true }, status: canary, owners: { 'argocd-controller': ['canaryPercent', 'paused'], 'kubectl-sapp': ['paused'] } });
    assert.deepEqual(rolloutEdit(app, { verb: 'set-weight', weight: 40 }).takenOver, [{ field: 'spec.rollout.canaryPercent', managers: ['argocd-controller'] }]);
    assert.deepEqual(rolloutEdit(app, { verb: 'pause' }).takenOver, []);
  });

  it('reads ownership from its own Apply entry only, not from a status write or another manager', () => {
    const app = shop({ owners: { kubectl: ['canaryPercent'] } });
    app.metadata.managedFields!.push(
      { manager: 'kubectl-sapp', operation: 'Apply', fieldsV1: rolloutFields('paused', 'retry') },
      { manager: 'kubectl-sapp', operation: 'Apply', subresource: 'status', fieldsV1: rolloutFields('abort') },
    );
    assert.deepEqual(ownedControls(app), ['paused', 'retry']);
  });

  it('parses a weight argument strictly', () => {
    assert.equal(parseWeight('0'), 0);
    assert.equal(parseWeight('100'), 100);
    for (const bad of ['101', '-1', '2.5', '20%', '', 'ten']) assert.throws(() => parseWeight(bad), /whole percentage from 0 to 100/);
  });
});
