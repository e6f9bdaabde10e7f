import assert from 'node:assert/strict';
import type { ServerlessApp, ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../util/conditions.ts';
import { coalescedWrite, invalidSpecStatus, significantStatus, withConditions } from './status.ts';
import type { KubeClient } from '../runtime/client.ts';
import { StatusWriter } from '../runtime/status.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';

const base: ServerlessAppStatus = {
  observedGeneration: 2, phase: 'Canary',
  conditions: [
    { type: 'Ready', status: 'False', reason: 'Deploying', message: 'waiting', lastTransitionTime: '2026-11-23T09:00:00Z' },
    { type: 'WorkloadReady', status: 'Unknown', reason: 'RevisionMissing', message: 'Configuration is waiting', lastTransitionTime: '2026-11-23T09:00:00Z' },
  ],
  versions: { stable: { version: 'v1', revision: 'shop-1', ready: false, warm: false, replicas: 0 } },
  traffic: [],
};

/** What kstatus and Argo CD read: each change of Reconciling, Stalled or Paused is written at once, in any phase. */
const kstatusChanges: Array<[string, (s: ServerlessAppStatus) => void]> = [
  ['Reconciling appearing', (s) => { s.conditions!.push({ type: 'Reconciling', status: 'True', reason: 'Deploying', message: '', lastTransitionTime: '2026-11-23T09:00:00Z' }); }],
  ['Stalled appearing', (s) => { s.conditions!.push({ type: 'Stalled', status: 'True', reason: 'ProgressDeadlineExceeded', message: '', lastTransitionTime: '2026-11-23T09:00:00Z' }); }],
  ['Paused appearing', (s) => { s.conditions!.push({ type: 'Paused', status: 'True', reason: 'RolloutPaused', message: '', lastTransitionTime: '2026-11-23T09:00:00Z' }); }],
];

describe('significant status (what is written at once)', () => {
  const progress: Array<[string, (s: ServerlessAppStatus) => void]> = [
    ['a message', (s) => { s.conditions![0]!.message = 'still waiting'; }],
    ['the data plane\'s reason while it works', (s) => { s.conditions![1]!.reason = 'Deploying'; }],
    ['a replica count or readiness of a version', (s) => { s.versions!.stable!.replicas = 1; s.versions!.stable!.ready = true; }],
  ];
  for (const [what, change] of progress) {
    it(`leaves out ${what}`, () => {
      const next = structuredClone(base);
      change(next);
      assert.deepEqual(significantStatus(next), significantStatus(base));
    });
  }
  const waitedFor: Array<[string, (s: ServerlessAppStatus) => void]> = [
    ['the phase', (s) => { s.phase = 'Stable'; }],
    ['a condition\'s status', (s) => { s.conditions![1]!.status = 'True'; }],
    ['Ready\'s reason (an error to show)', (s) => { s.conditions![0]!.reason = 'ApplyRejected'; }],
    ['the traffic split', (s) => { s.traffic = [{ revision: 'shop-1', percent: 100 }]; }],
    ['a new generation observed', (s) => { s.observedGeneration = 3; }],
    ...kstatusChanges,
  ];
  for (const [what, change] of waitedFor) {
    it(`keeps ${what}`, () => {
      const next = structuredClone(base);
      change(next);
      assert.notDeepEqual(significantStatus(next), significantStatus(base));
    });
  }
});

describe('significant status on a first start (phase Pending)', () => {
  const starting: ServerlessAppStatus = { ...structuredClone(base), phase: 'Pending' };
  const progress: Array<[string, (s: ServerlessAppStatus) => void]> = [
    ['the data plane\'s reasons while it works (Ready Unknown)', (s) => { s.conditions![1]!.reason = 'OutOfDate'; s.conditions![1]!.message = 'Configuration is waiting for a Revision'; }],
    ['Ready\'s reason while it waits (Knative\'s RevisionMissing)', (s) => { s.conditions![0]!.reason = 'RevisionMissing'; }],
    ['a URL and a split the route reports before it is ready', (s) => { s.url = 'http://shop.team-a.svc.cluster.local'; s.traffic = [{ revision: 'shop-1', percent: 100 }]; }],
  ];
  for (const [what, change] of progress) {
    it(`leaves out ${what}`, () => {
      const next = structuredClone(starting);
      change(next);
      assert.deepEqual(significantStatus(next), significantStatus(starting));
    });
  }
  const waitedFor: Array<[string, (s: ServerlessAppStatus) => void]> = [
    ['its end: Ready', (s) => { s.phase = 'Stable'; s.conditions![0]!.status = 'True'; }],
    ['its end: Failed', (s) => { s.phase = 'Failed'; }],
    ['the data plane reporting a problem (its Ready False, e.g. Unschedulable)', (s) => { s.conditions![1]!.status = 'False'; s.conditions![1]!.reason = 'RevisionFailed'; }],
    ['a new generation observed', (s) => { s.observedGeneration = 3; }],
    ['that its version became warm, which the planner reads back (an initial-scale buffer does not stay)', (s) => { s.prewarm = { version: 'v1', startedAt: '2026-11-23T09:00:01Z', warmedAt: '2026-11-23T09:00:02Z' }; }],
    ['when prewarming started, which a warmup deadline counts from', (s) => { s.prewarm = { version: 'v1', startedAt: '2026-11-23T09:00:01Z' }; }],
    ...kstatusChanges,
  ];
  for (const [what, change] of waitedFor) {
    it(`keeps ${what}`, () => {
      const next = structuredClone(starting);
      change(next);
      assert.notDeepEqual(significantStatus(next), significantStatus(starting));
    });
  }
  it('a first status differs from the default a new app reads as', () => {
    assert.notDeepEqual(significantStatus({ observedGeneration: 0, phase: 'Pending' }), significantStatus({ ...starting, observedGeneration: 1 }));
  });
});

describe('significant status: what is in progress, and why it stalled', () => {
  const condition = (type: string, reason: string, message = '') => ({ type, status: 'True' as const, reason, message, lastTransitionTime: '2026-11-23T09:00:00Z' });
  for (const phase of ['Pending', 'Canary'] as const) {
    const withOne = (c: ReturnType<typeof condition>): ServerlessAppStatus => ({ ...structuredClone(base), phase, conditions: [...structuredClone(base.conditions!), c] });
    it(`keeps Reconciling's reason in phase ${phase} (deploying, then prewarming)`, () => {
      assert.notDeepEqual(significantStatus(withOne(condition('Reconciling', 'Deploying'))), significantStatus(withOne(condition('Reconciling', 'Prewarming'))));
    });
    it(`keeps Stalled's reason in phase ${phase}`, () => {
      assert.notDeepEqual(significantStatus(withOne(condition('Stalled', 'RevisionFailed'))), significantStatus(withOne(condition('Stalled', 'ProgressDeadlineExceeded'))));
    });
    it(`leaves out Reconciling's message in phase ${phase}`, () => {
      assert.deepEqual(significantStatus(withOne(condition('Reconciling', 'Deploying', 'a'))), significantStatus(withOne(condition('Reconciling', 'Deploying', 'b'))));
    });
  }
});

describe('conditions judged together (withConditions)', () => {
  const before: ServerlessAppStatus = {
    observedGeneration: 2,
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Serving', message: 'v1', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
      { type: 'Reconciling', status: 'True', reason: 'Deploying', message: 'v2', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
    ],
  };
  const app = { metadata: { name: 'shop', namespace: 'team-a', generation: 3 }, spec: {}, status: before } as unknown as ServerlessApp;
  const now = new Date('2026-11-23T10:00:00Z');
  const list = withConditions(app, [{ type: 'Ready', status: 'True', reason: 'Serving', message: 'v2' }, { type: 'CanaryProgressing', status: 'False', reason: 'NoCandidate', message: '' }], now);

  it('stamps every condition with the generation it judged', () => assert.deepEqual(list.map((c) => c.observedGeneration), [3, 3]));
  it('drops a condition of ours not judged true any more (Reconciling absent when normal)', () => assert.deepEqual(list.map((c) => c.type), ['Ready', 'CanaryProgressing']));
  it('keeps the transition time of a status that did not flip', () => assert.deepEqual(list.map((c) => c.lastTransitionTime), ['2026-11-23T09:00:00Z', '2026-11-23T10:00:00Z']));
});

describe('how progress is written (coalescedWrite, as the status writer carries it out)', () => {
  /** The controller's status writes for a report in coalesce mode, on a manual clock, to an API server that keeps the last write. */
  function reconciles() {
    const clock = new ManualClock();
    const written: ServerlessAppStatus[] = [];
    const client = { apply: async (o: { status: ServerlessAppStatus }) => { written.push(o.status); return o; } } as unknown as KubeClient;
    const writer = new StatusWriter(client, { clock });
    const report = (status: ServerlessAppStatus) => {
      const app = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'team-a', uid: 'u1', generation: 2 }, status: written.at(-1) };
      const write = coalescedWrite(status);
      return writer.writeCoalesced(app, status, write.significant, write.windowMs);
    };
    return { clock, written, report };
  }
  const changed = (from: ServerlessAppStatus, change: (s: ServerlessAppStatus) => void) => { const s = structuredClone(from); change(s); return s; };
  const starting: ServerlessAppStatus = { ...structuredClone(base), phase: 'Pending' };

  it('writes later progress at most every 5 s after the last write, saying when to look again, and a significant change at once', async () => {
    const r = reconciles();
    const progress = (n: number) => changed(base, (s) => { s.conditions![0]!.message = `still waiting (${n})`; });
    assert.deepEqual(await r.report(base), { wrote: true });
    r.clock.advance(1_000);
    assert.deepEqual(await r.report(progress(1)), { wrote: false, retryInMs: 4_000 });
    r.clock.advance(3_999);
    assert.deepEqual(await r.report(progress(2)), { wrote: false, retryInMs: 1 });
    r.clock.advance(1);
    assert.deepEqual(await r.report(progress(2)), { wrote: true }, '5 s after the last write');
    r.clock.advance(1);
    assert.deepEqual(await r.report(changed(progress(3), (s) => { s.phase = 'Stable'; })), { wrote: true }, 'a significant change: at once');
    assert.deepEqual(r.written.map((s) => [s.phase, s.conditions![0]!.message]), [['Canary', 'waiting'], ['Canary', 'still waiting (2)'], ['Stable', 'still waiting (3)']]);
  });

  it('writes a first start\'s progress only along with a significant change, however long it waits', async () => {
    const r = reconciles();
    const progress = changed(starting, (s) => { s.conditions![1]!.reason = 'OutOfDate'; s.conditions![1]!.message = 'Configuration is waiting for a Revision'; });
    assert.deepEqual(await r.report(starting), { wrote: true });
    r.clock.advance(1_000);
    assert.deepEqual(await r.report(progress), { wrote: false }, 'no time to look again: progress alone is never written');
    r.clock.advance(10 * 60_000);
    assert.deepEqual(await r.report(progress), { wrote: false }, 'nor after ten minutes');
    const problem = changed(progress, (s) => { s.conditions![1]!.status = 'False'; s.conditions![1]!.reason = 'RevisionFailed'; });
    assert.deepEqual(await r.report(problem), { wrote: true }, 'the data plane reporting a problem');
    assert.deepEqual(r.written.map((s) => [s.conditions![1]!.status, s.conditions![1]!.message]), [['Unknown', 'Configuration is waiting'], ['False', 'Configuration is waiting for a Revision']]);
  });
});

