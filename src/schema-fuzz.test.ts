// Schema-driven fuzzing: ServerlessApps generated from the CRD's own OpenAPI
// schema (every maxLength, maxItems and enum at its edge, unicode, deep JSON)
// go through validateApp and, when valid, through the planner, every renderer
// and the status report, as one reconcile would with a fixed clock. Nothing may
// throw, no child lands outside the app's namespace, and no tenant key under a
// control prefix reaches a pod. Seeded: FUZZ_SEED=<n> replays a run, and a
// failure prints the seed and the app.
import assert from 'node:assert/strict';
import { breaches, specSchemaOfCRD } from '../test/support/fuzz-harness.ts';
import type { ServerlessApp } from './api/v1alpha1/serverlessapp.ts';
import { validateApp, type ValidationPolicy } from './api/v1alpha1/validation.ts';
import { seededRandom } from './testing/regex-sample.ts';
import { keepsUndeclared, SchemaFuzzer, UNDECLARED } from './testing/schema-fuzz.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const RANDOM_CASES = Number(process.env.FUZZ_CASES ?? 1500);
const NAMESPACE = 'team-a';

/** Permissive: every platform switch open, so most generated apps reach the planner. */
const OPEN: ValidationPolicy = {
  allowedGateways: ['*'], allowWildcardHosts: true, allowedServiceAccounts: ['*'], allowSecretReferences: true,
  allowedTolerationKeys: ['*'], allowCrossNamespacePodAffinity: true, allowNodePinning: true,
  // The fuzzer's ordinary prefixed keys: an open platform lists its own prefix (pod metadata is an allow-list).
  allowedPodMetadataKeys: ['example.com/*'],
  analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: true },
};
/** The README's recommended policy: most generated apps are refused, each with a field. */
const README: ValidationPolicy = {
  allowedGateways: ['istio-system/public-gateway', '{namespace}/*'], allowedHostSuffixes: ['{namespace}.apps.example.com'],
  allowedStorageUriPrefixes: ['s3://models/{namespace}/'], analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false },
};

function appOf(spec: unknown, n: number): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name: `fuzz-${n}`, namespace: NAMESPACE, uid: `uid-${n}`, generation: 1, creationTimestamp: '2026-11-23T08:00:00Z' },
    spec: spec as ServerlessApp['spec'],
  };
}

type Kind = 'throws' | 'field' | 'namespace' | 'reserved';
interface Finding { kind: Kind; case: string; problem: string; app: ServerlessApp }

