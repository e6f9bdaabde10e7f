// Every object the renderers' golden files hold is admitted by the real
// admission chain of the test rig: the pinned upstream CRDs' schemas and the
// real Knative Serving and KServe webhooks (defaulting and validation), through
// a server-side dry-run apply, exactly as the operator writes them. Each kind
// also shows that the chain was really consulted: the defaulting webhook's
// mark on what comes back, and a one-field break of the golden refused by the
// webhook or schema that owns it. KServe's LocalModelCache webhook (the real
// local model controller's) checks one thing a single object cannot break: no
// other cache holds the same model, so it is shown refusing the golden beside
// such a cache. A VirtualService meets its CRD's schema and istiod's own
// validating webhook (test/envtest/istiod.ts), which Istio installs without a
// defaulting one.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { userClient } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

const dir = new URL('../../src/render/testdata/', import.meta.url).pathname;

// The goldens' specs, as loosely as the checks below reach into them.
interface Doc { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: any }

interface Check {
  /** What only the defaulting webhook adds: proof that it ran on the dry run. */
  defaulted?: (admitted: Doc, sent: Doc) => void;
  /** The golden with one field broken, and who must refuse it. */
  broken: (doc: Doc) => void;
  refusedBy: RegExp;
  /** An object beside which a webhook refuses the golden as it is (the golden's name and namespace are the caller's). */
  refusedBeside?: { other: (doc: Doc) => Doc; refusedBy: RegExp };
}

const checks: Record<string, Check> = {
  Service: {
    defaulted: (k, sent) => {
      assert.equal(k.metadata.annotations?.['serving.knative.dev/creator'] !== undefined, true, 'Knative\'s defaulting webhook stamps the creator');
      assert.equal(k.spec.template.spec.containerConcurrency, sent.spec.template.spec.containerConcurrency ?? 0, 'and defaults containerConcurrency where unset');
    },
    broken: (k) => { k.spec.template.metadata.name = 'not-prefixed-1'; },
    refusedBy: /^admission webhook "validation\.webhook\.serving\.knative\.dev" denied the request: .*must have prefix/,
  },
  InferenceService: {
    defaulted: (i) => assert.equal(i.metadata.annotations?.modelFormat, 'sklearn', 'KServe\'s defaulting webhook records the model format'),
    broken: (i) => { i.spec.predictor.minReplicas = 5; i.spec.predictor.maxReplicas = 4; },
    refusedBy: /^admission webhook "inferenceservice\.kserve-webhook-server\.validator" denied the request: 'MinReplicas' cannot be greater than MaxReplicas/,
  },
  LocalModelCache: {
    broken: (c) => { c.spec.modelSize = 'plenty'; },
    refusedBy: /spec\.modelSize in body should match/,
    refusedBeside: {
      other: (c) => ({ ...c, metadata: { name: `${c.metadata.name}-other` } }),
      refusedBy: /^admission webhook "localmodelcache\.kserve-webhook-server\.validator" denied the request: LocalModelCache \S+-other has the same StorageURI gs:\/\/models\/fraud\/v7/,
    },
  },
  VirtualService: {
    // The CRD's schema allows it; Istio's validation does not.
    broken: (v) => { v.spec.http[0].retries = { attempts: 0, retryOn: '5xx' }; },
    refusedBy: /^admission webhook "validation\.istio\.io" denied the request: .*http retry policy configured when attempts are set to 0/,
  },
  LLMInferenceService: {
    // KServe's llmisvc manager serves the webhooks; the CRD's schema bounds a weight.
    defaulted: (l) => assert.equal(l.metadata.labels?.['serving.kserve.io/routing-group'], l.spec.router.route.group, 'the routing-group label KServe\'s defaulter sets, as rendered'),
    broken: (l) => { l.spec.router.route.weight = -1; },
    refusedBy: /spec\.router\.route\.weight in body should be greater than or equal to 0/,
  },
  HTTPRoute: {
    // No webhook judges Gateway API routes (istiod's validates Istio's own groups only): the CRD's schema does.
    broken: (h) => { h.spec.hostnames = ['Not A Hostname']; },
    refusedBy: /spec\.hostnames\[0\] in body should match/,
  },
};

function kindOf(doc: Doc): ResourceKind {
  const k = Object.values(Kinds).find((x) => `${x.group}/${x.version}` === doc.apiVersion && x.kind === doc.kind);
  if (!k) throw new Error(`no kind for ${doc.apiVersion} ${doc.kind}`);
  return k;
}

describe('rendered objects on the real admission chain (integration)', function () {
  this.timeout(600_000);
  // LLMInferenceServices are admitted by KServe's llmisvc manager, which the rig starts on demand.
  before(async () => { if (testEnv().dataPlane?.kserve && testEnv().dataPlane?.istio) await testEnv().dataPlane!.llmisvc(); });
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.golden.yaml'))) {
    it(`${file} is admitted by the pinned CRDs and the real webhooks, which refuse it with one field broken`, async () => {
      const docs = parseAllDocuments(readFileSync(dir + file, 'utf8')).map((d) => d.toJSON() as Doc);
      assert.ok(docs.length > 0);
      for (const doc of docs) {
        const kind = kindOf(doc);
        const check = checks[doc.kind] ?? assert.fail(`no admission check for ${doc.kind}: add one`);
        const ns = kind.namespaced ? await freshNamespace('admit') : undefined;
        const obj: Doc = { ...doc, metadata: { ...doc.metadata, ...(ns ? { namespace: ns } : {}) } };
        const admitted = await userClient().apply(obj, { kind, dryRun: true });
        assert.equal(admitted.kind, doc.kind);
        check.defaulted?.(admitted, obj);

        const broken = structuredClone(obj);
        check.broken(broken);
        await assert.rejects(userClient().apply(broken, { kind, dryRun: true }), (err: Error) => {
          assert.match(err.message, check.refusedBy);
          return true;
        });

        if (check.refusedBeside) {
          const other = check.refusedBeside.other(obj);
          await userClient().apply(other, { kind });
          try {
            // The webhook finds the other object through its controller's informer cache, which sees it a moment after its creation.
            const refusal = await waitFor(`${doc.kind} refused beside the other`, async () => {
              try {
                await userClient().apply(obj, { kind, dryRun: true });
                return undefined;
              } catch (err) {
                return (err as Error).message;
              }
            }, { timeoutMs: SETTLE_MS });
            assert.match(refusal, check.refusedBeside.refusedBy);
          } finally {
            await userClient().delete(kind, other.metadata.namespace, other.metadata.name);
          }
        }
      }
    });
  }
});