describe('a spec the operator will not serve (invalidSpecStatus)', () => {
  const problems = [{ reason: 'GatewayNotAllowed' as const, field: 'spec.gateways[0]', message: 'gateway "istio-system/public" is not allowed; allowed: demo/*' }];
  const now = new Date('2026-11-23T10:00:00Z');
  const appWith = (status: ServerlessAppStatus | undefined): ServerlessApp => ({
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: 'shop', namespace: 'demo', generation: 3 },
    spec: { container: { image: 'ghcr.io/acme/shop:2' } }, ...(status ? { status } : {}),
  });

  it('leaves a new app Pending, not Failed (Failed is a failed candidate\'s, which retry starts again), Stalled and Ready=False naming the field', () => {
    for (const status of [undefined, { phase: 'Pending' as const }]) {
      const s = invalidSpecStatus(appWith(status), problems, now);
      assert.equal(s.phase, 'Pending');
      assert.equal(s.observedGeneration, 3);
      for (const type of ['Ready', 'Stalled']) {
        const c = findCondition(s.conditions, type);
        assert.deepEqual([c?.status, c?.reason], [type === 'Ready' ? 'False' : 'True', 'GatewayNotAllowed']);
        assert.match(c!.message, /^spec\.gateways\[0\]: gateway "istio-system\/public" is not allowed; allowed: demo\/\*\. The running version is left as it was\.$/);
      }
    }
  });

  it('claims the new generation only with conditions judged for it: no Reconciling, no condition of the data plane it did not read', () => {
    const serving: ServerlessAppStatus = {
      ...base, observedGeneration: 2, phase: 'Stable', prewarm: { version: 'v1', startedAt: '2026-11-23T08:00:00Z', warmedAt: '2026-11-23T08:01:00Z' },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Serving', message: 'v1', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
        { type: 'Reconciling', status: 'True', reason: 'WindowOpening', message: '1/2', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
        { type: 'WorkloadReady', status: 'True', reason: 'Ready', message: 'ok', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
        { type: 'Prewarmed', status: 'True', reason: 'Warm', message: 'ok', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
        { type: 'CanaryProgressing', status: 'False', reason: 'NoCandidate', message: '', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
        { type: 'Promoted', status: 'True', reason: 'Promoted', message: '', observedGeneration: 2, lastTransitionTime: '2026-11-23T09:00:00Z' },
      ],
    };
    const s = invalidSpecStatus(appWith(serving), problems, now);
    assert.deepEqual(s.conditions!.map((c) => [c.type, c.status, c.reason, c.observedGeneration]), [
      ['Ready', 'False', 'GatewayNotAllowed', 3], ['Stalled', 'True', 'GatewayNotAllowed', 3],
      ['CanaryProgressing', 'False', 'GatewayNotAllowed', 3], ['Promoted', 'False', 'GatewayNotAllowed', 3],
      ['Prewarmed', 'True', 'Warm', 3],
    ]);
    assert.deepEqual(s.prewarm, serving.prewarm, 'the warmth recorded, which Prewarmed says, kept');
    assert.ok(s.conditions!.every((c) => c.observedGeneration === s.observedGeneration));
  });

  it('keeps the message under the condition schema\'s maxLength: the first problems whole, the rest counted', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({ reason: 'SecretReferenceNotAllowed' as const, field: `spec.container.env[${i}].valueFrom.secretKeyRef`, message: 'x'.repeat(150) }));
    const message = findCondition(invalidSpecStatus(appWith(undefined), many, now).conditions, 'Stalled')!.message;
    assert.ok(message.length <= 32768, `${message.length} characters`);
    assert.match(message, /^spec\.container\.env\[0\]\.valueFrom\.secretKeyRef: x+; spec\.container\.env\[1\]/);
    const shown = message.split('; spec.').length;
    assert.match(message, new RegExp(`; …and ${1000 - shown} more\\. The running version is left as it was\\.$`));
  });

  it('keeps the phase and versions of an app that serves (what runs is left as it was)', () => {
    for (const phase of ['Stable', 'Canary', 'Failed'] as const) {
      const s = invalidSpecStatus(appWith({ ...base, phase }), problems, now);
      assert.equal(s.phase, phase);
      assert.deepEqual(s.versions, base.versions);
    }
  });
});
