// Red team of tenant isolation (issue 21, second look): attacks by a tenant
// whose ServiceAccount may only manage ServerlessApps in its own namespace,
// against the operator under the README's recommended policy. Each test asserts
// the SECURE behaviour, so each fails while its hole is open. The first group
// needs no cluster (validation, render and window math are pure); the second
// runs on the rig's real API server, scheduler, KWOK nodes and Knative.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { HostClaim } from '../../src/api/v1alpha1/hostclaim.ts';
import { controlKey } from '../../src/api/v1alpha1/pod-metadata.ts';
import { MAX_REGEX_BYTES, type ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { re2ProgramSizeBound } from '../../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, validateApp, type ValidationPolicy } from '../../src/api/v1alpha1/validation.ts';
import { invalidSpecStatus } from '../../src/planner/status.ts';
import { validateWindows } from '../../src/api/v1alpha1/window-validation.ts';
import { effectiveScale } from '../../src/scaling/windows.ts';
import { containerApp, modelApp } from '../../src/testing/apps.ts';
import { ApiError } from '../../src/runtime/client.ts';
import { Kinds, type ResourceKind } from '../../src/util/kinds.ts';
import { app, applyApp, condition, getApp, getKsvc, knativeReady, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace } from '../support/cluster.ts';
import { LoopbackServer } from '../support/http-server.ts';
import { findCondition } from '../../src/util/conditions.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { Victim } from '../support/victim.ts';
import { SETTLE_MS, waitFor } from '../support/wait.ts';

/** The README's recommended policy for many teams. */
const RECOMMENDED: ValidationPolicy = {
  allowedGateways: ['istio-system/public-gateway', '{namespace}/*'],
  allowedHostSuffixes: ['{namespace}.apps.example.com'],
  allowWildcardHosts: false,
  analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false },
  allowedStorageUriPrefixes: ['s3://models/{namespace}/'],
  allowSecretReferences: false,
};

/** What the validation comment promises per app (MAX_REGEX_PROGRAM_SIZE: "under about 100 ms"); the issue asks for a bound on any one app's hold of the event loop. */
const ONE_APP_EVENT_LOOP_MS = 100;
/** What the provider answers for any series: a value no status or Event may show. */
const SERIES_VALUE = '987654.321';
/** The schema's own limit on a condition message (statusSchema conditions[].message maxLength). */
const CONDITION_MESSAGE_MAX = 32768;

const unique = () => randomBytes(4).toString('hex');

/**
 * The least CPU time, on this thread only, that `run(i)` takes over three runs, each given a fresh
 * input so nothing one run caches helps the next: how long one app's input holds the event loop.
 * Wall time would count the other processes of a shared machine, and process.cpuUsage() the
 * process's other threads (GC, workers); noise only adds, so the least of three is the cost.
 */
function leastCpu<T>(run: (i: number) => T): { value: T; ms: number } {
  let best: { value: T; ms: number } | undefined;
  for (let i = 0; i < 3; i++) {
    const t0 = process.threadCpuUsage();
    const value = run(i);
    const { user, system } = process.threadCpuUsage(t0);
    const ms = (user + system) / 1000;
    if (!best || ms < best.ms) best = { value, ms };
  }
  return best!;
}

