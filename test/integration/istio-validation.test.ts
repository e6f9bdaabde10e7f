// What Istio itself says of the VirtualServices this repository writes: the
// rig's istiod (test/envtest/istiod.ts) validates every Istio object written,
// through its own webhook, as on an Istio cluster. Every golden VirtualService
// and the one each example renders must be admitted; and where Istio refuses
// a VirtualService that the operator would render from a spec the
// ServerlessApp schema let through, the app never gets its route (the write
// fails on every reconcile), so the schema must refuse that spec first,
// naming the field.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { parseConfig } from '../../src/config.ts';
import { kserveWorkload, knativeWorkload } from '../../src/planner/workloads.ts';
import { renderVirtualService } from '../../src/render/virtual-service.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';

const root = new URL('../../', import.meta.url).pathname;
const ISTIO_REFUSAL = /admission webhook "validation\.istio\.io" denied the request/;

interface VirtualService { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec: any }

/** Every VirtualService document under test/fixtures and src, as `grep -rl VirtualService --include=*.yaml --include=*.json` finds them. */
function goldenVirtualServices(): Array<{ file: string; vs: VirtualService }> {
  const files = ['test/fixtures', 'src'].flatMap((d) => readdirSync(join(root, d), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ya?ml|json)$/.test(f)).map((f) => join(root, d, f)));
  return files.sort().flatMap((file) => parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as VirtualService | null)
    .filter((o): o is VirtualService => o?.kind === 'VirtualService' && o.apiVersion.startsWith('networking.istio.io/'))
    .map((vs) => ({ file: relative(root, file), vs })));
}

/** The examples' apps (every document of examples/*.yaml). */
function exampleApps(): Array<{ file: string; app: ServerlessApp }> {
  const dir = join(root, 'examples');
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort().flatMap((file) =>
    parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => ({ file, app: d.toJS() as ServerlessApp })));
}

/**
 * The VirtualService the operator writes for `app` in `namespace` at its most
 * complete: a candidate ready (header route and mirror present), the chart's
 * default local gateway.
 */
function rendered(app: ServerlessApp, namespace: string): VirtualService {
  const placed: ServerlessApp = { ...app, metadata: { ...app.metadata, namespace, uid: '00000000-0000-4000-8000-000000000001' } };
  const workload = placed.spec.model ? kserveWorkload(true) : knativeWorkload(true);
  const { localGateway } = parseConfig([], {});
  return renderVirtualService(placed, {
    localGateway, candidateReady: true, ...workload.hosts(placed), candidateRevision: `${app.metadata.name}-00002`,
    // A canary at 20%, so a sticky app's split and session routes are validated too.
    traffic: { stable: { revision: `${app.metadata.name}-00001`, version: '0123456789' }, candidate: { revision: `${app.metadata.name}-00002`, version: 'abcdef0123', percent: 20, ready: true } },
    inForce: [{ revision: `${app.metadata.name}-00001`, percent: 80, tag: workload.hosts(placed).stableTag }, { revision: `${app.metadata.name}-00002`, percent: 20, tag: workload.hosts(placed).candidateTag }], routesReady: true,
  }) as unknown as VirtualService;
}

async function refusal(write: Promise<unknown>): Promise<string> {
  try {
    await write;
  } catch (err) {
    return (err as Error).message;
  }
  return '(admitted)';
}