/** Runs one case and records what went wrong, if anything. */
function check(label: string, app: ServerlessApp, policy: ValidationPolicy, findings: Finding[], counts: { valid: number; refused: number }): void {
  const found = (kind: Kind, problem: string) => findings.push({ kind, case: label, problem, app });
  let problems;
  try {
    problems = validateApp(app, policy);
  } catch (e) {
    found('throws', `validateApp threw: ${(e as Error).stack}`);
    return;
  }
  for (const p of problems) if (!/^spec(\.|\[|$)/.test(p.field)) found('field', `a problem names no spec field: ${JSON.stringify(p)}`);
  if (problems.length) { counts.refused++; return; }
  counts.valid++;
  try {
    for (const b of breaches(app)) found(b.includes('reaches the pods') ? 'reserved' : 'namespace', b);
  } catch (e) {
    found('throws', `planning or rendering threw: ${(e as Error).stack}`);
  }
}

/** The distinct problems (app names and numbered keys folded), each with the first case and app that showed it. */
function report(findings: Finding[]): string {
  const byProblem = new Map<string, Finding>();
  for (const f of findings) {
    const key = f.problem.split('\n')[0]!.replace(/fuzz-\d+/g, 'fuzz-N').replace(/-\d+ reaches/, ' reaches');
    // The smallest app that shows a problem is the one to read.
    const seen = byProblem.get(key);
    if (!seen || JSON.stringify(f.app.spec).length < JSON.stringify(seen.app.spec).length) byProblem.set(key, f);
  }
  const shown = [...byProblem].slice(0, 12).map(([key, f]) =>
    `- ${key}${f.problem.includes('\n') ? `\n    ${f.problem.split('\n').slice(1, 4).join('\n    ')}` : ''}\n  case: ${f.case}\n  app: ${JSON.stringify(f.app.spec).slice(0, 600)}`);
  return `schema fuzz (seed ${SEED}, replay with FUZZ_SEED=${SEED}): ${findings.length} findings, ${byProblem.size} distinct\n${shown.join('\n')}`;
}

const distinct = (findings: Finding[]) => [...new Set(findings.map((f) => f.problem.split('\n')[0]!.replace(/fuzz-\d+/g, 'fuzz-N').replace(/-\d+ reaches/, ' reaches')))].sort();

describe('schema-driven fuzzing of ServerlessApps (from the CRD\'s own schema)', function () {
  this.timeout(60_000);
  const schema = specSchemaOfCRD();

  it('generates apps that match the CRD\'s structural schema (the generator samples its patterns)', () => {
    const fuzz = new SchemaFuzzer(seededRandom(SEED));
    for (let n = 0; n < 200; n++) {
      const spec = fuzz.value(schema, 'random') as Record<string, unknown>;
      assert.equal(('container' in spec) !== ('model' in spec), true, 'exactly one of container or model, as the CRD\'s rule says');
      const image = (spec.container as { image?: string } | undefined)?.image;
      if (image !== undefined) assert.match(image, new RegExp((schema as any).properties.container.properties.image.pattern));
    }
  });

  describe('deep nesting: an undeclared field nested 64 levels deep at every object of the spec', () => {
    const nests = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 64 }).deepNests(schema, 'spec');

    it('reaches every object, the core/v1 types an app embeds among them (probes, env valueFrom, envFrom, affinity)', () => {
      const paths = nests.map((e) => e.path);
      assert.ok(nests.length > 50, `${nests.length} objects`);
      for (const field of ['spec.container.readinessProbe.httpGet', 'spec.container.livenessProbe', 'spec.container.env[0].valueFrom.secretKeyRef', 'spec.container.envFrom[0]',
        'spec.container.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector', 'spec.model.affinity.nodeAffinity', 'spec.container.tolerations[0]', 'spec.model.volumes[0].configMap']) {
        assert.ok(paths.includes(`${field}.${UNDECLARED}`), `a nest at ${field}`);
      }
    });

    it('is kept nowhere: no object of the CRD keeps undeclared fields, so the API server refuses or prunes each', () => {
      assert.deepEqual(nests.filter((e) => keepsUndeclared(schema, e.path)).map((e) => e.path), []);
      assert.equal(keepsUndeclared({ type: 'object', properties: { a: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }, `spec.a.${UNDECLARED}`), true, 'a free-form object would keep it');
    });

    it('would not make validation or the planner throw, should such an app ever reach them', () => {
      const findings: Finding[] = [];
      nests.forEach((e, n) => check(`nest ${e.path}`, appOf(e.value, n), OPEN, findings, { valid: 0, refused: 0 }));
      const thrown = findings.filter((f) => f.kind === 'throws');
      assert.deepEqual(distinct(thrown), [], report(thrown));
    });
  });

  for (const [name, policy, salt] of [['an open platform', OPEN, 1], ['the README\'s policy', README, 2]] as const) {
    describe(`under ${name}: every leaf swept to each edge, then ${RANDOM_CASES} random apps`, () => {
      const findings: Finding[] = [];
      const counts = { valid: 0, refused: 0 };
      let swept = 0;
      before(() => {
        const fuzz = new SchemaFuzzer(seededRandom(SEED));
        const edges = fuzz.edges(schema, 'spec');
        swept = edges.length;
        edges.forEach((e, n) => check(`sweep ${e.path}: ${e.label}`, appOf(e.value, n), policy, findings, counts));
        const random = seededRandom(SEED + salt);
        const more = new SchemaFuzzer(random);
        for (let n = 0; n < RANDOM_CASES; n++) check(`random #${n}`, appOf(more.value(schema, random() < 0.1 ? 'max' : 'random'), swept + n), policy, findings, counts);
      });

      it('covers the whole schema, and reaches the planner with many of the apps', () => {
        assert.ok(swept > 500, `a sweep of the whole schema (${swept} cases)`);
        assert.ok(counts.valid > (policy === OPEN ? 0.4 : 0.02) * (swept + RANDOM_CASES), `${counts.valid} valid, ${counts.refused} refused`);
        assert.ok(counts.refused > 0, 'some apps are refused');
      });

      it('nothing throws out of validation, planning, rendering or the status report', () => {
        const thrown = findings.filter((f) => f.kind === 'throws');
        assert.deepEqual(distinct(thrown), [], report(thrown));
      });

      it('every refusal names a spec field', () => {
        const unnamed = findings.filter((f) => f.kind === 'field');
        assert.deepEqual(distinct(unnamed), [], report(unnamed));
      });

      it('every rendered child is in the app\'s namespace', () => {
        const outside = findings.filter((f) => f.kind === 'namespace');
        assert.deepEqual(distinct(outside), [], report(outside));
      });

      it('no tenant label or annotation under a control prefix reaches a pod', () => {
        const leaks = findings.filter((f) => f.kind === 'reserved');
        assert.deepEqual(distinct(leaks), [], report(leaks));
      });
    });
  }
});