describe('red team: what one tenant can do through validation and rendering (no cluster)', () => {
  it('header regexes within the admission budget validate within one app\'s share of the event loop (attack: case-folded Unicode classes the size bound does not count)', () => {
    // (?i)\pL is one RE2 instruction by the size bound, but RE2JS folds every letter of
    // Unicode to build it: 4 regexes of 1 KiB stay far inside both budgets.
    const attack = (salt: string) => Array.from({ length: 4 }, (_, i) => `(?i)${'\\pL'.repeat(337)}${salt}${i}`);
    const appOf = (regexes: string[]) => containerApp({
      ingress: { hosts: ['shop.team-a.apps.example.com'] },
      rollout: { match: regexes.map((regex) => ({ header: 'x-canary', regex })) },
    });
    const regexes = attack('probe');
    assert.ok(regexes.join('').length <= MAX_REGEX_BYTES, 'within the CRD\'s 4096-character budget');
    // Each run with its own salt: a regex cache, if there were one, would not help.
    const { value, ms } = leastCpu(() => validateApp(appOf(attack(unique())), RECOMMENDED));
    // Either inside the RE2 program budget and valid, or refused by that budget, naming the regex.
    const admitted = regexes.reduce((n, r) => n + re2ProgramSizeBound(r), 0) <= MAX_REGEX_PROGRAM_SIZE;
    if (admitted) assert.deepEqual(value.map((p) => p.reason), [], 'the regexes are valid RE2');
    else assert.ok(value.some((p) => p.field.startsWith('spec.rollout.match[') && /too large/.test(p.message)), 'refused by the program budget, naming the regex');
    assert.ok(ms <= ONE_APP_EVENT_LOOP_MS, `validating one app's header regexes held the event loop ${ms.toFixed(0)} ms (bound ${ONE_APP_EVENT_LOOP_MS} ms); a new generation with a changed regex pays it again`);
  });

  it('scale windows within the admission bounds are evaluated within one app\'s share of the event loop (attack: 16 yearly windows in distinct zones, each open a whole year)', () => {
    // Zones and a minute nobody else uses: nothing cached by another app helps.
    const zones = Intl.supportedValuesOf('timeZone');
    const minute = Math.floor(Math.random() * 55);
    const offset = Math.floor(Math.random() * (zones.length - 16 * 5));
    const attack = (m: number, first: number) => Array.from({ length: 16 }, (_, i) => ({
      name: `w${i}`, schedule: `${m} 2 1-7 3 0`, duration: '8783h', timeZone: zones[first + i]!, minScale: 1,
    }));
    assert.deepEqual(validateWindows(attack(minute, offset)), [], 'admitted and valid: each opens every year');
    // What a process pays once (cron-parser's luxon, Intl, the JIT), not each app: the same attack by
    // another app, in other zones at another minute, so nothing it caches helps the ones measured.
    effectiveScale({ minScale: 0 }, attack(minute, offset), 3_600_000, new Date());
    const { ms } = leastCpu((i) => effectiveScale({ minScale: 0 }, attack(minute + 1 + i, offset + 16 * (i + 1)), 3_600_000, new Date()));
    assert.ok(ms <= ONE_APP_EVENT_LOOP_MS, `one app's window math held the event loop ${ms.toFixed(0)} ms (bound ${ONE_APP_EVENT_LOOP_MS} ms); every edit of a schedule or zone pays it again`);
  });

  it('pod annotations that steer the network or the pod\'s cloud identity are control keys (attack: Calico IP and pool, kube2iam role, injected agents)', () => {
    const keys = [
      'cni.projectcalico.org/ipAddrs', // pick another pod's IP: IP-based policies and allow-lists
      'cni.projectcalico.org/ipv4pools', // an IP pool another team's egress rules trust
      'iam.amazonaws.com/role', // kube2iam / kiam: any IAM role the node may assume
      'vault.hashicorp.com/agent-inject', // Vault's injector with a role of the tenant's choice
      'instrumentation.opentelemetry.io/inject-java', // an init container from "other-ns/instrumentation"
      'sidecar.opentelemetry.io/inject',
      'linkerd.io/inject', 'config.linkerd.io/skip-outbound-ports',
    ];
    const open = keys.filter((k) => controlKey(k, 'annotation') === undefined);
    assert.deepEqual(open, [], 'each is refused unless the platform lists it (an allow-list of open keys, not a deny-list of control domains)');
  });

  it('a toleration of every taint is refused (attack: run on the control plane and on another team\'s dedicated nodes)', () => {
    const app = containerApp({ ingress: { hosts: ['shop.team-a.apps.example.com'] } });
    app.spec.container = { ...app.spec.container!, tolerations: [{ operator: 'Exists' }], nodeSelector: { 'kubernetes.io/hostname': 'control-plane-1' } };
    assert.ok(validateApp(app, RECOMMENDED).some((p) => p.field.startsWith('spec.container.tolerations')),
      'tolerating every taint (NoExecute and the control plane\'s included) needs the platform\'s leave');
  });

  it('required pod (anti-)affinity to another namespace\'s pods is refused (attack: keep another team\'s pods off every node)', () => {
    const app = containerApp({ ingress: { hosts: ['shop.team-a.apps.example.com'] } });
    app.spec.container = {
      ...app.spec.container!,
      affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/os', namespaceSelector: {}, labelSelector: { matchLabels: { 'serving.knative.dev/service': 'checkout' } } }] } },
    };
    assert.ok(validateApp(app, RECOMMENDED).some((p) => p.field.startsWith('spec.container.affinity')),
      'an affinity term outside the app\'s own namespace needs the platform\'s leave');
  });

  it('a storage URI cannot leave the namespace\'s prefix with ".." segments (attack: read another team\'s model)', () => {
    const app = modelApp();
    app.metadata.namespace = 'team-b';
    app.spec.model = { ...app.spec.model!, storageUri: 's3://models/team-b/../team-a/fraud/model.joblib' };
    assert.ok(validateApp(app, RECOMMENDED).some((p) => p.reason === 'StorageUriNotAllowed'), 'a prefix is a path, not the first characters of a string');
  });

  it('the Ready message of an admitted spec fits the status schema (attack: a refusal too long to be written)', () => {
    // 256 env entries (the CRD's maxItems) each naming a Secret: admitted, refused by the operator one by one.
    const app = containerApp({ ingress: { hosts: ['shop.team-a.apps.example.com'] } });
    app.spec.container = { ...app.spec.container!, env: Array.from({ length: 256 }, (_, i) => ({ name: `S${i}`, valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } })) };
    const problems = validateApp(app, RECOMMENDED);
    assert.equal(problems.length, 256);
    const ready = findCondition(invalidSpecStatus(app as ServerlessApp, problems, new Date()).conditions, 'Ready')!;
    assert.ok(ready.message.length <= CONDITION_MESSAGE_MAX, `the message is ${ready.message.length} characters: the API server refuses the status write (maxLength ${CONDITION_MESSAGE_MAX}), and the app never shows why it is refused`);
  });
});

