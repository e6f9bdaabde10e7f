// `kubectl sapp plan` against the rig's real API server and the real Knative
// and KServe, run as kubectl runs it (a child process, type-stripped). The plan is what the
// operator does: after an edit is planned and applied, the operator's child
// writes in the API server's audit log (its first reconcile of the new
// generation: the writes before its first status write for it) are exactly the
// plan's child operations that change something; re-applying the same YAML
// plans no change and the operator writes nothing.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCli } from '../../scripts/bundle-cli.ts';
import { stringify } from 'yaml';
import { hostClaimFor } from '../../src/api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import type { PlanDocument } from '../../src/cli/plan-document.ts';
import { writeLabel, type AuditWrite } from '../envtest/audit.ts';
import { app, applyApp, readyTrue, userClient, waitForApp, type AppSpec } from '../support/apps.ts';
import { freshNamespace, writesSince } from '../support/cluster.ts';
import { exitStatusInShell, kubeconfigIn, sapp } from '../support/kubectl-sapp.ts';
import { scratchDir } from '../support/scratch.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { assertQuietWindow } from '../support/quiet-window.ts';
import { Kinds } from '../../src/util/kinds.ts';

const OPERATOR = 'serverlessapp-operator';
const CHILDREN = new Set(['services', 'revisions', 'virtualservices', 'inferenceservices']);

function file(a: ServerlessApp): string {
  const path = join(scratchDir('kubectl-plan-app-'), 'app.yaml');
  writeFileSync(path, stringify(a));
  return path;
}

/** The writes the plan says the operator makes: "verb resource name", as the audit log names them. */
function plannedWrites(doc: PlanDocument): string[] {
  const resource = (kind: string) => `${kind.split('.')[0]!.toLowerCase()}s`;
  return [...new Set(doc.operations.filter((o) => o.change !== 'none').map((o) => `${o.change === 'delete' ? 'delete' : 'patch'} ${resource(o.kind)} ${o.name}`))].sort();
}

/**
 * The operator's child writes (no dry runs) in `ns` since `since`, up to its first status write of the
 * new generation there: the first one the API server took after it stored the edit. A status write the
 * operator planned before it saw the edit carries the old resourceVersion and is refused (409); the writes
 * between `since` and the edit are the previous generation's.
 */
function firstPassWrites(ns: string, name: string, since: Date): { writes: string[]; statusWritten: boolean } {
  const edit = writesSince(since, '').find((w) => w.namespace === ns && w.resource === 'serverlessapps' && !w.subresource && w.name === name && !w.dryRun && !w.userAgent.startsWith(OPERATOR) && (w.code ?? 0) < 300);
  assert.ok(edit, `the API server's record of the edit of ${ns}/${name}`);
  const all = writesSince(since, OPERATOR).filter((w) => w.namespace === ns && !w.dryRun && w.timestamp >= edit.timestamp);
  const status = all.findIndex((w) => w.resource === 'serverlessapps' && w.subresource === 'status' && (w.code ?? 0) < 300);
  const first = status < 0 ? all : all.slice(0, status);
  const label = (w: AuditWrite) => `${w.verb === 'delete' ? 'delete' : 'patch'} ${w.resource} ${w.name ?? ''}`;
  return { writes: [...new Set(first.filter((w) => CHILDREN.has(w.resource)).map(label))].sort(), statusWritten: status >= 0 };
}

