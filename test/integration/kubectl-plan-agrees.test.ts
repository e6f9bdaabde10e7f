// `kubectl sapp plan -o json` beside the real `kubectl apply` (the rig's
// kubectl, at the control plane's pin): on every file of the schema-fuzzing
// corpus and on each case a pull-request check meets (a typo'd field, a file
// naming another namespace, a zone or cron the operator refuses), the plan's
// verdict on the ServerlessApp is the API server's verdict on `kubectl apply`,
// with the same message. And the policy a plan judges by is the running
// operator's, started as the README starts it (`node src/main.ts`, what `npm
// start` execs) or installed by the chart.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import type { PlanDocument, Refusal } from '../../src/cli/plan-document.ts';
import { POLICY_CONFIGMAP } from '../../src/runtime/policy-publication.ts';
import { seededRandom } from '../../src/testing/regex-sample.ts';
import { SchemaFuzzer } from '../../src/testing/schema-fuzz.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { app, applyApp, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { specSchemaOfCRD } from '../support/fuzz-harness.ts';
import { renderChart } from '../support/helm.ts';
import { kubectl } from '../support/kubectl.ts';
import { kubeconfigIn, sapp, type Run } from '../support/kubectl-sapp.ts';
import { OperatorProcess } from '../support/operator-process.ts';
import { scratchDir } from '../support/scratch.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const DEPLOYMENT: ResourceKind = { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
/** Generated specs (half from the schema's sweep, half random), past-a-bound values and deep nests; FUZZ_AGREE_CASES scales all three. */
const CASES = Number(process.env.FUZZ_AGREE_CASES ?? 60);
const IN_FLIGHT = 3;

/** `doc` as a YAML file (or JSON, which is YAML, for generated values that must reach both tools exactly as they are). */
function write(doc: object, as: 'yaml' | 'json' = 'yaml'): string {
  const path = join(scratchDir('plan-agrees-'), `app.${as}`);
  writeFileSync(path, as === 'json' ? JSON.stringify(doc) : stringify(doc));
  return path;
}

