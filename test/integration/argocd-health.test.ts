// The Argo CD health check the chart ships (files/argocd/health.lua), run by
// the real gopher-lua as Argo CD runs it (test/envtest/gitops), on every
// fixture of its Argo CD-layout test directory
// (test/fixtures/argocd/resource_customizations/serverlessapp.io/ServerlessApp:
// health_test.yaml, testdata/), which can be proposed upstream as it is; kstatus
// reads the same fixtures as the status contract's table says. And the chart
// renders the script under argocd-cm's key only when asked. Needs the rig's
// gitops-judge and helm but no control plane:
// ENVTEST=off node test/run.ts test/integration/argocd-health.test.ts
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { ARGOCD_HEALTH_SCRIPT, judge, judgeAll } from '../support/gitops-judge.ts';
import { renderChart, templateChart, type RenderedObject } from '../support/helm.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'argocd', 'resource_customizations', 'serverlessapp.io', 'ServerlessApp');
const HEALTH_KEY = 'resource.customizations.health.serverlessapp.io_ServerlessApp';

interface HealthTest { inputPath: string; healthStatus: { status: string; message: string } }
const tests = (parse(readFileSync(join(FIXTURES, 'health_test.yaml'), 'utf8')) as { tests: HealthTest[] }).tests;
const fixture = (path: string) => parse(readFileSync(join(FIXTURES, path), 'utf8')) as object;

/** What kstatus (Flux, kubectl wait-style tools) must read from each fixture: the status contract's table. */
const KSTATUS: Record<string, string> = {
  'testdata/served.yaml': 'Current',
  'testdata/canary-held.yaml': 'Current',
  'testdata/new.yaml': 'InProgress',
  'testdata/stale-generation.yaml': 'InProgress',
  'testdata/canary-progressing.yaml': 'InProgress',
  'testdata/retrying.yaml': 'InProgress',
  'testdata/failed-canary.yaml': 'Failed',
  'testdata/refused-host.yaml': 'Failed',
  'testdata/paused.yaml': 'Current',
  'testdata/deleting.yaml': 'Terminating',
};

describe('Argo CD health check for ServerlessApp: its fixtures, in gopher-lua', () => {
  it('keeps one copy of the script: the fixture directory links to the chart\'s file', () => {
    assert.equal(realpathSync(join(FIXTURES, 'health.lua')), realpathSync(ARGOCD_HEALTH_SCRIPT));
  });

  it('covers every phase of the status contract, each fixture once', () => {
    assert.deepEqual(tests.map((t) => t.inputPath).sort(), Object.keys(KSTATUS).sort());
    assert.deepEqual([...new Set(tests.map((t) => t.healthStatus.status))].sort(), ['Degraded', 'Healthy', 'Progressing', 'Suspended']);
  });

  // Argo CD's own test of its resource_customizations (util/lua/health_test.go) runs each script with the
  // standard libraries open; an argocd-cm script runs without them unless useOpenLibs is set: both must agree.
  for (const openLibs of [true, false]) {
    it(`gives each health_test.yaml verdict, ${openLibs ? 'with Lua\'s standard libraries (Argo CD\'s fixture test)' : 'with the base library only (argocd-cm\'s default)'}`, async () => {
      const verdicts = await judgeAll(tests.map((t) => fixture(t.inputPath)), { scriptOnly: true, openLibs });
      tests.forEach((t, i) => assert.deepEqual(verdicts[i]!.argocd, t.healthStatus, t.inputPath));
    });
  }

  it('reads as the contract says in kstatus too, and in Argo CD\'s controller (deletion is Progressing whatever the script says)', async () => {
    const verdicts = await judgeAll(tests.map((t) => fixture(t.inputPath)));
    tests.forEach((t, i) => {
      assert.equal(verdicts[i]!.kstatus.status, KSTATUS[t.inputPath], `kstatus on ${t.inputPath}: ${verdicts[i]!.kstatus.message}`);
      const controller = t.inputPath === 'testdata/deleting.yaml'
        ? { status: 'Progressing', message: 'Pending deletion; blocked by finalizers: foregroundDeletion' }
        : t.healthStatus;
      assert.deepEqual(verdicts[i]!.argocd, controller, t.inputPath);
    });
  });

  it('is judged by the real VM: a script that calls a library argocd-cm does not open is Unknown, not a guess', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argocd-health-'));
    try {
      const script = join(dir, 'health.lua');
      writeFileSync(script, 'return { status = string.upper("healthy") }\n');
      const { argocd } = await judge(fixture('testdata/served.yaml'), { script });
      assert.equal(argocd?.status, 'Unknown');
      assert.match(argocd?.message ?? '', /attempt to index a non-table object\(nil\) with key 'upper'/);
      assert.deepEqual((await judge(fixture('testdata/served.yaml'), { script, openLibs: true })).argocd, { status: 'Unknown', message: 'Lua returned an invalid health status' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('chart: argocd.healthCheck', () => {
  const healthConfigMaps = (objects: RenderedObject[]) => objects.filter((o) => o.kind === 'ConfigMap' && HEALTH_KEY in ((o as { data?: object }).data ?? {}));

  it('renders nothing for Argo CD by default', async () => {
    assert.deepEqual(healthConfigMaps(await renderChart()), []);
  });

  it('renders the script under argocd-cm\'s key, as the file holds it, and that text is what Argo CD would run', async () => {
    const [cm, ...more] = healthConfigMaps(await renderChart({ argocd: { healthCheck: { enabled: true, namespace: 'argocd' } } }));
    assert.equal(more.length, 0);
    assert.equal(cm!.metadata.name, 'sapp-serverlessapp-operator-argocd-health');
    assert.equal(cm!.metadata.namespace, 'argocd');
    const rendered = (cm as unknown as { data: Record<string, string> }).data[HEALTH_KEY]!;
    assert.equal(rendered, readFileSync(ARGOCD_HEALTH_SCRIPT, 'utf8'));
    const dir = mkdtempSync(join(tmpdir(), 'argocd-health-'));
    try {
      const script = join(dir, 'health.lua');
      writeFileSync(script, rendered);
      assert.deepEqual((await judge(fixture('testdata/failed-canary.yaml'), { script })).argocd?.status, 'Degraded');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renders a patch for argocd-cm itself when named so', async () => {
    const [cm] = healthConfigMaps(await renderChart({ argocd: { healthCheck: { enabled: true, namespace: 'argocd', configMapName: 'argocd-cm' } } }));
    assert.equal(cm?.metadata.name, 'argocd-cm');
  });

  it('refuses a misspelt value instead of rendering nothing', async () => {
    const result = await templateChart({ argocd: { healthCheck: { enable: true } } });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /enable/);
  });
});