const Pod: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
interface PodObj { metadata: { name: string; labels?: Record<string, string> }; spec?: { nodeName?: string }; status?: { phase?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> } }

/** Yearly windows in distinct zones at a minute nobody else uses, each open a whole year: admitted, and each costs window math. */
function yearlyWindows(n: number) {
  const zones = Intl.supportedValuesOf('timeZone');
  const minute = Math.floor(Math.random() * 60);
  const offset = Math.floor(Math.random() * (zones.length - n));
  return Array.from({ length: n }, (_, i) => ({ name: `w${i}`, schedule: `${minute} 2 1-7 3 0`, duration: '8783h', timeZone: zones[offset + i]!, minScale: 1 }));
}

interface RigAttack {
  name: string;
  spec: (ns: string) => ServerlessApp['spec'];
  /** The operator's verdict on the attacker's app: refused with this reason, the message naming the field; or only judged (a bound, not a refusal). */
  verdict: { reason: string; field: RegExp } | 'judged';
}

/**
 * Attacks the CRD admits and the operator refuses or bounds, each made from a namespace of its own
 * while a victim in another namespace serves: what the no-cluster tests above show of the rule,
 * shown here through the operator, with the victim's Knative Service still serving and its next edit applied.
 */
const rigAttacks: RigAttack[] = [
  {
    name: 'a toleration of every taint is refused by the operator (attack: run on the control plane and on another team\'s dedicated nodes)',
    spec: () => ({ container: { image: 'ghcr.io/attacker/web:1', tolerations: [{ operator: 'Exists' }] } }),
    verdict: { reason: 'SchedulingNotAllowed', field: /spec\.container\.tolerations\[0\]/ },
  },
  {
    name: 'pinning pods to a named node is refused by the operator (attack: crowd one node, or reach a node set aside)',
    spec: () => ({ container: { image: 'ghcr.io/attacker/web:1', nodeSelector: { 'kubernetes.io/hostname': 'control-plane-1' } } }),
    verdict: { reason: 'SchedulingNotAllowed', field: /spec\.container\.nodeSelector\["kubernetes\.io\/hostname"\]/ },
  },
  {
    name: 'a pod anti-affinity term over every namespace (namespaceSelector {}) is refused by the operator (attack: keep another team\'s pods off every node)',
    spec: () => ({ container: { image: 'ghcr.io/attacker/web:1', affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/os', namespaceSelector: {}, labelSelector: { matchLabels: { 'serving.knative.dev/service': 'victim' } } }] } } } }),
    verdict: { reason: 'SchedulingNotAllowed', field: /spec\.container\.affinity\.podAntiAffinity\.requiredDuringSchedulingIgnoredDuringExecution\[0\]/ },
  },
  {
    name: 'a storage URI leaving the namespace\'s prefix with ".." is refused by the operator (attack: read another team\'s model)',
    spec: (ns) => ({ model: { format: { name: 'sklearn' }, storageUri: `s3://models/${ns}/../team-a/fraud/model.joblib` } }),
    verdict: { reason: 'StorageUriNotAllowed', field: /spec\.model\.storageUri/ },
  },
  {
    name: '256 Secret references are refused with a Ready message the status can hold (attack: a refusal too long to be written)',
    spec: () => ({ container: { image: 'ghcr.io/attacker/web:1', env: Array.from({ length: 256 }, (_, i) => ({ name: `S${i}`, valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } })) } }),
    verdict: { reason: 'SecretReferenceNotAllowed', field: /spec\.container\.env\[0\]\.valueFrom\.secretKeyRef/ },
  },
  {
    name: 'header regexes of case-folded Unicode classes are judged within their budget (attack: stall the operator with regexes the size bound does not count)',
    spec: (ns) => ({ container: { image: 'ghcr.io/attacker/web:1' }, ingress: { hosts: [`shop.${ns}.apps.example.com`] }, rollout: { match: Array.from({ length: 4 }, (_, i) => ({ header: 'x-canary', regex: `(?i)${'\\pL'.repeat(337)}${unique()}${i}` })) } }),
    verdict: 'judged',
  },
  {
    name: '16 yearly scale windows in distinct zones are judged within their bound (attack: stall the operator with window math)',
    spec: () => ({ container: { image: 'ghcr.io/attacker/web:1' }, scaling: { minScale: 0, maxScale: 2, windows: yearlyWindows(16) } }),
    verdict: 'judged',
  },
];

describe('red team: attacks on the rig (integration)', function () {
  this.timeout(600_000);
  let operator: RunningOperator;
  /** A bystander in a namespace of its own: after each attack it still serves its version and applies its next edit. */
  let victim: Victim;
  /** The platform's provider-only Prometheus: it holds every namespace's series and answers every query with SERIES_VALUE. */
  let prometheus: LoopbackServer;

  before(async () => {
    prometheus = await new LoopbackServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: { namespace: 'rt-payments' }, value: [Date.now() / 1000, SERIES_VALUE] }] } }));
    }).start();
    operator = await startOperator({
      allowedGateways: RECOMMENDED.allowedGateways, allowedHostSuffixes: RECOMMENDED.allowedHostSuffixes!, allowWildcardHosts: false,
      allowedStorageUriPrefixes: RECOMMENDED.allowedStorageUriPrefixes!, allowSecretReferences: false,
      analysisProviders: [{ name: 'main', url: prometheus.url }], allowAnalysisAddress: false,
    });
    victim = await new Victim(await freshNamespace('rt-bystander')).start();
  });
  after(async () => {
    await operator?.stop();
    await prometheus?.stop();
  });

  it('an analysis query over another namespace\'s series carries the app\'s namespace for prom-label-proxy, and none of its values reach status or Events (attack: read other namespaces\' metrics)', async () => {
    const ns = await freshNamespace('rt-metrics');
    const image = (tag: number) => `ghcr.io/attacker/web:${tag}`;
    await applyApp(app(ns, 'snoop', { container: { image: image(1) } }));
    await waitForApp(ns, 'snoop', (a) => readyTrue(a) && a.status?.versions?.stable?.image === image(1), 'the attacker\'s first version serves', 150_000);
    const leak = 'sum(payments_revenue_total{namespace="rt-payments"})';
    await applyApp(app(ns, 'snoop', {
      container: { image: image(2) },
      rollout: { steps: [50], interval: '10s', analysis: { prometheus: { provider: 'main' }, checks: [{ name: 'leak', query: leak, max: 1 }] } },
    }));
    const asked = await waitFor('the attacker\'s query at the provider', async () => prometheus.requests.find((r) => new URL(r.url, 'http://x').searchParams.get('query') === leak), { timeoutMs: 180_000 });
    assert.deepEqual(new URL(asked.url, 'http://x').searchParams.getAll('namespace'), [ns], 'the query carries the app\'s namespace, once, for prom-label-proxy to enforce');
    const judged = await waitForApp(ns, 'snoop', (a) => JSON.stringify(a.status ?? {}).includes('leak'), 'the check reported in status', SETTLE_MS);
    const said = JSON.stringify(judged.status);
    assert.ok(!said.includes(SERIES_VALUE) && !said.includes('987654'), `a value of another namespace's series reached status: ${said}`);
    const events = (await userClient().list<{ note?: string; message?: string }>(Kinds.Event, ns)).items;
    assert.ok(events.every((e) => !`${e.note ?? ''}${e.message ?? ''}`.includes('987654')), 'nor an Event');
    await victim.servesAndAppliesItsNextEdit();
  });

  for (const a of rigAttacks) {
    it(a.name, async () => {
      const ns = await freshNamespace('rt-attack');
      const { metadata } = await applyApp(app(ns, 'attacker', a.spec(ns)));
      const judged = await waitForApp(ns, 'attacker', (x) => x.status?.observedGeneration === metadata.generation && condition(x) !== undefined, 'the operator judged the attacker\'s app', 120_000);
      if (a.verdict !== 'judged') {
        const ready = condition(judged)!;
        assert.deepEqual([ready.status, ready.reason], ['False', a.verdict.reason], ready.message);
        assert.match(ready.message, a.verdict.field, 'the message names the field');
        assert.ok(ready.message.length <= CONDITION_MESSAGE_MAX);
        assert.equal(await getKsvc(ns, 'attacker'), undefined, 'nothing of the refused spec was rendered');
      }
      await victim.servesAndAppliesItsNextEdit();
    });
  }

  it('a required anti-affinity term over another namespace\'s pods cannot stop its next version from scheduling (attack: keep another team\'s pods off every node)', async () => {
    const victimNs = await freshNamespace('rt-victim');
    const attackerNs = await freshNamespace('rt-attacker');
    const image = (tag: number) => `ghcr.io/victim/checkout:${tag}`;
    await applyApp(app(victimNs, 'checkout', { container: { image: image(1) }, scaling: { minScale: 1, maxScale: 3 } }));
    const before = await waitForApp(victimNs, 'checkout', (a) => readyTrue(a) && a.status?.versions?.stable?.image === image(1), 'the victim serves checkout:1', 150_000);
    const running = before.status!.versions!.stable!.revision!;

    // The attacker's pods refuse to share a topology domain with any pod of the victim's service other
    // than the revision running now. kubernetes.io/os is one domain for every node; existing pods'
    // required anti-affinity is symmetric, so the scheduler keeps the victim's next pods off all of them.
    await applyApp(app(attackerNs, 'squatter', {
      container: {
        image: 'ghcr.io/attacker/sleep:1',
        affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{
          topologyKey: 'kubernetes.io/os',
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': victimNs } },
          labelSelector: { matchExpressions: [
            { key: 'serving.knative.dev/service', operator: 'In', values: ['checkout'] },
            { key: 'serving.knative.dev/revision', operator: 'NotIn', values: [running] },
          ] },
        }] } },
      },
      scaling: { minScale: 1, maxScale: 1 },
    }));
    // Either the operator refuses it, or its pod runs and the victim's next edit must still be applied.
    // Judged: served (Ready), or refused (Stalled); Reconciling while its first version starts is neither yet.
    const squatter = await waitForApp(attackerNs, 'squatter', (a) => a.status?.observedGeneration === a.metadata.generation && (readyTrue(a) || condition(a, 'Stalled') !== undefined), 'the operator judged the attacker\'s app', 150_000);
    if (!readyTrue(squatter)) {
      assert.equal(condition(squatter)!.reason, 'SchedulingNotAllowed', condition(squatter)!.message);
      assert.match(condition(squatter)!.message, /spec\.container\.affinity\.podAntiAffinity\.requiredDuringSchedulingIgnoredDuringExecution\[0\]/);
    }
    // Refused or running, the victim still serves checkout:1 and applies its next edit.
    const serving = await getKsvc(victimNs, 'checkout');
    assert.ok(knativeReady(serving), 'the victim\'s Knative Service still serves');
    assert.equal(serving!.spec.template.spec.containers[0]!.image, image(1), 'its last good version');
    await applyApp(app(victimNs, 'checkout', { container: { image: image(2) }, scaling: { minScale: 1, maxScale: 3 } }));
    try {
      await waitForApp(victimNs, 'checkout', (a) => readyTrue(a) && a.status?.versions?.stable?.image === image(2), 'the victim applies its next edit (checkout:2)', 120_000);
    } catch (err) {
      const pods = (await userClient().list<PodObj>(Pod, victimNs)).items.filter((p) => p.metadata.labels?.['serving.knative.dev/revision'] !== running);
      const why = pods.map((p) => `${p.metadata.name}: ${p.status?.phase} ${JSON.stringify(findCondition(p.status?.conditions, 'PodScheduled'))}`).join('; ');
      throw new Error(`${(err as Error).message}; the new revision's pods: ${why || '(none)'}`);
    }
    // Knative's own conditions can trail the app's report by a moment (its Route catching up).
    await waitFor('the victim\'s Knative Service Ready, serving checkout:2', async () => {
      const k = await getKsvc(victimNs, 'checkout');
      return knativeReady(k) && k!.spec.template.spec.containers[0]!.image === image(2);
    }, { timeoutMs: SETTLE_MS });
  });

  it('Secret references and a probe host spelled in another case are refused visibly and never reach a revision (attack: keys the operator compares case-sensitively, in fields kept as written)', async () => {
    // The CRD keeps env[].valueFrom, envFrom[] and probes as written, and the operator looks for
    // secretKeyRef, secretRef and host in lower case only: these pass both. Knative's schema refuses
    // them at the apply (held on the rig), but the operator reads that refusal as a server error
    // and retries it for ever: the app never gets a condition saying why.
    const ns = await freshNamespace('rt-case');
    // Refused at admission (a CRD that types these fields) or by the operator, visibly either way.
    // Spelled past the typed fields on purpose: a tenant's YAML is not typechecked.
    const smuggled = {
      image: 'ghcr.io/attacker/web:1',
      env: [{ name: 'DB', valueFrom: { SecretKeyRef: { name: 'db', key: 'password' } } }],
      envFrom: [{ SecretRef: { name: 'db' } }],
      readinessProbe: { httpGet: { Host: '169.254.169.254', path: '/latest/meta-data/', port: 8080 } },
    } as unknown as NonNullable<ServerlessApp['spec']['container']>;
    const admitted = await applyApp(app(ns, 'smuggler', { container: smuggled })).then(() => undefined, (e: unknown) => e);
    if (admitted instanceof ApiError) {
      // A server-side apply of undeclared fields is answered 500 "failed to create typed patch object", naming each field.
      assert.ok(admitted.code === 422 || admitted.code === 400 || (admitted.code === 500 && /failed to create typed patch object/.test(admitted.message)), `refused at admission: ${admitted.message}`);
      for (const field of ['valueFrom.SecretKeyRef', 'envFrom[0].SecretRef', 'httpGet.Host']) assert.ok(admitted.message.includes(field), `the refusal names ${field}: ${admitted.message}`);
    } else {
      if (admitted !== undefined) throw admitted;
      const judged = await waitForApp(ns, 'smuggler', (a) => condition(a)?.status === 'False', 'the app refused with Ready=False and a reason', SETTLE_MS);
      assert.match(condition(judged)!.message, /SecretKeyRef|SecretRef|Host/, 'the message names the field');
    }
    const revisions = (await userClient().list<{ spec: unknown }>(Kinds.KnativeRevision, ns)).items;
    const text = JSON.stringify(revisions).toLowerCase();
    for (const smuggled of ['secretkeyref', 'secretref', '169.254.169.254']) assert.ok(!text.includes(smuggled), `${smuggled} reached a revision of ${ns}/smuggler`);
    await victim.servesAndAppliesItsNextEdit();
  });

  it('a namespace cannot pile up cluster-scoped HostClaims by editing its hosts (attack: grow etcd and every replica\'s cache without bound)', async () => {
    /** Generous: four apps' worth of hosts (16 each, the CRD's maxItems). */
    const CLAIMS_PER_NAMESPACE = 64;
    const ns = await freshNamespace('rt-claims');
    const rounds = 6;
    for (let round = 0; round < rounds; round++) {
      const hosts = Array.from({ length: 16 }, (_, i) => `r${round}-h${i}.${ns}.apps.example.com`);
      await applyApp(app(ns, 'hoarder', { container: { image: 'ghcr.io/attacker/web:1' }, ingress: { hosts } }));
      // Judged: either routed (its claims made) or refused with a reason that names the budget.
      const judged = await waitForApp(ns, 'hoarder', (a) => condition(a) !== undefined && (readyTrue(a) || condition(a)!.status === 'False'), `round ${round} judged`, 150_000);
      if (!readyTrue(judged)) {
        assert.equal(condition(judged)!.reason, 'HostClaimQuotaExceeded', `round ${round}: refused for the budget, not for another reason (${condition(judged)!.message})`);
        assert.match(condition(judged)!.message, /^spec\.ingress\.hosts: /, 'the message names the field');
        break;
      }
    }
    const claims = (await userClient().list<HostClaim>(Kinds.HostClaim)).items.filter((c) => c.spec.namespace === ns);
    assert.ok(claims.length <= CLAIMS_PER_NAMESPACE, `namespace ${ns} holds ${claims.length} HostClaims after ${rounds} edits of one app's hosts, none of them released (bound ${CLAIMS_PER_NAMESPACE})`);
    await victim.servesAndAppliesItsNextEdit();
  });

  it('warmups past the namespace\'s share wait for a slot, visibly, and the operator goes on for everyone (attack: 1,000 warmup requests of 64 KiB per app, more apps than slots, every request failing)', async () => {
    const SLOTS = 8; // --max-warmups-per-namespace, the default the operator runs with here
    const ns = await freshNamespace('rt-warm');
    const names = Array.from({ length: SLOTS + 2 }, (_, i) => `warm-${i}`);
    // Each warmup targets its revision's private Service, which no one answers here: every request fails and is
    // retried until the 6 h deadline, so each task holds its slot for as long as the schema lets it.
    const warmup = { path: '/v1/models/m:predict', method: 'POST' as const, body: 'x'.repeat(65_536), count: 1000, timeout: '10m', deadline: '6h' };
    await Promise.all(names.map((n) => applyApp(app(ns, n, { container: { image: `ghcr.io/attacker/warm:${n}` }, prewarm: { warmup } }))));
    const waiting = await waitFor(`a Warning WarmupBudgetExceeded on an app of ${ns} (${names.length} warmups for ${SLOTS} slots)`, async () => {
      const events = (await userClient().list<{ reason?: string; note?: string; regarding?: { name?: string } }>(Kinds.Event, ns)).items;
      const said = events.filter((e) => e.reason === 'WarmupBudgetExceeded');
      return said.length ? said : undefined;
    }, { timeoutMs: 300_000 });
    assert.match(waiting[0]!.note ?? '', new RegExp(`namespace ${ns} already runs ${SLOTS} warmups`), 'the Event says which budget the warmup waits for');
    // Sending: a task holding a slot (the waiting ones have sent nothing). At least one, at most the share.
    const sending = () => names.filter((n) => (operator.apps.effects.warmups.current(`${ns}/${n}`)?.progress.sent ?? 0) > 0).length;
    await waitFor(`warmups of ${ns} sending`, () => sending() > 0 || undefined, { timeoutMs: SETTLE_MS });
    assert.ok(sending() <= SLOTS, `${sending()} warmups of ${ns} sent requests, past the share of ${SLOTS}`);
    // No version without warmup gets traffic, and the operator still serves another namespace's edits.
    for (const n of names) assert.notEqual((await getApp(ns, n)).status?.phase, 'Stable', `${ns}/${n} went Stable unwarmed`);
    await victim.servesAndAppliesItsNextEdit();
  });
});