/** The plan's document (a plan that printed none is a finding); a run that exits 0, 1 or 2 prints one. */
function documentOf(run: Run, what: string): PlanDocument {
  assert.ok(run.code === 0 || run.code === 1 || run.code === 2, `${what}: plan exit ${run.code}\n${run.stderr}`);
  try {
    return JSON.parse(run.stdout) as PlanDocument;
  } catch {
    assert.fail(`${what}: plan -o json printed no document (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
}

/** The API server's refusal of the ServerlessApp itself, in the plan. */
const appRefusal = (doc: PlanDocument): Refusal | undefined => doc.refusals.find((r) => r.by === 'api-server' && r.kind === 'ServerlessApp');

/**
 * Whether kubectl said what the plan said: its message whole (kubectl prefixes "error when creating
 * FILE:"), or, where kubectl lays an invalid object's causes out one a line, each field the plan's
 * message names.
 */
function sameMessage(plan: string, kubectlSaid: string): boolean {
  if (kubectlSaid.includes(plan)) return true;
  const fields = plan.match(/\bspec(?:\.[\w-]+|\[[^\]]*\])+/g) ?? [];
  return fields.length > 0 && fields.every((f) => kubectlSaid.includes(f));
}

describe('kubectl sapp plan and kubectl apply agree (integration)', function () {
  this.timeout(900_000);
  let ns: string;
  let kubeconfig: string;
  const spec = (tag: string): AppSpec => ({ container: { image: `ghcr.io/acme/shop:${tag}`, port: 8080 }, scaling: { minScale: 0 } });

  before(async () => {
    ns = await freshNamespace('plan-agrees');
    kubeconfig = kubeconfigIn(ns);
  });

  /** Both verdicts on one file: plan -o json and kubectl apply --dry-run=server, with the same flags. */
  async function both(path: string, flags: string[] = []) {
    const [plan, apply] = await Promise.all([
      sapp(kubeconfig, ['plan', '-f', path, '-o', 'json', ...flags]),
      kubectl(kubeconfig, ['apply', '--dry-run=server', '-f', path, ...flags]),
    ]);
    return { plan, apply };
  }

  /** The finding for one file, or undefined when plan and kubectl agree. */
  async function disagreement(doc: object, what: string, as: 'yaml' | 'json' = 'yaml'): Promise<string | undefined> {
    const { plan, apply } = await both(write(doc, as));
    let planned: PlanDocument;
    try {
      planned = documentOf(plan, what);
    } catch (err) {
      return (err as Error).message;
    }
    const refusal = appRefusal(planned);
    if (!!refusal !== (apply.code !== 0)) return `${what}: kubectl apply ${apply.code === 0 ? 'accepts' : `refuses (${apply.stderr.trim()})`}, the plan ${refusal ? `refuses (${refusal.message})` : `does not (exit ${plan.code})`}`;
    if (refusal && !sameMessage(refusal.message, apply.stderr)) return `${what}: other words: plan "${refusal.message}", kubectl "${apply.stderr.trim()}"`;
    if (refusal && plan.code !== 1) return `${what}: refused, but the plan exits ${plan.code}`;
    return undefined;
  }

  it('a typo\'d field (spec.scaling.minscale): refused by both with the API server\'s message, exit 1, for a new app and an edit', async () => {
    const typo = { ...app(ns, 'typo', spec('1')), spec: { ...spec('1'), scaling: { minscale: 1 } } };
    assert.equal(await disagreement(typo, 'a new app'), undefined);
    const { plan } = await both(write(typo));
    assert.equal(plan.code, 1);
    assert.match(appRefusal(documentOf(plan, 'typo'))!.message, /unknown field "spec\.scaling\.minscale"/);
    // An edit of a stored app: the plan replaces it (PUT), kubectl patches it; both strict.
    await applyApp(app(ns, 'typo', spec('1')));
    assert.equal(await disagreement(typo, 'an edit'), undefined);
    const edit = await both(write(typo));
    assert.equal(edit.plan.code, 1, edit.plan.stdout);
    assert.notEqual(edit.apply.code, 0, 'kubectl apply refuses the edit too');
  });

  it('YAML as kubectl reads it: an unquoted `yes` is a boolean to both, so both refuse it as an env value', async () => {
    const path = join(scratchDir('plan-agrees-'), 'yes.yaml');
    writeFileSync(path, `apiVersion: serverlessapp.io/v1alpha1\nkind: ServerlessApp\nmetadata: {name: yaml11, namespace: ${ns}}\nspec:\n  container:\n    image: ghcr.io/acme/shop:1\n    env: [{name: DEBUG, value: yes}]\n`);
    const { plan, apply } = await both(path);
    assert.notEqual(apply.code, 0, 'kubectl sends true, which the schema refuses');
    assert.equal(plan.code, 1, plan.stdout);
    assert.ok(sameMessage(appRefusal(documentOf(plan, 'yes'))!.message, apply.stderr), `${plan.stdout}\n${apply.stderr}`);
  });

  it('a file naming another namespace than the context\'s: planned where kubectl applies it; with -n naming a third, both refuse with kubectl\'s words', async () => {
    const other = await freshNamespace('plan-agrees-other');
    const path = write(app(other, 'moved', spec('1')));
    const { plan, apply } = await both(path);
    assert.equal(apply.code, 0, apply.stderr);
    assert.match(apply.stdout, new RegExp(`serverlessapp.serverlessapp.io/moved created \\(server dry run\\)`));
    assert.equal(plan.code, 2, `${plan.stdout}\n${plan.stderr}`);
    assert.deepEqual(documentOf(plan, 'moved').app, { namespace: other, name: 'moved', exists: false });
    const third = await both(path, ['-n', ns]);
    assert.notEqual(third.apply.code, 0);
    assert.equal(third.plan.code, 1);
    const said = (r: Run) => r.stderr.replace(/^error: /, '').trim();
    assert.equal(said(third.plan), said(third.apply), 'the same words as kubectl');
    assert.match(said(third.plan), /^the namespace from the provided object ".*" does not match the namespace ".*"\. You must pass '--namespace=.*' to perform this operation\.$/);
  });

  it('a time zone or a cron the operator refuses: kubectl apply admits it (the API server cannot judge it), the plan prints a document with the operator\'s refusal, exit 1', async () => {
    const windows = (w: object) => ({ ...spec('1'), scaling: { minScale: 0, windows: [{ name: 'nights', schedule: '0 22 * * *', duration: '8h', minScale: 1, ...w }] } });
    for (const [what, w, field] of [['a zone', { timeZone: 'Europe/Berlni' }, 'timeZone'], ['a cron', { schedule: '0 25 * * *' }, 'schedule']] as const) {
      const { plan, apply } = await both(write(app(ns, 'windowed', windows(w))));
      assert.equal(apply.code, 0, `${what}: ${apply.stderr}`);
      const doc = documentOf(plan, what);
      assert.equal(plan.code, 1, plan.stdout);
      assert.equal(appRefusal(doc), undefined, `${what}: the API server admits it`);
      assert.ok(doc.refusals.some((r) => r.by === 'operator' && r.field?.endsWith(field)), `${what}: ${JSON.stringify(doc.refusals)}`);
    }
  });

  it('the README\'s `kubectl sapp plan -f FILE -o json` works on every example (their namespace, demo, not the context\'s), and kubectl apply agrees', async () => {
    await userClient().create(Kinds.Namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'demo' } }).catch((err: { code?: number }) => { if (err.code !== 409) throw err; });
    for (const name of ['automated-rollout', 'header-routed-testing', 'model-gpu-prewarm', 'nightly-scale-to-zero', 'web-app-canary']) {
      const path = new URL(`../../examples/${name}.yaml`, import.meta.url).pathname;
      const { plan, apply } = await both(path);
      assert.equal(apply.code, 0, `${name}: ${apply.stderr}`);
      const doc = documentOf(plan, name);
      assert.equal(doc.app.namespace, 'demo', name);
      assert.equal(appRefusal(doc), undefined, `${name}: ${JSON.stringify(doc.refusals)}`);
    }
  });

  it(`agrees on every file of the schema-fuzzing corpus (${CASES} generated apps, ${CASES / 2} values past a bound, ${CASES / 6} deep nests; seed ${SEED})`, async () => {
    const schema = specSchemaOfCRD();
    const fuzz = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 16 });
    const sweep = fuzz.edges(schema, 'spec');
    const past = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 4 }).beyond(schema, 'spec');
    const nests = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 64 }).deepNests(schema, 'spec');
    const spread = <T>(all: T[], n: number) => Array.from({ length: Math.min(n, all.length) }, (_, i) => all[Math.floor((i * all.length) / Math.min(n, all.length))]!);
    const corpus: Array<[string, unknown]> = [
      ...spread(sweep, Math.ceil(CASES / 2)).map((e): [string, unknown] => [`sweep ${e.path} ${e.label}`, e.value]),
      ...Array.from({ length: Math.floor(CASES / 2) }, (_, i): [string, unknown] => [`random #${i}`, fuzz.value(schema, 'random')]),
      ...spread(past, Math.ceil(CASES / 2)).map((e): [string, unknown] => [`past a bound: ${e.path} ${e.label}`, e.value]),
      ...spread(nests, Math.ceil(CASES / 6)).map((e): [string, unknown] => [`deep nest at ${e.path}`, e.value]),
    ];
    const findings: string[] = [];
    const verdicts = { refused: 0, admitted: 0 };
    let next = 0;
    const worker = async () => {
      while (next < corpus.length) {
        const n = next++;
        const [what, value] = corpus[n]!;
        const doc: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: `agree-${n}`, namespace: ns }, spec: value as ServerlessApp['spec'] };
        const finding = await disagreement(doc, `#${n} ${what}`, 'json');
        if (finding) findings.push(finding.slice(0, 1500));
        else (await kubectlAdmits(doc)) ? verdicts.admitted++ : verdicts.refused++;
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.deepEqual(findings, [], `seed ${SEED}`);
    assert.ok(verdicts.admitted > 0 && verdicts.refused > 0, `both verdicts were exercised: ${JSON.stringify(verdicts)}`);
  });

  /** The API server's own verdict (for the tally only: the agreement is judged above). */
  async function kubectlAdmits(doc: ServerlessApp): Promise<boolean> {
    return (await kubectl(kubeconfig, ['apply', '--dry-run=server', '-f', write(doc, 'json')])).code === 0;
  }
});

