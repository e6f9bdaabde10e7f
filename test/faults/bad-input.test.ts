// Fault injection: a seeded corpus of invalid ServerlessApps. Each must be
// refused with a message that names the broken field, by admission or by the
// operator (Ready=False with a reason saying why); the operator must stay up,
// create nothing for them, and leave the children of the apps that were there
// before exactly as they were, also when an existing app is edited into an
// invalid spec. On the rig's real Knative the data plane keeps writing those
// children's status (a revision scales to zero, reports its replicas), so
// "exactly as they were" is judged by what the operator could change: their
// generation (spec edits) and the operator's own writes in the audit log.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { startStandins, type Standins } from '../standin/standin.ts';
import { app, applyApp, condition, getApp, readyTrue, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { FAULT_COUNT, badApps, namesField, type BadApp } from './support/bad-apps.ts';
import { waitForAppExplained } from './support/diagnose.ts';
import { seedFor } from './support/seeded.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const CORPUS = 200;
const FLAGGED = new Set(['InvalidSpec', 'InvalidSchedule', 'GatewayNotAllowed']);
/** Every tenth fault is applied as an edit to this running app rather than as a new app. */
const VICTIM = 'victim';
const KEEP = ['keep-a', 'keep-b', VICTIM];

type Outcome = { kind: 'rejected' | 'flagged'; message: string; reason?: string; code?: number };

describe('invalid ServerlessApps (fault injection)', function () {
  this.timeout(600_000);
  let ns: string;
  let standins: Standins;
  let op: OperatorProcess | undefined;

  before(async () => {
    ns = await freshNamespace('badinput');
    standins = await startStandins({ kubeConfig: testEnv().kubeConfig(), namespaces: [ns], readyDelayMs: 100 });
    op = await OperatorProcess.start({ kubeconfigPath: testEnv().kubeconfigPath, namespaces: [ns], allowedGateways: ['istio-system/public', '{namespace}/*'] });
    await op.waitReady();
  });
  after(async () => {
    await op?.kill();
    await standins?.stop();
  });

  const validSpec = (name: string): AppSpec => ({ container: { image: `${name}:1` }, scaling: { minScale: 0, maxScale: 5 }, ingress: { hosts: [`${name}.example.com`] } });

  it(`refuses ${CORPUS} invalid apps naming the field, never crashes, and touches nothing that runs`, async () => {
    const rng = seedFor('bad input');
    for (const name of KEEP) await applyApp(app(ns, name, validSpec(name)));
    await Promise.all(KEEP.map((name) => waitForAppExplained(ns, name, readyTrue, `${name} ready`, 120_000)));
    // Whatever the operator still does for them once they are Ready (a last status write) is done before the snapshot.
    await op!.waitIdle();
    const before = await childGenerations();
    const corpusStart = new Date();

    const corpus = badApps(rng, CORPUS);
    const outcomes: Array<{ bad: BadApp; outcome: Outcome }> = [];
    const created: string[] = [];
    for (const [i, bad] of corpus.entries()) {
      const asEdit = i % 10 === 0;
      const name = asEdit ? VICTIM : `bad-${i}`;
      const outcome = await submit(name, bad.spec);
      if (outcome.kind === 'flagged' && !asEdit) created.push(name);
      outcomes.push({ bad, outcome });
    }

    const wrong = outcomes.filter(({ bad, outcome }) => !namesField(outcome.message, bad.field) || (outcome.kind === 'flagged' && !FLAGGED.has(outcome.reason ?? '')));
    assert.deepEqual(wrong.map(({ bad, outcome }) => `${bad.fault}: ${outcome.kind} ${outcome.reason ?? ''} without naming ${bad.field}: ${outcome.message}`), []);

    assert.ok(op!.alive, `the operator is still running:\n${op!.output().slice(-10).join('\n')}`);
    const crashes = op!.output().filter((l) => /unhandled|uncaught|operator failed/i.test(l));
    assert.deepEqual(crashes, [], 'no unhandled rejection or exception');
    for (const name of created) {
      assert.equal(await userClient().get(Kinds.KnativeService, ns, name), undefined, `nothing is rendered for the invalid app ${name}`);
    }
    // Every reconcile the corpus caused has run: a write it made to a running app's child would show now.
    await op!.waitIdle();
    assert.deepEqual(await childGenerations(), before, 'the children of the apps that were running are untouched');
    const operatorWrites = testEnv().auditWrites({ since: corpusStart, userAgentPrefix: 'serverlessapp-operator' })
      .filter((w) => w.namespace === ns && w.resource !== 'serverlessapps' && w.resource !== 'events' && isKeptChild(w.name ?? ''));
    assert.deepEqual(operatorWrites.map((w) => `${w.verb} ${w.resource}/${w.name} ${w.code}`), [], 'the operator wrote nothing to the children of the apps that were running');
    assert.equal(condition(await getApp(ns, VICTIM), 'Ready')?.status, 'False', 'the victim reports its invalid spec');

    const rejected = outcomes.filter((o) => o.outcome.kind === 'rejected').length;
    const codes = Object.entries(Object.groupBy(outcomes.filter((o) => o.outcome.code), (o) => String(o.outcome.code))).map(([c, l]) => `${l!.length}x ${c}`).join(', ');
    const reasons = [...new Set(outcomes.flatMap((o) => o.outcome.reason ?? []))].sort();
    console.log(`      ${CORPUS} invalid apps (${FAULT_COUNT} kinds of fault, ${CORPUS / 10} as edits of a running app): ${rejected} rejected at admission (${codes}), ${CORPUS - rejected} flagged by the operator (${reasons.join(', ')})`);
  });

  /** Applies the spec; returns admission's refusal, or the operator's Ready=False once it is written for this generation. */
  async function submit(name: string, spec: AppSpec): Promise<Outcome> {
    let applied: ServerlessApp;
    try {
      applied = await applyApp(app(ns, name, spec));
    } catch (e) {
      // A wrong type fails server-side apply's typed conversion, which the API server answers with 500, not 422.
      if (!(e instanceof ApiError) || ![400, 422, 500].includes(e.code)) throw e;
      return { kind: 'rejected', message: e.message, code: e.code };
    }
    const a = await waitFor(`the operator to judge ${name} generation ${applied.metadata.generation}`, async () => {
      const x = await getApp(ns, name);
      return x.status?.observedGeneration === applied.metadata.generation ? x : undefined;
    }, { timeoutMs: SETTLE_MS, intervalMs: 50 });
    const ready = condition(a, 'Ready');
    return { kind: 'flagged', message: ready?.status === 'False' ? ready.message : `accepted as valid (Ready=${ready?.status} ${ready?.reason})`, ...(ready?.reason ? { reason: ready.reason } : {}) };
  }

  /** generation and scale bounds (the annotations the operator sets on live revisions) of the children of the apps that ran before the corpus. */
  async function childGenerations(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const kind of [Kinds.KnativeService, Kinds.KnativeRevision, Kinds.VirtualService]) {
      const list = await userClient().list<{ metadata: { name: string; generation?: number; annotations?: Record<string, string> } }>(kind, ns);
      for (const o of list.items) {
        const bounds = Object.entries(o.metadata.annotations ?? {}).filter(([key]) => key.startsWith('autoscaling.knative.dev/')).sort();
        if (isKeptChild(o.metadata.name)) out[`${kind.plural}/${o.metadata.name}`] = `generation ${o.metadata.generation} ${JSON.stringify(bounds)}`;
      }
    }
    return out;
  }

  function isKeptChild(name: string): boolean {
    return KEEP.some((k) => name === k || name.startsWith(`${k}-`));
  }
});
