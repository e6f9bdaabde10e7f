// The schema fuzzer's apps through the real API server's admission (the CRD's
// structural schema and its CEL rules, dryRun=All, nothing stored): every app
// the API server admits either passes validateApp or is refused by it with a
// problem naming a spec field, and an admitted, valid app never makes the
// planner throw. What the unit fuzzer cannot judge (CEL) is judged here.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { validateApp, type ValidationPolicy } from '../../src/api/v1alpha1/validation.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { seededRandom } from '../../src/testing/regex-sample.ts';
import { SchemaFuzzer, UNDECLARED } from '../../src/testing/schema-fuzz.ts';
import { userClient } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { breaches, specSchemaOfCRD } from '../support/fuzz-harness.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const CASES = Number(process.env.FUZZ_ADMISSION_CASES ?? 300);
const IN_FLIGHT = 8;
const POLICY: ValidationPolicy = { allowedGateways: ['*'], allowWildcardHosts: true, allowedServiceAccounts: ['*'] };

/**
 * The API server refused the apply: invalid (422), or a value server-side apply cannot type against
 * the schema, which it answers with 500 "failed to create typed patch object" before validation.
 */
const refused = (e: unknown): e is ApiError =>
  e instanceof ApiError && (e.code === 422 || e.code === 400 || (e.code === 500 && e.message.includes('failed to create typed patch object')));

describe('schema fuzzing through the API server\'s admission (dryRun=All)', function () {
  this.timeout(600_000);

  it(`admits or refuses ${CASES} generated apps; whatever it admits, validateApp judges with a field and the planner survives`, async () => {
    const namespace = await freshNamespace('fuzz');
    const random = seededRandom(SEED);
    const fuzz = new SchemaFuzzer(random, { maxDepth: 16 });
    const schema = specSchemaOfCRD();
    const sweep = fuzz.edges(schema, 'spec');
    // Half from the sweep (spread over the schema), half random.
    const specs = [
      ...Array.from({ length: Math.ceil(CASES / 2) }, (_, i) => sweep[Math.floor((i * sweep.length) / Math.ceil(CASES / 2))]!.value),
      ...Array.from({ length: Math.floor(CASES / 2) }, () => fuzz.value(schema, 'random')),
    ];
    const client = userClient();
    const counts = { admitted: 0, refused: 0, valid: 0 };
    const findings: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < specs.length) {
        const n = next++;
        const app: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: `fuzz-${n}`, namespace }, spec: specs[n] as ServerlessApp['spec'] };
        let admitted: ServerlessApp;
        try {
          admitted = await client.apply(app, { dryRun: true });
        } catch (e) {
          if (refused(e)) { counts.refused++; continue; }
          throw e;
        }
        counts.admitted++;
        const withMeta = { ...admitted, metadata: { ...admitted.metadata, uid: `uid-${n}`, generation: 1 } };
        try {
          const problems = validateApp(withMeta, POLICY);
          for (const p of problems) if (!/^spec(\.|\[|$)/.test(p.field)) findings.push(`#${n}: a problem names no spec field: ${JSON.stringify(p)}`);
          if (problems.length) continue;
          counts.valid++;
          for (const b of breaches(withMeta)) if (!b.includes('reaches the pods')) findings.push(`#${n}: ${b}`);
        } catch (e) {
          findings.push(`#${n} (seed ${SEED}): threw ${(e as Error).stack?.split('\n').slice(0, 3).join(' ')}\n  app: ${JSON.stringify(admitted.spec).slice(0, 800)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.ok(counts.admitted > 0 && counts.refused > 0, `the API server both admits and refuses generated apps: ${JSON.stringify(counts)}`);
    assert.deepEqual(findings, [], `seed ${SEED}: ${JSON.stringify(counts)}`);
  });

  it('refuses JSON nested 64 levels deep under an undeclared field at every object of the spec, naming the field', async () => {
    const namespace = await freshNamespace('fuzz-nests');
    const nests = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 64 }).deepNests(specSchemaOfCRD(), 'spec');
    const client = userClient();
    const kept: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < nests.length) {
        const n = next++;
        const e = nests[n]!;
        const app: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: `nest-${n}`, namespace }, spec: e.value as ServerlessApp['spec'] };
        try {
          await client.apply(app, { dryRun: true });
          kept.push(`${e.path}: admitted`);
        } catch (err) {
          if (!refused(err)) throw err;
          // The API server names the path with list indexes dropped: .spec.container.env[0].x reads .spec.container.env.x or with a key.
          if (!err.message.includes(`${UNDECLARED}: field not declared in schema`)) kept.push(`${e.path}: refused without naming the field: ${err.message.slice(0, 300)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.deepEqual(kept, []);
  });

  it('refuses every value one step past a bound of the schema, naming the field', async () => {
    const namespace = await freshNamespace('fuzz-bounds');
    const past = new SchemaFuzzer(seededRandom(SEED), { maxDepth: 4 }).beyond(specSchemaOfCRD(), 'spec');
    assert.ok(past.length > 100, `the schema's bounds (${past.length})`);
    const client = userClient();
    const admitted: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < past.length) {
        const n = next++;
        const e = past[n]!;
        const field = e.path.split('.').at(-1)!.replace(/\[0\]$/, '');
        const app: ServerlessApp = { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: `past-${n}`, namespace }, spec: e.value as ServerlessApp['spec'] };
        try {
          await client.apply(app, { dryRun: true });
          admitted.push(`${e.path} ${e.label}: admitted`);
        } catch (err) {
          if (!refused(err)) throw err;
          if (!err.message.includes(field)) admitted.push(`${e.path} ${e.label}: refused without naming ${field}: ${err.message.slice(0, 300)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    assert.deepEqual(admitted, []);
  });
});