describe('istiod\'s own validation of the VirtualServices the operator writes (integration)', function () {
  this.timeout(600_000);
  let ns: string;
  const dryRun = (vs: VirtualService) => userClient().apply({ ...vs, metadata: { ...vs.metadata, namespace: ns } }, { kind: Kinds.VirtualService, dryRun: true });

  before(async function () {
    if (!testEnv().dataPlane?.istio) this.skip();
    ns = await freshNamespace('istio-validation');
  });

  it('has istiod refuse what Istio\'s validation refuses and the CRD schema lets through (a retryOn Envoy does not know)', async () => {
    const vs: VirtualService = {
      apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'probe' },
      spec: { hosts: ['probe.example.com'], http: [{ route: [{ destination: { host: 'probe' } }], retries: { attempts: 1, retryOn: 'sometimes' } }] },
    };
    assert.match(await refusal(dryRun(vs)), /admission webhook "validation\.istio\.io" denied the request: [\s\S]*"sometimes" is not a valid retryOn policy/);
  });

  it('admits every golden VirtualService but the one made to break the CRD schema', async () => {
    const goldens = goldenVirtualServices();
    assert.ok(goldens.length >= 4, `golden VirtualServices found: ${goldens.map((g) => g.file).join(', ')}`);
    for (const { file, vs } of goldens) {
      const answer = await refusal(dryRun(vs));
      if (file.endsWith('-invalid.yaml')) assert.match(answer, /spec\.http\[0\]\.retries\.attempts/, `${file} is refused by the CRD schema: ${answer}`);
      else assert.equal(answer, '(admitted)', `${file} admitted by istiod`);
    }
  });

  it('admits the VirtualService each example with an ingress renders, its header route and mirror included', async () => {
    const withIngress = exampleApps().filter(({ app }) => app.spec.ingress);
    assert.ok(withIngress.length > 0, 'some example has an ingress');
    for (const { file, app } of withIngress) {
      assert.equal(await refusal(dryRun(rendered(app, ns))), '(admitted)', `${file}: ${app.metadata.name}'s VirtualService admitted by istiod`);
    }
  });

  // Each spec here passed the ServerlessApp schema on main; Istio refuses the VirtualService rendered from it.
  const refusedByIstio: Array<{ what: string; change: (spec: ServerlessApp['spec']) => void; istio: RegExp; field: RegExp }> = [
    {
      what: 'a retryOn policy Envoy does not know',
      change: (s) => { s.ingress!.retries = { attempts: 2, retryOn: '5xx,sometimes' }; },
      istio: /"sometimes" is not a valid retryOn policy/,
      field: /spec\.ingress\.retries\.retryOn/,
    },
    {
      what: 'a retryOn status code Go\'s net/http does not name',
      change: (s) => { s.ingress!.retries = { attempts: 2, retryOn: '599' }; },
      istio: /"599" is not a valid retryOn policy/,
      field: /spec\.ingress\.retries\.retryOn/,
    },
    {
      what: 'retryOn with zero attempts',
      change: (s) => { s.ingress!.retries = { attempts: 0, retryOn: '5xx' }; },
      istio: /http retry policy configured when attempts are set to 0/,
      field: /spec\.ingress\.retries/,
    },
    {
      what: 'perTryTimeout with zero attempts',
      change: (s) => { s.ingress!.retries = { attempts: 0, perTryTimeout: '2s' }; },
      istio: /http retry policy configured when attempts are set to 0/,
      field: /spec\.ingress\.retries/,
    },
    {
      what: 'an empty header prefix',
      change: (s) => { s.rollout = { ...s.rollout, match: [{ header: 'x-canary', prefix: '' }] }; },
      istio: /prefix string match should not be empty/,
      field: /spec\.rollout\.match\[0\]\.prefix/,
    },
    {
      what: 'an empty header regex',
      change: (s) => { s.rollout = { ...s.rollout, match: [{ header: 'x-canary', regex: '' }] }; },
      istio: /regex string match should not be empty/,
      field: /spec\.rollout\.match\[0\]\.regex/,
    },
  ];
  for (const c of refusedByIstio) {
    it(`refuses ${c.what} in the ServerlessApp, naming the field, as istiod refuses it in the VirtualService`, async () => {
      const base = exampleApps().find(({ app }) => app.spec.ingress && !app.spec.model)!.app;
      const app = structuredClone(base);
      c.change(app.spec);
      app.metadata = { name: 'refused', namespace: ns };
      assert.match(await refusal(dryRun(rendered(app, ns))), new RegExp(`${ISTIO_REFUSAL.source}[\\s\\S]*${c.istio.source}`));
      assert.match(await refusal(userClient().apply(app, { kind: Kinds.ServerlessApp, dryRun: true })), c.field);
    });
  }
});