/** Plan, apply and compare on one namespace's app: the steps both describes below take. */
function planSteps(ctx: { ns: () => string; kubeconfig: () => string }, name: string) {
  /** Plans `edited`: changes (exit 2), every child dry run accepted. */
  async function planOf(edited: ServerlessApp, what: string): Promise<PlanDocument> {
    const run = await sapp(ctx.kubeconfig(), ['plan', '-f', file(edited), '-o', 'json']);
    assert.equal(run.code, 2, `${what}: ${run.stdout}\n${run.stderr}`);
    const doc = JSON.parse(run.stdout) as PlanDocument;
    assert.ok(doc.operations.every((o) => o.dryRun.result === 'accepted'), `${what}: ${run.stdout}`);
    return doc;
  }

  /** After `since` (just before the apply), once the operator reported on the new generation and `settled` holds: its first pass's child writes are the plan's. */
  async function assertFirstPassIs(doc: PlanDocument, since: Date, settled: (a: ServerlessApp) => boolean, what: string): Promise<void> {
    const ns = ctx.ns();
    await waitForApp(ns, name, (a) => a.status?.observedGeneration === a.metadata.generation && settled(a), what, 180_000);
    const seen = firstPassWrites(ns, name, since);
    assert.ok(plannedWrites(doc).length > 0, `${what}: the plan writes a child (else the comparison below proves nothing)`);
    assert.ok(seen.statusWritten, `${what}: the operator wrote the status of the new generation`);
    assert.deepEqual(seen.writes, plannedWrites(doc), `${what}: operator writes ${JSON.stringify(writesSince(since, OPERATOR).filter((w) => w.namespace === ns && !w.dryRun).map(writeLabel))}`);
  }

  async function planApplyCompare(edited: ServerlessApp, settled: (a: ServerlessApp) => boolean, what: string): Promise<PlanDocument> {
    const doc = await planOf(edited, what);
    const since = new Date();
    await applyApp(edited);
    await assertFirstPassIs(doc, since, settled, what);
    return doc;
  }

  /**
   * The same YAML again: the plan says no changes (exit 0), and once applied the operator writes no child
   * for a while; then `next` is applied as the window's control (its writes show one would have been seen),
   * and its first pass compared with `nextPlan`.
   */
  async function assertNoOpThen(same: ServerlessApp, next: ServerlessApp, nextPlan: PlanDocument, settled: (a: ServerlessApp) => boolean, what: string): Promise<void> {
    const ns = ctx.ns();
    const planned = await sapp(ctx.kubeconfig(), ['plan', '-f', file(same)]);
    assert.equal(planned.code, 0, `${planned.stdout}\n${planned.stderr}`);
    assert.match(planned.stdout, /Result: {2}no changes/);
    const quietSince = new Date();
    await applyApp(same);
    let nextSince = new Date();
    await assertQuietWindow({
      what: 'the operator wrote a child after the same YAML was applied again',
      windowMs: 3_000,
      observe: () => writesSince(quietSince, OPERATOR).filter((w) => w.namespace === ns && !w.dryRun && CHILDREN.has(w.resource)).map(writeLabel),
      control: async () => { nextSince = new Date(); await applyApp(next); },
    });
    await assertFirstPassIs(nextPlan, nextSince, settled, what);
  }

  return { planOf, assertFirstPassIs, planApplyCompare, assertNoOpThen };
}

