// Every file in examples/ runs through the operator configured the way the
// chart installs it with its default values (charts/serverlessapp-operator/
// values.yaml), on the rig's real Knative and KServe, and must become
// Ready=True: an example a default install cannot serve fails here.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { hostClaimName } from '../../src/api/v1alpha1/hostclaim.ts';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { specProblem } from '../../src/cli/commands.ts';
import { parseConfig } from '../../src/config.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { podEnv, renderChart, type RenderedObject } from '../support/helm.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';

const dir = new URL('../../examples/', import.meta.url).pathname;
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();

interface Deployment { spec: { template: { spec: { containers: Array<{ env: Parameters<typeof podEnv>[0] }> } } } }

describe('examples/ under the chart\'s default settings, on the real Knative and KServe (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let warmup: LoopbackServer;
  const namespaces = new Map<string, string>();

  before(async () => {
    for (const file of files) namespaces.set(file, await freshNamespace(`ex-${file.replace(/\.yaml$/, '').slice(0, 20)}`));
    // Hosts are claimed cluster-wide (HostClaims), and the examples name the same hosts as the demo
    // (shop.example.com): as a platform would, the test hands each example's hosts to its namespace,
    // releasing the claims other test files left.
    for (const file of files) {
      for (const doc of parseAllDocuments(readFileSync(dir + file, 'utf8')).map((d) => d.toJSON() as ServerlessApp)) {
        for (const host of doc.spec.ingress?.hosts ?? []) {
          const name = hostClaimName(host)!;
          await userClient().delete(Kinds.HostClaim, undefined, name);
          await userClient().create(Kinds.HostClaim, { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name }, spec: { host, namespace: namespaces.get(file)! } });
        }
      }
    }
    // An LLM example needs KServe's llmisvc manager (started on demand: it watches every Pod of the cluster).
    if (files.some((f) => /llm/.test(f))) await testEnv().dataPlane?.llmisvc();
    warmup = await new LoopbackServer().start();
    warmup.handler = (_req, res) => res.end('{"predictions":[0]}');
    const objects = await renderChart({}, { namespace: 'serverlessapp-system' });
    const deployment = objects.find((o) => o.kind === 'Deployment') as (RenderedObject & Deployment) | undefined;
    assert.ok(deployment, 'the chart renders the operator Deployment');
    const { help: _help, ...defaults } = parseConfig([], podEnv(deployment.spec.template.spec.containers[0]!.env, { namespace: [...namespaces.values()][0]!, name: 'examples-operator' }));
    assert.deepEqual(defaults.allowedGateways, [], 'the chart\'s default: no gateway, mesh only');
    assert.deepEqual(defaults.analysisProviders, [], 'the chart\'s default: no analysis provider');
    op = await startOperator({
      ...defaults,
      // Only what the rig cannot provide changes: loopback listeners, one replica
      // without a peer to elect against, and the warmup URL: the rig has no
      // cluster DNS or revision that answers (no request is ever served), so a
      // loopback server plays the revision.
      metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', leaderElect: false, logLevel: process.env.OPERATOR_LOG_LEVEL ?? 'error',
      warmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`, llmWarmupUrlTemplate: `${warmup.url}/{namespace}/{revision}{path}`,
      // The one setting examples gating on Prometheus say the platform makes first (chart value
      // analysis.providers.main): a first version runs no round, so nothing is queried.
      analysisProviders: [{ name: 'main', url: warmup.url }],
      // Only the examples' namespaces: other test files leave apps behind in this shared cluster.
      namespaces: [...namespaces.values()],
    });
  });
  after(async () => {
    await op?.stop();
    await warmup?.stop();
  });

  for (const file of files) {
    it(`${file} becomes Ready=True`, async () => {
      const ns = namespaces.get(file)!;
      const docs = parseAllDocuments(readFileSync(dir + file, 'utf8')).map((d) => d.toJSON() as ServerlessApp);
      assert.ok(docs.length > 0);
      for (const doc of docs) {
        assert.equal(doc.kind, 'ServerlessApp');
        await applyApp(app(ns, doc.metadata.name, doc.spec));
      }
      for (const doc of docs) {
        const name = doc.metadata.name;
        // A spec problem: the operator refused the spec (a setting the default install does not allow); no point waiting.
        const a = await waitForApp(ns, name, (x) => readyTrue(x) || specProblem(x) !== undefined, `${file}: ${name} Ready`, 240_000)
          .catch(async (err: Error) => {
            const last = await getApp(ns, name);
            throw new Error(`${err.message}; Ready: ${JSON.stringify(condition(last, 'Ready'))}`);
          });
        assert.ok(readyTrue(a), `${file}: ${name} is not Ready: ${JSON.stringify(condition(a, 'Ready'))}`);
        assert.ok(a.status?.url, `${file}: ${name} has a URL`);
        assert.equal(a.status?.phase, 'Stable');
      }
    });
  }
});