describe('the policy kubectl sapp plan judges by is the running operator\'s (integration)', function () {
  this.timeout(600_000);
  const GATEWAY = 'istio-system/public-gateway';
  let opNs: string;
  let appNs: string;
  let kubeconfig: string;
  let operator: OperatorProcess | undefined;
  after(async () => { await operator?.stop(); });

  const gatewayed = () => app(appNs, 'front', { container: { image: 'ghcr.io/acme/front:1', port: 8080 }, scaling: { minScale: 0 }, ingress: { hosts: [`front.${appNs}.example.com`], gateways: [GATEWAY] } });
  const planOf = async (what: string) => {
    const run = await sapp(kubeconfig, ['plan', '-f', write(gatewayed()), '-o', 'json', '--operator', `${opNs}/sapp-serverlessapp-operator`]);
    return { run, doc: documentOf(run, what) };
  };
  /** What the plan decides, without where it learnt the policy. */
  const verdict = (doc: PlanDocument) => ({ refused: doc.refused, changes: doc.changes, refusals: doc.refusals, operations: doc.operations.map((o) => [o.id, o.change, o.dryRun.result]) });
  /** The chart's Deployment with `values`, as `helm install` would create it, at 0 replicas (only its flags are read). */
  const chartDeployment = async (values: object) => {
    const objects = await renderChart(values, { namespace: opNs });
    const d = objects.find((o) => o.kind === 'Deployment')!;
    return { ...d, metadata: { ...d.metadata, namespace: opNs }, spec: { ...(d.spec as object), replicas: 0 } };
  };

  before(async () => {
    opNs = await freshNamespace('plan-policy');
    appNs = await freshNamespace('plan-policy-apps');
    kubeconfig = kubeconfigIn(appNs);
  });

  it('an operator started as `npm start` starts it publishes its flags: the plan accepts the gateway it allows, even beside a chart Deployment whose flags do not; once it stops, the plan says no operator runs and judges by the Deployment', async () => {
    // The README's flow: the operator from the working tree with --allowed-gateways, no leader election.
    operator = await OperatorProcess.start({ kubeconfigPath: testEnv().kubeconfigPath, namespaces: [appNs], leaderElectionNamespace: opNs, allowedGateways: [GATEWAY], logLevel: 'info' });
    await operator.waitReady();
    // Published once it leads (without leader election, right after its caches synced).
    await waitFor('the operator to publish its policy', async () => await userClient().get(Kinds.ConfigMap, opNs, POLICY_CONFIGMAP), { timeoutMs: SETTLE_MS });
    const published = await planOf('published');
    assert.equal(published.doc.refused, false, JSON.stringify(published.doc.refusals));
    assert.match(published.doc.settings, /^the running operator's policy, published by /);
    assert.ok(!published.doc.notes.some((n) => n.startsWith('policy:')), JSON.stringify(published.doc.notes));

    // A chart Deployment with its default flags (no gateway allowed) beside it: the running operator's policy still wins.
    await userClient().create(DEPLOYMENT, await chartDeployment({}));
    const beside = await planOf('beside a chart Deployment');
    assert.deepEqual(verdict(beside.doc), verdict(published.doc));

    // Stopped gracefully (SIGTERM): exit 0, its publication withdrawn; the plan falls back to the Deployment, and says why.
    assert.deepEqual(await operator.stop(), { code: 0, signal: null });
    operator = undefined;
    assert.equal(await userClient().get(Kinds.ConfigMap, opNs, POLICY_CONFIGMAP), undefined, 'withdrawn when it stopped');
    const stopped = await planOf('no operator');
    assert.equal(stopped.run.code, 1, stopped.run.stdout);
    assert.ok(stopped.doc.refusals.some((r) => r.reason === 'GatewayNotAllowed'), JSON.stringify(stopped.doc.refusals));
    assert.ok(stopped.doc.notes.some((n) => /^policy: no operator published its policy .* judged by deployment /.test(n)), JSON.stringify(stopped.doc.notes));
    assert.match(stopped.run.stderr, /warning: policy: no operator published its policy/);

    // The chart installed with the same setting gives the same plan as the operator `npm start` ran.
    await userClient().delete(DEPLOYMENT, opNs, 'sapp-serverlessapp-operator');
    await waitFor('the chart Deployment deleted', async () => (await userClient().get(DEPLOYMENT, opNs, 'sapp-serverlessapp-operator')) === undefined);
    await userClient().create(DEPLOYMENT, await chartDeployment({ allowedGateways: [GATEWAY] }));
    const chart = await planOf('the chart with the same setting');
    assert.deepEqual(verdict(chart.doc), verdict(published.doc));
  });
});