describe('kubectl sapp plan on the real Knative (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;
  let kubeconfig: string;
  const spec = (tag: string) => ({ container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0 }, rollout: { steps: [50], interval: '10m' } });
  const { planOf, assertNoOpThen, planApplyCompare } = planSteps({ ns: () => ns, kubeconfig: () => kubeconfig }, 'shop');

  before(async () => {
    ns = await freshNamespace('sapp-plan');
    kubeconfig = kubeconfigIn(ns);
    op = await startOperator({ namespaces: [ns] });
  });
  after(async () => op?.stop());

  it('a new app: planned as created (exit 2); usage errors exit 1, not 2', async () => {
    const planned = await sapp(kubeconfig, ['plan', '-f', file(app(ns, 'fresh', spec('1')))]);
    assert.equal(planned.code, 2, planned.stderr);
    assert.match(planned.stdout, /^Plan for serverlessapp .*\/fresh \(new\)\nResult:  changes\n/);
    assert.match(planned.stdout, /\+ Service\.serving\.knative\.dev fresh created/);
    const usage = await sapp(kubeconfig, ['plan']);
    assert.equal(usage.code, 1, 'a usage error is no "changes"');
  });

  it('the operator writes what the plan says: a new version, a canary step, a rollback, a promotion, a window edit; no changes and no writes for the same YAML', async () => {
    const v1 = app(ns, 'shop', spec('1'));
    await applyApp(v1);
    await waitForApp(ns, 'shop', (a) => readyTrue(a) && a.status?.phase === 'Stable', 'v1 Stable on Knative', 180_000);

    // As a CI step sees it ($? in a shell): 0 no changes, 2 changes, 1 refused or an error.
    const codes = [
      await exitStatusInShell(kubeconfig, ['plan', '-f', file(v1)]),
      await exitStatusInShell(kubeconfig, ['plan', '-f', file(app(ns, 'shop', spec('2')))]),
      await exitStatusInShell(kubeconfig, ['plan', '-f', file(app(ns, 'shop', { ...spec('2'), rollout: { steps: [0] } }))]),
      await exitStatusInShell(kubeconfig, ['plan', 'no-such-app']),
    ];
    assert.deepEqual(codes, [0, 2, 1, 1], 'same YAML, a new image, a step the schema refuses, an app not found');
    const next = await sapp(kubeconfig, ['plan', 'shop', '-o', 'json']);
    assert.equal(next.code, 0, `${next.stdout}\n${next.stderr}`);
    assert.equal((JSON.parse(next.stdout) as PlanDocument).apiVersion, 'serverlessapp.io/plan/v1');

    // A new version, planned now; then the same YAML applied again: no changes planned and no child written
    // (the new version, applied as the window's control, shows that a write would have been seen), then the new version's first pass.
    const v2 = app(ns, 'shop', spec('2'));
    const started = await planOf(v2, 'v2');
    assert.equal(started.rollout?.newVersion, true);
    assert.deepEqual(started.rollout?.steps.map((s) => s.weight), [50, 100]);
    assert.ok(started.operations.find((o) => o.id === 'workload')?.diff.some((c) => c.path === 'spec.template.spec.containers[0].image' && c.to === 'ghcr.io/acme/shop:2'), JSON.stringify(started.operations));
    await assertNoOpThen(v1, v2, started, (a) => a.status?.phase === 'Canary', 'v2 the candidate');
    // The canary step: v2 ready gets its 50%.
    await waitForApp(ns, 'shop', (a) => a.status?.canary?.trafficPercent === 50, 'v2 at its step, 50%', 180_000);

    // A rollback (canaryPercent 0): the traffic goes back to v1.
    const rolledBack = await planApplyCompare(app(ns, 'shop', { ...spec('2'), rollout: { steps: [50], interval: '10m', canaryPercent: 0 } }), (a) => a.status?.phase === 'RolledBack', 'v2 rolled back');
    assert.equal(rolledBack.rollout?.phase.next, 'RolledBack');
    // A promotion (canaryPercent 100).
    await planApplyCompare(app(ns, 'shop', { ...spec('2'), rollout: { steps: [50], interval: '10m', canaryPercent: 100 } }), (a) => a.status?.phase === 'Promoting' || a.status?.phase === 'Stable', 'v2 promoting');
    await waitForApp(ns, 'shop', (a) => a.status?.phase === 'Stable' && a.status.versions?.stable?.image === 'ghcr.io/acme/shop:2', 'v2 stable', 180_000);
    // A window open now: its minimum goes onto the serving revision, in place.
    const windowed = { ...spec('2'), rollout: { steps: [50], interval: '10m', canaryPercent: 100 }, scaling: { minScale: 0, windows: [{ name: 'always', schedule: '* * * * *', duration: '2m', minScale: 1 }] } };
    const windowEdit = await planApplyCompare(app(ns, 'shop', windowed), (a) => a.status?.scaling?.openWindows?.includes('always') === true, 'the window open');
    assert.equal(windowEdit.rollout?.newVersion, false);
    assert.ok(windowEdit.operations.some((o) => o.id.startsWith('revision-bounds/') && o.change === 'update'), JSON.stringify(windowEdit.operations));
  });

  it('an edit the API server refuses (schema) and one the platform refuses: exit 1 with their messages', async () => {
    const bad = await sapp(kubeconfig, ['plan', '-f', file(app(ns, 'shop', { ...spec('3'), rollout: { steps: [0] } }))]);
    assert.equal(bad.code, 1, `${bad.stdout}\n${bad.stderr}`);
    assert.match(bad.stdout, /Result: {2}refused\n[\s\S]*the API server, ServerlessApp shop: .*steps/);
    const policy = await sapp(kubeconfig, ['plan', '-f', file(app(ns, 'shop', { ...spec('3'), container: { image: 'ghcr.io/acme/shop:3', serviceAccountName: 'admin' } }))]);
    assert.equal(policy.code, 1, `${policy.stdout}\n${policy.stderr}`);
    assert.match(policy.stdout, /the operator \(ServiceAccountNotAllowed\): spec\.container\.serviceAccountName/);
  });

  it('the plugin as built (bundled by esbuild, as `npm run build` ships it) plans exactly as the source does', async () => {
    // Under node_modules, so what the bundle leaves to node (cron-parser, re2js) resolves as it does from dist/.
    const cache = fileURLToPath(new URL('../../node_modules/.cache', import.meta.url));
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'kubectl-sapp-bundle-'));
    try {
      const files = await bundleCli(dir);
      assert.ok(files.length > 1, `the planner stays a lazily loaded chunk: ${files.join(', ')}`);
      const built = join(dir, 'kubectl-sapp.js');
      const windowed = { ...spec('4'), scaling: { minScale: 0, windows: [{ name: 'nights', schedule: '0 22 * * *', timeZone: 'Europe/Berlin', duration: '8h', minScale: 2 }] } };
      const cases: Array<[string, string[]]> = [
        ['a canary edit with a window (text)', ['plan', '-f', file(app(ns, 'shop', windowed))]],
        ['the same edit (JSON)', ['plan', '-f', file(app(ns, 'shop', windowed)), '-o', 'json']],
        ['an edit the schema refuses', ['plan', '-f', file(app(ns, 'shop', { ...spec('4'), rollout: { steps: [0] } }))]],
        ['what happens next with no edit', ['plan', 'shop']],
        ['the help', ['--help']],
      ];
      // Both runs plan at their own moment: the times they print are the only difference allowed.
      const timeless = (text: string) => text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
      for (const [what, args] of cases) {
        const [source, bundle] = [await sapp(kubeconfig, args), await sapp(kubeconfig, args, undefined, built)];
        assert.equal(bundle.code, source.code, `${what}: exit code; bundle stderr: ${bundle.stderr}`);
        assert.equal(timeless(bundle.stdout), timeless(source.stdout), `${what}: output`);
        assert.ok(source.stdout.length > 0, `${what}: printed something`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a host another namespace claims (a HostClaim read by name): refused with the operator\'s HostConflict, exit 1', async () => {
    const host = `taken.${ns}.example.com`;
    await userClient().create(Kinds.HostClaim, hostClaimFor(host, `${ns}-other`)!);
    try {
      const run = await sapp(kubeconfig, ['plan', '-f', file(app(ns, 'hosted', { ...spec('1'), ingress: { hosts: [host] } }))]);
      assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
      assert.ok(run.stdout.includes(`the operator (HostConflict): spec.ingress.hosts[0]: host ${host} is claimed by another namespace; ask the platform team`), run.stdout);
      // A host no one holds: the operator's first pass only claims it.
      const free = await sapp(kubeconfig, ['plan', '-f', file(app(ns, 'hosted', { ...spec('1'), ingress: { hosts: [`free.${ns}.example.com`] } })), '-o', 'json']);
      assert.equal(free.code, 2, `${free.stdout}\n${free.stderr}`);
      assert.deepEqual((JSON.parse(free.stdout) as PlanDocument).operations.map((o) => [o.id, o.change, o.dryRun.result]), [[`host-claim/free.${ns}.example.com`, 'create', 'accepted']]);
    } finally {
      await userClient().delete(Kinds.HostClaim, undefined, host);
    }
  });
});

