// The bounds the CRD enforces at admission (issue 21): every duration has an
// upper bound, model.size is at least 1Mi, a probe may not name a host, and
// an app's header regexes share one budget. Each attack is a write the API
// server refuses, naming the field and what is allowed, made while a victim
// app in another namespace serves; after each, the victim still serves its
// version and applies its next edit. The bounds at their edges are admitted.
// The core/v1 types an app embeds (probes, env valueFrom, envFrom, affinity)
// are typed, not free-form JSON: a tenant cannot store JSON of any depth there.
import assert from 'node:assert/strict';
import { MAX_REGEX_BYTES, type ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, userClient, type AppSpec } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { Victim } from '../support/victim.ts';

const container = (extra: Partial<NonNullable<AppSpec['container']>> = {}): AppSpec => ({ container: { image: 'ghcr.io/acme/shop:1', ...extra } });
const model = (size: string | number): AppSpec => ({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/a/v1', size }, prewarm: { cacheModel: true } });
const ingress = { hosts: ['shop.apps.example.com'] };
const regexes = (n: number, length: number) => Array.from({ length: n }, (_, i) => ({ header: `x-${i}`, regex: '\\pL'.padEnd(length, 'a') }));

interface Attack { name: string; spec: AppSpec; refusal: RegExp }

function sloAttacks(): Attack[] {
  const ratio = '(sum(increase(e{version="{{version}}"}[{{window}}])) or vector(0)) / sum(increase(t{version="{{version}}"}[{{window}}]))';
  /** `analysis`: more of rollout.analysis beside the slo. */
  const gated = (slo: Record<string, unknown>, analysis: Record<string, unknown> = {}): AppSpec => ({
    ...container(), rollout: { steps: [10], analysis: { prometheus: { provider: 'main' }, slo: { objective: 99.9, errorRatio: ratio, ...slo } as never, ...analysis } },
  });
  return [
    { name: 'an SLO objective of 100% (no budget at all) is refused', spec: gated({ objective: 100 }), refusal: /spec\.rollout\.analysis\.slo\.objective: Invalid value: .*must be from 50 to 99\.999 \(percent; 100 leaves no error budget\)/ },
    { name: 'an SLO objective under 50% is refused', spec: gated({ objective: 20 }), refusal: /spec\.rollout\.analysis\.slo\.objective: Invalid value: .*must be from 50 to 99\.999/ },
    { name: 'an SLO window over 90 days is refused', spec: gated({ window: '2161h' }), refusal: /spec\.rollout\.analysis\.slo\.window: Invalid value: .*must be at most 2160h \(90 days/ },
    { name: 'an error-ratio query without {{window}} is refused', spec: gated({ errorRatio: 'sum(rate(errors[5m]))' }), refusal: /spec\.rollout\.analysis\.slo\.errorRatio: Invalid value: .*the query must use \{\{window\}\}/ },
    { name: 'an SLO with errorRatio and good/total both is refused', spec: gated({ good: 'g[{{window}}]', total: 't[{{window}}]' }), refusal: /spec\.rollout\.analysis\.slo\.errorRatio: Invalid value: .*give the error ratio one way: errorRatio, or good and total/ },
    { name: 'an SLO with good but no total is refused', spec: gated({ errorRatio: undefined, good: 'g[{{window}}]' }), refusal: /spec\.rollout\.analysis\.slo\.total: Required value: good and total go together/ },
    { name: 'a burn-rate pair whose short window is not shorter is refused', spec: gated({ burnRates: [{ long: '5m', short: '1h', factor: 14.4 }] }), refusal: /spec\.rollout\.analysis\.slo\.burnRates\[0\]\.short: Invalid value: .*short must be a shorter window than long/ },
    { name: 'a burn-rate factor under 1 (firing within budget) is refused', spec: gated({ burnRates: [{ long: '1h', short: '5m', factor: 0.5 }] }), refusal: /spec\.rollout\.analysis\.slo\.burnRates\[0\]\.factor: Invalid value: 0\.5: .*greater than or equal to 1/ },
    { name: 'a burn-rate window longer than the SLO\'s window is refused', spec: gated({ window: '24h', burnRates: [{ long: '48h', short: '1h', factor: 2 }] }), refusal: /spec\.rollout\.analysis\.slo\.burnRates: Invalid value: .*a burn-rate window cannot be longer than the SLO's window/ },
    { name: 'a freeze floor over 100% is refused', spec: gated({ freezeBelow: 101 }), refusal: /spec\.rollout\.analysis\.slo\.freezeBelow: Invalid value: 101: .*less than or equal to 100/ },
    { name: 'an analysis cadence under 10s is refused', spec: gated({}, { cadence: '1s' }), refusal: /spec\.rollout\.analysis\.cadence: Invalid value: .*must be at least 10s/ },
    { name: 'a bake over 24h is refused', spec: { ...container(), rollout: { steps: [10], bake: '25h' } }, refusal: /spec\.rollout\.bake: Invalid value: .*must be at most 24h/ },
    { name: 'an analysis with neither checks nor an slo is refused', spec: { ...container(), rollout: { steps: [10], analysis: { prometheus: { provider: 'main' } } as never } }, refusal: /spec\.rollout\.analysis\.checks: Required value: analysis needs checks or an slo/ },
    { name: 'a release override without who and why is refused', spec: { ...container(), rollout: { releaseOverride: { version: '0123456789' } as never } }, refusal: /spec\.rollout\.releaseOverride\.by: Required value/ },
    { name: 'a release override naming no version hash is refused', spec: { ...container(), rollout: { releaseOverride: { version: 'latest', by: 'a', reason: 'b' } } }, refusal: /spec\.rollout\.releaseOverride\.version: Invalid value: "latest"/ },
  ];
}

function llmAttacks(): Attack[] {
  const gpu = { limits: { 'nvidia.com/gpu': 1 } };
  const llm = (model: Record<string, unknown> = {}, more: Partial<AppSpec> = {}): AppSpec => ({ model: { serving: 'llm', storageUri: 'hf://acme/chat', resources: gpu, ...model } as never, ...more });
  return [
    { name: 'an LLM app without a GPU limit is refused', spec: llm({ resources: { limits: { memory: '32Gi' } } }), refusal: /spec\.model\.resources: Required value: serving "llm" needs GPUs: set resources\.limits, e\.g\. "nvidia\.com\/gpu": 1/ },
    { name: 'an LLM app from a URI its storage initializer does not read is refused', spec: llm({ storageUri: 'gs://acme/chat' }), refusal: /spec\.model\.storageUri: Invalid value: .*serving "llm" reads hf:\/\/, s3:\/\/, pvc:\/\/ or oci:\/\/ URIs/ },
    { name: 'an LLM app with a predictor format is refused', spec: llm({ format: { name: 'sklearn' } }), refusal: /spec\.model\.format: Invalid value: .*format does not apply to serving "llm"/ },
    { name: 'an LLM app with args is refused, naming VLLM_ADDITIONAL_ARGS', spec: llm({ args: ['--max-model-len=8192'] }), refusal: /spec\.model\.args: Invalid value: .*VLLM_ADDITIONAL_ARGS/ },
    { name: 'a predictor model without format is refused', spec: { model: { storageUri: 'gs://acme/m' } as never }, refusal: /spec\.model\.format: Required value: format is required \(unless serving is "llm"\)/ },
    { name: 'an LLM app with header rules is refused (KServe\'s group splits by weight only)', spec: llm({}, { ingress, rollout: { match: [{ header: 'x-canary', exact: 'y' }] } }), refusal: /spec\.rollout\.match: Invalid value: .*does not apply to serving "llm": KServe's group splits by weight only/ },
    { name: 'an LLM app with a maxScale is refused', spec: llm({}, { scaling: { maxScale: 4 } }), refusal: /spec\.scaling\.maxScale: Invalid value: .*an LLM version runs minScale replicas/ },
    { name: 'an LLM served model name with a space is refused', spec: llm({ servedModelName: 'my model' }), refusal: /spec\.model\.servedModelName: Invalid value: "my model"/ },
    { name: 'an LLM retention over a week is refused', spec: llm({}, { rollout: { retainPrevious: '169h' } }), refusal: /spec\.rollout\.retainPrevious: Invalid value: .*must be at most 168h/ },
    { name: 'LLM canary steps out of range are refused', spec: llm({}, { rollout: { steps: [0, 100] } }), refusal: /spec\.rollout\.steps\[0\]: Invalid value: 0: .*greater than or equal to 1/ },
  ];
}

const attacks: Attack[] = [
  { name: 'a readiness probe host is refused at admission', spec: container({ readinessProbe: { httpGet: { host: '169.254.169.254', path: '/latest/meta-data/', port: 80 } } }), refusal: /spec\.container\.readinessProbe\.httpGet\.host: Forbidden: httpGet\.host is not allowed: a probe checks the pod itself/ },
  { name: 'a liveness probe tcpSocket host is refused at admission', spec: container({ livenessProbe: { tcpSocket: { host: '10.0.0.1', port: 22 } } }), refusal: /spec\.container\.livenessProbe\.tcpSocket\.host: Forbidden: tcpSocket\.host is not allowed/ },
  { name: 'a negative model.size is refused', spec: model('-2Gi'), refusal: /spec\.model\.size: Invalid value: .*must be at least 1Mi/ },
  { name: 'a model.size of 0 is refused', spec: model(0), refusal: /spec\.model\.size: Invalid value: .*must be at least 1Mi/ },
  // The cache budget counts what the tenant declares, not what lands on disk: no declaration below any real model's files.
  ...['1', '1m', '0.000001', '1023Ki'].map((size) => ({ name: `a model.size of ${size} is refused (attack: a cache declared tiny, charged nothing)`, spec: model(size), refusal: /spec\.model\.size: Invalid value: .*must be at least 1Mi, e\.g\. "12Gi"/ })),
  { name: 'a model.size of 1048575 bytes is refused', spec: model(1_048_575), refusal: /spec\.model\.size: Invalid value: .*must be at least 1Mi/ },
  { name: 'an unbounded prewarm.leadTime is refused (attack: make the app loop on a parse error)', spec: { ...container(), prewarm: { leadTime: '999999h' } }, refusal: /spec\.prewarm\.leadTime: Invalid value: .*must be at most 24h/ },
  { name: 'a prewarm.leadTime past what a duration can hold is refused', spec: { ...container(), prewarm: { leadTime: '99999999999999h' } }, refusal: /spec\.prewarm\.leadTime: (Invalid value|Too long)/ },
  { name: 'a warmup deadline over 6h is refused', spec: { ...container(), prewarm: { warmup: { path: '/', deadline: '6h1s' } } }, refusal: /spec\.prewarm\.warmup\.deadline: Invalid value: .*must be at most 6h/ },
  { name: 'a warmup request timeout over 10m is refused', spec: { ...container(), prewarm: { warmup: { path: '/', timeout: '11m' } } }, refusal: /spec\.prewarm\.warmup\.timeout: Invalid value: .*must be at most 10m/ },
  { name: 'a rollout interval over 24h is refused', spec: { ...container(), rollout: { steps: [10], interval: '25h' } }, refusal: /spec\.rollout\.interval: Invalid value: .*must be at most 24h/ },
  { name: 'a progressDeadline over 24h is refused', spec: { ...container(), rollout: { progressDeadline: '24h1ms' } }, refusal: /spec\.rollout\.progressDeadline: Invalid value: .*must be at most 24h/ },
  { name: 'a window longer than a year is refused', spec: { ...container(), scaling: { windows: [{ name: 'w', schedule: '0 8 * * *', duration: '8785h', minScale: 1 }] } }, refusal: /spec\.scaling\.windows\[0\]\.duration: Invalid value: .*must be at most 8784h/ },
  // Sticky sessions (issue 35): the cookie's attributes are what a browser accepts, its life bounded.
  { name: 'a session cookie kept over 400 days is refused', spec: { ...container(), ingress, rollout: { stickiness: { maxAge: '9601h' } } }, refusal: /spec\.rollout\.stickiness\.maxAge: Invalid value: .*must be at most 9600h \(browsers keep a cookie at most 400 days\)/ },
  { name: 'a session cookie with sameSite None but not secure is refused', spec: { ...container(), ingress, rollout: { stickiness: { sameSite: 'None' } } }, refusal: /spec\.rollout\.stickiness\.secure: Invalid value: .*sameSite None needs secure: true/ },
  { name: 'a "__Host-" session cookie that is not secure is refused', spec: { ...container(), ingress, rollout: { stickiness: { cookieName: '__Host-shop' } } }, refusal: /spec\.rollout\.stickiness\.cookieName: Invalid value: .*a "__Host-" cookie \(in any case\) needs secure: true and path "\/"/ },
  { name: 'a session cookie name that is not a plain token is refused', spec: { ...container(), ingress, rollout: { stickiness: { cookieName: 'a=b; Domain=evil.example' } } }, refusal: /spec\.rollout\.stickiness\.cookieName: Invalid value: .*a cookie name holds only letters, digits, "_" and "-"/ },
  { name: 'a session cookie path that would add an attribute is refused', spec: { ...container(), ingress, rollout: { stickiness: { path: '/; Domain=example.com' } } }, refusal: /spec\.rollout\.stickiness\.path: Invalid value: .*a cookie path starts with "\/" and holds only visible ASCII characters other than ";" and "%"/ },
  { name: 'a session cookie path with "%" is refused (attack: an Envoy format command in a header the gateway adds)', spec: { ...container(), ingress, rollout: { stickiness: { path: '/%ENVIRONMENT(HOME)%' } } }, refusal: /spec\.rollout\.stickiness\.path: Invalid value: .*other than ";" and "%"/ },
  { name: 'a "__host-" session cookie (any case) that is not secure is refused', spec: { ...container(), ingress, rollout: { stickiness: { cookieName: '__host-shop' } } }, refusal: /spec\.rollout\.stickiness\.cookieName: Invalid value: .*a "__Host-" cookie \(in any case\) needs secure: true/ },
  { name: 'sticky sessions without spec.ingress are refused', spec: { ...container(), rollout: { stickiness: {} } }, refusal: /spec\.rollout\.stickiness: Invalid value: .*rollout\.stickiness needs spec\.ingress/ },
  // SLO-gated releases (issue 37): the objective, windows, factors and the override are bounded and named.
  ...sloAttacks(),
  // LLM apps (issue 36): what KServe's LLMInferenceService needs, and what its group route cannot do, refused by name.
  ...llmAttacks(),
  { name: 'a scaleToZeroAfter over 1h is refused', spec: { ...container(), scaling: { scaleToZeroAfter: '61m' } }, refusal: /spec\.scaling\.scaleToZeroAfter: Invalid value: .*must be at most 1h/ },
  { name: 'a route timeout over 1h is refused', spec: { ...container(), ingress: { ...ingress, timeout: '2h', retries: { attempts: 1, perTryTimeout: '2h' } } }, refusal: /^(?=.*spec\.ingress\.timeout: Invalid value: "2h": must be at most 1h)(?=.*spec\.ingress\.retries\.perTryTimeout: Invalid value: "2h": must be at most 1h)/s },
  { name: `header regexes past ${MAX_REGEX_BYTES} characters in all are refused (attack: stall the operator with regexes)`, spec: { ...container(), ingress, rollout: { match: regexes(16, 1000) } }, refusal: new RegExp(`spec\\.rollout\\.match: Invalid value: .*the regexes of match total more than ${MAX_REGEX_BYTES} characters`) },
];

describe('admission bounds: durations, model.size, probe hosts, the regex budget and nesting depth (integration)', function () {
  this.timeout(600_000);
  let op: RunningOperator;
  let ns: string;
  let victim: Victim;

  before(async () => {
    op = await startOperator();
    ns = await freshNamespace('bounds');
    victim = await new Victim(await freshNamespace('bounds-victim')).start();
  });
  after(async () => { await op?.stop(); });

  for (const a of attacks) {
    it(a.name, async () => {
      await assert.rejects(userClient().apply(app(ns, 'attacker', a.spec)), (err: unknown) => {
        assert.ok(err instanceof ApiError && err.code === 422, String(err));
        assert.match(err.message, a.refusal);
        return true;
      });
      await victim.servesAndAppliesItsNextEdit();
    });
  }

  it('a deeply nested affinity is refused at admission, naming the field (attack: make the API server and the operator walk JSON of any depth)', async () => {
    // 200 levels under a field the schema does not declare: free-form JSON there would be stored, and hashed and rendered on every reconcile.
    let nest: unknown = 'x';
    for (let i = 0; i < 200; i++) nest = i % 2 ? [nest] : { deeper: nest };
    const nested = (name: string) => app(ns, name, container({ affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { nest } as never } }] } } }));
    // A server-side apply (kubectl apply --server-side, GitOps tools) is refused, naming the field.
    await assert.rejects(userClient().apply(nested('nested')), (err: unknown) => {
      assert.ok(err instanceof ApiError && err.code >= 400, String(err));
      assert.match(err.message, /\.spec\.container\.affinity\.podAntiAffinity\.preferredDuringSchedulingIgnoredDuringExecution.*\.podAffinityTerm\.labelSelector\.nest: field not declared in schema/);
      return true;
    });
    // A plain create that does not ask for strict field validation is stored without it (pruned), never with it.
    const created = await userClient().create<ServerlessApp>(Kinds.ServerlessApp, nested('pruned'));
    assert.deepEqual(created.spec.container?.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.labelSelector, {});
    await userClient().delete(Kinds.ServerlessApp, ns, 'pruned');
    await victim.servesAndAppliesItsNextEdit();
  });

  it('admits every bound at its edge', async () => {
    const edges: AppSpec = {
      container: {
        image: 'ghcr.io/acme/shop:1',
        readinessProbe: { httpGet: { path: '/ready', port: 8080 } }, livenessProbe: { tcpSocket: { port: 8080 } },
      },
      scaling: { scaleToZeroAfter: '1h', windows: [{ name: 'w', schedule: '0 8 * * *', duration: '8784h', minScale: 1 }] },
      prewarm: { leadTime: '24h', warmup: { path: '/', timeout: '10m', deadline: '6h' } },
      rollout: { steps: [10], interval: '24h', progressDeadline: '24h', match: regexes(4, MAX_REGEX_BYTES / 4) },
      ingress: { ...ingress, timeout: '1h', retries: { attempts: 1, perTryTimeout: '1h' } },
    };
    const admitted = await userClient().apply<ServerlessApp>(app(ns, 'edges', edges), { dryRun: true });
    assert.equal(admitted.spec.prewarm?.leadTime, '24h');
    await userClient().apply(app(ns, 'model-edge', model('1Mi')), { dryRun: true });
    const sticky = await userClient().apply<ServerlessApp>(app(ns, 'sticky-edge', { ...container(), ingress, rollout: { stickiness: { cookieName: '__Host-s', maxAge: '9600h', secure: true, sameSite: 'None' } } }), { dryRun: true });
    assert.deepEqual(sticky.spec.rollout?.stickiness, { cookieName: '__Host-s', maxAge: '9600h', path: '/', secure: true, httpOnly: true, sameSite: 'None' }, 'the defaults the API server fills');
    await userClient().apply(app(ns, 'model-edge-bytes', model(1_048_576)), { dryRun: true });
    await userClient().apply(app(ns, 'llm-edge', { model: { serving: 'llm', storageUri: 'oci://registry/acme/chat:1', servedModelName: 'acme/Chat-7B.v2', resources: { limits: { 'amd.com/gpu': 8 } } }, rollout: { retainPrevious: '168h' } }), { dryRun: true });
  });

  it('refuses switching an existing app to or from serving llm, or an LLM\'s served name, naming the field', async () => {
    await userClient().apply(app(ns, 'switcher', { model: { format: { name: 'sklearn' }, storageUri: 's3://acme/m' } }));
    await assert.rejects(userClient().apply(app(ns, 'switcher', { model: { serving: 'llm', storageUri: 's3://acme/m', resources: { limits: { 'nvidia.com/gpu': 1 } } } })), (err: unknown) => {
      assert.ok(err instanceof ApiError && err.code === 422, String(err));
      assert.match(err.message, /spec\.model\.serving: Invalid value: .*model\.serving "llm" cannot be set on or removed from an existing app: create a new app/);
      return true;
    });
    // KServe splits a group only across versions serving the same name: a new one would never get traffic.
    const llm = (servedModelName: string) => app(ns, 'namer', { model: { serving: 'llm', storageUri: 's3://acme/m', servedModelName, resources: { limits: { 'nvidia.com/mig-1g.10gb': 1 } } } });
    await userClient().apply(llm('acme/chat'));
    await assert.rejects(userClient().apply(llm('acme/chat-2')), (err: unknown) => {
      assert.ok(err instanceof ApiError && err.code === 422, String(err));
      assert.match(err.message, /spec\.model\.servedModelName: Invalid value: .*servedModelName cannot change: KServe splits traffic only across versions serving the same name/);
      return true;
    });
  });
});