describe('kubectl sapp plan on the real KServe (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;
  let kubeconfig: string;
  const model = (version: string, rollout?: { canaryPercent: number }): AppSpec => ({
    model: { format: { name: 'sklearn' }, storageUri: `gs://models/fraud/${version}`, size: '1Gi', resources: { limits: { cpu: '1', memory: '2Gi' } } },
    scaling: { minScale: 0, maxScale: 4 },
    ...(rollout ? { rollout } : {}),
  });
  const { planOf, assertNoOpThen, planApplyCompare } = planSteps({ ns: () => ns, kubeconfig: () => kubeconfig }, 'fraud');

  before(async () => {
    ns = await freshNamespace('sapp-plan-kserve');
    kubeconfig = kubeconfigIn(ns);
    op = await startOperator({ namespaces: [ns] });
  });
  after(async () => op?.stop());

  it('the operator writes what the plan says on KServe: a new version at a canary weight, a canary step; no changes and no writes for the same YAML', async () => {
    const v1 = app(ns, 'fraud', model('v1'));
    await applyApp(v1);
    await waitForApp(ns, 'fraud', (a) => readyTrue(a) && a.status?.phase === 'Stable', 'v1 Stable on KServe', 180_000);

    // A new version at 20%, planned now; the same YAML applied again writes nothing; then the new version's first pass.
    const v2 = app(ns, 'fraud', model('v2', { canaryPercent: 20 }));
    const started = await planOf(v2, 'v2 at 20%');
    assert.equal(started.rollout?.newVersion, true);
    assert.ok(started.operations.find((o) => o.id === 'workload')?.diff.some((c) => c.path === 'spec.predictor.model.storageUri' && c.to === 'gs://models/fraud/v2'), JSON.stringify(started.operations));
    await assertNoOpThen(v1, v2, started, (a) => a.status?.phase === 'Canary', 'v2 the candidate on KServe');
    await waitForApp(ns, 'fraud', (a) => a.status?.canary?.trafficPercent === 20, 'v2 at 20%', 180_000);

    // A canary step: 20% -> 50%, KServe's canaryTrafficPercent.
    const step = await planApplyCompare(app(ns, 'fraud', model('v2', { canaryPercent: 50 })), (a) => a.status?.canary?.trafficPercent === 50, 'v2 at 50%');
    assert.equal(step.rollout?.version.version, started.rollout?.version.version, 'a step of the same candidate, no other version');
    assert.ok(step.operations.find((o) => o.id === 'workload')?.diff.some((c) => c.path === 'spec.predictor.canaryTrafficPercent' && c.to === 50), JSON.stringify(step.operations));
  });
});
