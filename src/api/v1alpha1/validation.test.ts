import assert from 'node:assert/strict';
import { containerApp, modelApp } from '../../testing/apps.ts';
import { MAX_APP_SPEC_BYTES, type ServerlessApp } from './serverlessapp.ts';
import { re2ProgramSizeBound } from './regex-cost.ts';
import {
  MAX_REGEX_PROGRAM_SIZE, gatewayAllowed, hostClaims, hostProblem, re2Problem, resolveGateway, storageUriPrefixOverlap, storageUriShared, storageUriUnder, validateApp, type ValidationPolicy,
} from './validation.ts';

describe('controller-side validation', () => {
  const policy: ValidationPolicy = { allowedGateways: ['istio-system/public', '{namespace}/*'] };
  const reasons = (app: ServerlessApp, p: ValidationPolicy = policy) => validateApp(app, p).map((x) => `${x.reason} ${x.field}`);

  it('accepts a valid app', () => {
    assert.deepEqual(validateApp(containerApp(), policy), []);
  });

  it('refuses a spec past MAX_APP_SPEC_BYTES read whole as the cache refuses it unread, naming its size', () => {
    const env = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `V${i}`, value: 'x'.repeat(4096) }));
    assert.deepEqual(reasons(containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(10) } })), []);
    const big = containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(40) } });
    assert.deepEqual(reasons(big), ['InvalidSpec spec']);
    assert.match(validateApp(big, policy)[0]!.message, new RegExp(`is \\d+ bytes of JSON, more than the ${MAX_APP_SPEC_BYTES} the operator reads`));
  });

  it('counts a spec\'s bytes as the API server serves them (Go escapes <, > and & as \\u003c...), the bytes the cache measures', () => {
    // 5 env values of 4 KiB of '&': 20 KiB as JavaScript writes it, 120 KiB as encoding/json does (6 bytes each).
    const env = (n: number, c: string) => Array.from({ length: n }, (_, i) => ({ name: `V${i}`, value: c.repeat(4096) }));
    assert.deepEqual(reasons(containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(5, '&') } })), []);
    const served = containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(6, '<') } });
    assert.ok(Buffer.byteLength(JSON.stringify(served.spec)) < MAX_APP_SPEC_BYTES / 4);
    assert.deepEqual(reasons(served), ['InvalidSpec spec']);
    const asGoWritesIt = JSON.stringify(served.spec).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    assert.match(validateApp(served, policy)[0]!.message, new RegExp(`is ${Buffer.byteLength(asGoWritesIt)} bytes of JSON`));
    // U+2028 and U+2029 too: 3 bytes of UTF-8, 6 as \u2028.
    assert.deepEqual(reasons(containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(4, '\u2028') } })), []);
    const separators = containerApp({ container: { image: 'ghcr.io/acme/shop:1', env: env(6, '\u2029') } });
    assert.ok(Buffer.byteLength(JSON.stringify(separators.spec)) < MAX_APP_SPEC_BYTES * 0.6);
    assert.deepEqual(reasons(separators), ['InvalidSpec spec']);
  });

  it('names the window and field of a bad cron expression or time zone (InvalidSchedule)', () => {
    const app = containerApp({ scaling: { windows: [
      { name: 'day', schedule: '0 25 * * *', duration: '8h', minScale: 2 },
      { name: 'night', schedule: '0 22 * * *', duration: '8h', timeZone: 'Mars/Olympus', minScale: 0 },
    ] } });
    const problems = validateApp(app, policy);
    assert.deepEqual(problems.map((p) => [p.reason, p.field]), [['InvalidSchedule', 'spec.scaling.windows[0].schedule'], ['InvalidSchedule', 'spec.scaling.windows[1].timeZone']]);
    assert.match(problems[0]!.message, /window "day"/);
  });

  it('refuses a window whose minScale exceeds the app\'s maxScale instead of clamping it', () => {
    const app = containerApp({ scaling: { maxScale: 4, windows: [{ name: 'day', schedule: '0 8 * * *', duration: '8h', minScale: 6 }] } });
    const [p] = validateApp(app, policy);
    assert.deepEqual([p?.reason, p?.field], ['InvalidSpec', 'spec.scaling.windows[0].minScale']);
    assert.match(p!.message, /minScale \(6\) exceeds scaling.maxScale \(4\)/);
  });

  it('refuses a schedule that never opens within a year', () => {
    const app = containerApp({ scaling: { windows: [{ name: 'leap', schedule: '0 0 29 2 *', duration: '1h', minScale: 1 }] } });
    assert.deepEqual(reasons(app), ['InvalidSchedule spec.scaling.windows[0].schedule']);
  });

  const regexes: Array<[string, boolean]> = [
    ['^qa-.*$', true], ['^(?P<u>qa-.*)$', true], ['(?i)^beta$', true], ['\\d+', true],
    ['^(?!qa-).*', false], ['(a)\\1', false], ['(?<=x)y', false], ['(unclosed', false], ['a{2,1001}', false],
  ];
  for (const [regex, valid] of regexes) {
    it(`${valid ? 'accepts' : 'refuses'} the header regex ${regex} as RE2 (Envoy) reads it`, () => {
      assert.equal(re2Problem(regex) === undefined, valid);
      const app = containerApp({ ingress: { hosts: ['a.example.com'] }, rollout: { match: [{ header: 'x', exact: 'y' }, { header: 'x-user', regex }] } });
      assert.deepEqual(reasons(app), valid ? [] : ['InvalidSpec spec.rollout.match[1].regex']);
    });
  }

  it('refuses header regexes past the app\'s RE2 program budget, naming each, without compiling them', () => {
    const match = Array.from({ length: 16 }, (_, i) => ({ header: 'x-user', regex: `\\pL{1000}-${i}` }));
    const problems = validateApp(containerApp({ ingress: { hosts: ['a.example.com'] }, rollout: { match } }), policy);
    const refused = Math.floor(MAX_REGEX_PROGRAM_SIZE / re2ProgramSizeBound(match[0]!.regex));
    assert.deepEqual(problems.map((p) => p.field), match.slice(refused).map((_, i) => `spec.rollout.match[${refused + i}].regex`), 'the ones that fit are compiled, the rest refused');
    assert.match(problems[0]!.message, new RegExp(`regular expression too large: it compiles to about \\d+ RE2 instructions, and the app's header regexes may have ${MAX_REGEX_PROGRAM_SIZE} in all`));
    assert.match(problems[0]!.message, /use \+ or \* or a smaller count/);
  });

  it('refuses one regex whose counted repetitions multiply past the budget', () => {
    const app = containerApp({ ingress: { hosts: ['a.example.com'] }, rollout: { match: [{ header: 'x', regex: '((a{100}){100})' }] } });
    assert.deepEqual(reasons(app), ['InvalidSpec spec.rollout.match[0].regex']);
  });

  it('validates once per content: a metadata-only edit gets the same answer, and a caller cannot change the cached one', () => {
    const app = containerApp({ rollout: { steps: [10, 50, 25] } });
    const first = validateApp(app, policy);
    first[0]!.message = 'changed by a caller';
    const edited = { ...app, metadata: { ...app.metadata, labels: { team: 'b' }, resourceVersion: '42' } };
    assert.deepEqual(validateApp(edited, policy), validateApp(containerApp({ rollout: { steps: [10, 50, 25] } }), policy));
    assert.match(validateApp(edited, policy)[0]!.message, /steps must increase strictly/);
  });

  it('keys the cache by namespace and policy too', () => {
    const app = containerApp({ ingress: { hosts: ['a.example.com'], gateways: ['team-a/gw'] } });
    const inNamespace = (namespace: string) => ({ ...app, metadata: { ...app.metadata, namespace } });
    assert.deepEqual(reasons(inNamespace('team-a')), []);
    assert.deepEqual(reasons(inNamespace('team-b')), ['GatewayNotAllowed spec.ingress.gateways[0]']);
    assert.deepEqual(reasons(inNamespace('team-a'), { allowedGateways: [] }), ['GatewayNotAllowed spec.ingress.gateways[0]']);
  });

  it('rejects steps that do not increase', () => {
    assert.equal(validateApp(containerApp({ rollout: { steps: [10, 50, 25] } }), policy)[0]?.field, 'spec.rollout.steps');
  });

  for (const header of ['Host', 'connection', 'Proxy-Authorization', 'Transfer-Encoding', 'Upgrade']) {
    it(`refuses the warmup header ${header}, naming it`, () => {
      const app = containerApp({ prewarm: { warmup: { path: '/', headers: { 'x-ok': '1', [header]: 'x' } } } });
      assert.deepEqual(reasons(app), [`InvalidSpec spec.prewarm.warmup.headers["${header}"]`]);
    });
  }

  describe('analysis providers', () => {
    const analysis = (prometheus: { provider?: string; address?: string }) => containerApp({ rollout: { steps: [10], analysis: { prometheus, checks: [{ name: 'ok', query: 'up', min: 1 }] } } });
    const withProviders: ValidationPolicy = { ...policy, analysis: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false } };
    const cases: Array<{ what: string; app: ServerlessApp; policy: ValidationPolicy; want: string[] }> = [
      { what: 'accepts a provider the platform defines', app: analysis({ provider: 'main' }), policy: withProviders, want: [] },
      { what: 'refuses a provider the platform does not define', app: analysis({ provider: 'team-b-prom' }), policy: withProviders, want: ['AnalysisProviderNotFound spec.rollout.analysis.prometheus.provider'] },
      { what: 'refuses an address by default', app: analysis({ address: 'http://10.0.0.1:8080' }), policy, want: ['AnalysisAddressNotAllowed spec.rollout.analysis.prometheus.address'] },
      { what: 'accepts an address where the platform allows addresses', app: analysis({ address: 'http://prom.team-a:9090' }), policy: { ...policy, analysis: { providers: [], allowAddress: true } }, want: [] },
    ];
    for (const c of cases) it(c.what, () => assert.deepEqual(reasons(c.app, c.policy), c.want));
  });

  describe('gateways', () => {
    const resolutions: Array<[string, string]> = [
      ['istio-system/public', 'istio-system/public'], ['./gw', 'team-a/gw'], ['gw', 'team-a/gw'],
      ['internal-admin.istio-system', 'istio-system/internal-admin'], ['gw.istio-system.svc.cluster.local', 'istio-system/gw'], ['mesh', 'mesh'],
    ];
    for (const [ref, want] of resolutions) it(`resolves ${ref} as Istio does, to ${want}`, () => assert.equal(resolveGateway(ref, 'team-a'), want));

    const allowed: Array<[string, boolean]> = [
      ['istio-system/public', true], ['team-a/own-gw', true], ['own-gw', true], ['./own-gw', true],
      ['team-b/gw', false], ['internal-admin.istio-system', false], ['public.istio-system', true], ['mesh', false], ['team-a/x/y', false],
    ];
    for (const [ref, ok] of allowed) {
      it(`${ok ? 'allows' : 'refuses'} ${ref} for team-a under [istio-system/public, {namespace}/*]`, () => assert.equal(gatewayAllowed(ref, 'team-a', policy.allowedGateways), ok));
    }

    it('says how Istio reads a dotted gateway in the problem', () => {
      const app = containerApp({ ingress: { hosts: ['a.example.com'], gateways: ['internal-admin.istio-system'] } });
      const [p] = validateApp(app, policy);
      assert.deepEqual([p?.reason, p?.field], ['GatewayNotAllowed', 'spec.ingress.gateways[0]']);
      assert.match(p!.message, /Istio reads as "istio-system\/internal-admin"/);
    });
  });

  describe('hosts', () => {
    const suffixes: ValidationPolicy = { ...policy, allowedHostSuffixes: ['{namespace}.apps.example.com', 'team-a.example.com'] };
    const cases: Array<{ host: string; policy: ValidationPolicy; problem?: RegExp }> = [
      { host: 'shop.example.com', policy },
      { host: '*.example.com', policy, problem: /wildcard host "\*.example.com" is not allowed/ },
      { host: '*.com', policy: { ...policy, allowWildcardHosts: true }, problem: /covers a whole top-level domain/ },
      { host: '*.team-a.apps.example.com', policy: { ...suffixes, allowWildcardHosts: true } },
      { host: 'checkout.team-b.svc.cluster.local', policy, problem: /service name of namespace team-b, not team-a/ },
      { host: 'checkout.team-b.svc', policy, problem: /service name of namespace team-b/ },
      { host: 'shop.team-a.svc.cluster.local', policy },
      { host: 'shop.team-a.apps.example.com', policy: suffixes },
      { host: 'SHOP.Team-A.apps.example.com.', policy: suffixes },
      { host: 'team-a.apps.example.com', policy: suffixes },
      { host: 'shop.team-b.apps.example.com', policy: suffixes, problem: /not allowed for namespace team-a; allowed: hosts under team-a.apps.example.com, team-a.example.com/ },
      { host: 'evilteam-a.example.com', policy: suffixes, problem: /not allowed/ },
      { host: 'checkout.example.com', policy: suffixes, problem: /not allowed/ },
    ];
    for (const c of cases) {
      it(`${c.problem ? 'refuses' : 'allows'} ${c.host} for team-a${c.policy.allowedHostSuffixes ? ' under host suffixes' : ''}${c.policy.allowWildcardHosts ? ' with wildcards allowed' : ''}`, () => {
        const why = hostProblem(c.host, 'team-a', c.policy);
        if (c.problem) assert.match(why ?? '', c.problem);
        else assert.equal(why, undefined);
      });
    }

    it('reports a refused host as HostNotAllowed on its field', () => {
      const app = containerApp({ ingress: { hosts: ['shop.team-a.apps.example.com', 'checkout.example.com'] } });
      assert.deepEqual(reasons(app, suffixes), ['HostNotAllowed spec.ingress.hosts[1]']);
    });

    it('lists the hosts an app claims, normalised, once each', () => {
      const app = containerApp({ ingress: { hosts: ['Shop.Example.com.', 'shop.example.com', 'a.example.com'] } });
      assert.deepEqual(hostClaims(app), ['a.example.com', 'shop.example.com']);
      assert.deepEqual(hostClaims(containerApp()), []);
    });
  });

  describe('model limits', () => {
    const cases: Array<{ what: string; app: ServerlessApp; policy: ValidationPolicy; want: string[] }> = [
      { what: 'accepts a model under the default 100Gi limit', app: modelApp(), policy, want: [] },
      { what: 'refuses a model over the default 100Gi limit', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://m/x', size: '101Gi' } }), policy, want: ['ModelSizeNotAllowed spec.model.size'] },
      { what: 'refuses a model over a configured limit', app: modelApp(), policy: { ...policy, maxModelSizeBytes: 2 ** 30 }, want: ['ModelSizeNotAllowed spec.model.size'] },
      { what: 'accepts any storage URI when no prefixes are configured', app: modelApp(), policy, want: [] },
      { what: 'accepts a storage URI under an allowed prefix with {namespace}', app: modelApp(), policy: { ...policy, allowedStorageUriPrefixes: ['s3://models/{namespace}/', 'gs://models/fraud/'] }, want: [] },
      { what: 'refuses a storage URI that leaves its prefix by a ".." segment', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/ml/../other/model', size: '1Gi' } }), policy: { ...policy, allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, want: ['StorageUriNotAllowed spec.model.storageUri'] },
      { what: 'refuses a percent-encoded ".." segment', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/ml/%2E%2e/other/model', size: '1Gi' } }), policy: { ...policy, allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, want: ['StorageUriNotAllowed spec.model.storageUri'] },
      { what: 'admits dots inside a segment', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://models/ml/v1..2/model.joblib', size: '1Gi' } }), policy: { ...policy, allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, want: [] },
      { what: 'refuses a storage URI under no allowed prefix', app: modelApp({ model: { format: { name: 'sklearn' }, storageUri: 'gs://other-team/model', size: '1Gi' } }), policy: { ...policy, allowedStorageUriPrefixes: ['gs://models/{namespace}/'] }, want: ['StorageUriNotAllowed spec.model.storageUri'] },
    ];
    for (const c of cases) it(c.what, () => assert.deepEqual(reasons(c.app, c.policy), c.want));

    it('says the limit in the message', () => {
      const [p] = validateApp(modelApp(), { ...policy, maxModelSizeBytes: 2 ** 30 });
      assert.match(p!.message, /model.size 2Gi exceeds the platform's limit of 1Gi/);
    });

    it('refuses another namespace\'s path that merely starts like its own under a prefix ending in {namespace}', () => {
      const app = modelApp({ model: { format: { name: 'sklearn' }, storageUri: 's3://models/ml-b/fraud', size: '1Gi' } });
      assert.deepEqual(reasons(app, { ...policy, allowedStorageUriPrefixes: ['s3://models/{namespace}'] }), ['StorageUriNotAllowed spec.model.storageUri']);
    });
  });

  describe('storage URI prefixes: a namespace\'s part ends at a path segment', () => {
    const cases: Array<[prefix: string, uri: string, under: boolean]> = [
      ['s3://models/{namespace}/', 's3://models/team/llama', true],
      ['s3://models/{namespace}/', 's3://models/team-b/llama', false],
      ['s3://models/{namespace}/', 's3://models/team', false],
      ['s3://models/{namespace}', 's3://models/team', true],
      ['s3://models/{namespace}', 's3://models/team/llama', true],
      ['s3://models/{namespace}', 's3://models/team-b/llama', false],
      ['s3://models/{namespace}', 's3://models/teamx', false],
      ['s3://models/{namespace}', 's3://models/team%2fx', false],
      ['s3://{namespace}', 's3://team.evil/llama', false],
      ['s3://{namespace}', 's3://team/llama', true],
      ['s3://models/{namespace}-data', 's3://models/team-data/llama', true],
      ['s3://models/{namespace}-data', 's3://models/team-data-b/llama', false],
      ['s3://models/{namespace}-data/', 's3://models/team-data/llama', true],
      ['s3://models/{namespace}/v', 's3://models/team/v2/llama', true],
      ['s3://shared/', 's3://shared/llama', true],
      ['s3://shared/ll', 's3://shared/llama', true],
      ['s3://shared/', 's3://other/llama', false],
    ];
    for (const [prefix, uri, under] of cases) {
      it(`${uri} is ${under ? '' : 'not '}under ${prefix} for namespace team`, () => assert.equal(storageUriUnder(uri, prefix, 'team'), under));
    }
  });

  describe('storage URIs no other namespace can name (what a cluster-scoped model cache needs)', () => {
    const cases: Array<{ what: string; uri: string; prefixes: string[]; shared: RegExp | undefined }> = [
      { what: 'a URI under the namespace\'s own path segment', uri: 's3://models/team/llama', prefixes: ['s3://models/{namespace}/'], shared: undefined },
      { what: 'the namespace\'s own path itself, the prefix not closed by a "/"', uri: 's3://models/team', prefixes: ['s3://models/{namespace}'], shared: undefined },
      { what: 'a bucket of its own', uri: 's3://team/llama', prefixes: ['s3://{namespace}/'], shared: undefined },
      { what: 'beside a shared prefix elsewhere', uri: 's3://models/team/llama', prefixes: ['s3://models/{namespace}/', 'hf://'], shared: undefined },
      { what: 'beside a shared prefix that only starts like it', uri: 's3://models/team/llama', prefixes: ['s3://models/{namespace}/', 's3://models/team/llama2/'], shared: undefined },
      { what: 'any URI when the platform allows any', uri: 's3://models/team/llama', prefixes: [], shared: /allows any storage URI/ },
      { what: 'a URI under a shared prefix (F1: hf://meta-llama captures every tenant\'s Llama)', uri: 'hf://meta-llama', prefixes: ['hf://'], shared: /no allowed prefix with \{namespace\} as a whole path segment/ },
      { what: 'a URI under a prefix where {namespace} is only part of a segment', uri: 's3://models/team-data/llama', prefixes: ['s3://models/{namespace}-data/'], shared: /no allowed prefix with \{namespace\} as a whole path segment/ },
      { what: 'a URI another prefix also admits for every namespace', uri: 's3://models/team/llama', prefixes: ['s3://models/{namespace}/', 's3://models/'], shared: /the allowed prefix s3:\/\/models\/ lets an app of any namespace/ },
      { what: 'a URI with a shared prefix under it', uri: 's3://models/team/', prefixes: ['s3://models/{namespace}/', 's3://models/team/public/'], shared: /the allowed prefix s3:\/\/models\/team\/public\// },
    ];
    for (const c of cases) {
      it(`${c.shared ? 'shares' : 'keeps to the namespace'} ${c.what}`, () => {
        const why = storageUriShared(c.uri, 'team', c.prefixes);
        if (c.shared) assert.match(why ?? '', c.shared);
        else assert.equal(why, undefined);
      });
    }
  });

  describe('prefixes with {namespace} that can give one namespace another\'s storage', () => {
    const cases: Array<[prefixes: string[], overlap: [string, string] | undefined]> = [
      [['s3://m/{namespace}/', 's3://m/x/{namespace}/'], ['s3://m/{namespace}/', 's3://m/x/{namespace}/']],
      [['s3://m/{namespace}/', 's3://m/{namespace}-x/'], ['s3://m/{namespace}/', 's3://m/{namespace}-x/']],
      [['s3://m/{namespace}/', 's3://m/team-{namespace}/'], ['s3://m/{namespace}/', 's3://m/team-{namespace}/']],
      [['s3://{namespace}/', 's3://m/{namespace}/'], ['s3://{namespace}/', 's3://m/{namespace}/']],
      [['s3://m/{namespace}/', 's3://n/{namespace}/'], undefined],
      [['s3://m/{namespace}/a/', 's3://m/{namespace}/b/', 's3://m/{namespace}'], undefined],
      [['s3://m/{namespace}/', 's3://m/{namespace}/'], undefined],
      [['s3://m/{namespace}/', 's3://m/x/'], undefined],
      [['gs://a/{namespace}/', 'gs://b/{namespace}/', 'gs://a/x/{namespace}/'], ['gs://a/{namespace}/', 'gs://a/x/{namespace}/']],
    ];
    for (const [prefixes, overlap] of cases) {
      it(`${overlap ? 'finds' : 'finds no'} overlap in ${prefixes.join(', ')}`, () => assert.deepEqual(storageUriPrefixOverlap(prefixes), overlap));
    }
  });
  describe('what reaches the pod', () => {
    it('refuses control keys of pod metadata and Secret references unless the platform allows them', () => {
      const app = containerApp({ container: { image: 'x:1', podAnnotations: { 'sidecar.istio.io/inject': 'false' }, envFrom: [{ secretRef: { name: 'all' } }] } });
      assert.deepEqual(reasons(app), ['PodMetadataNotAllowed spec.container.podAnnotations["sidecar.istio.io/inject"]', 'SecretReferenceNotAllowed spec.container.envFrom[0].secretRef']);
      assert.deepEqual(reasons(app, { ...policy, allowedPodMetadataKeys: ['sidecar.istio.io/*'], allowSecretReferences: true }), []);
    });
  });

  describe('durations and sizes stored before their bounds', () => {
    const cases: Array<{ what: string; app: ServerlessApp; want: string[] }> = [
      { what: 'a leadTime too long to be a number of milliseconds', app: containerApp({ prewarm: { leadTime: '99999999999999999h' } }), want: ['InvalidSpec spec.prewarm.leadTime'] },
      { what: 'a route timeout with a fraction', app: containerApp({ ingress: { hosts: ['a.example.com'], timeout: '1.5s' } }), want: ['InvalidSpec spec.ingress.timeout'] },
      { what: 'a negative model.size', app: modelApp({ model: { ...modelApp().spec.model!, size: '-2Gi' } }), want: ['InvalidSpec spec.model.size'] },
      { what: 'a model.size of 0', app: modelApp({ model: { ...modelApp().spec.model!, size: 0 } }), want: ['InvalidSpec spec.model.size'] },
    ];
    for (const c of cases) it(`refuses ${c.what}, naming the field`, () => assert.deepEqual(reasons(c.app), c.want));
  });

  describe('durations the pattern admits but no clock can count (found by the schema fuzzer)', () => {
    const cases: Array<[string, (d: string) => Partial<ServerlessApp['spec']>]> = [
      ['spec.prewarm.leadTime', (d) => ({ prewarm: { leadTime: d } })],
      ['spec.rollout.interval', (d) => ({ rollout: { interval: d } })],
      ['spec.rollout.progressDeadline', (d) => ({ rollout: { progressDeadline: d } })],
      ['spec.prewarm.warmup.deadline', (d) => ({ prewarm: { warmup: { path: '/', deadline: d } } })],
      ['spec.scaling.windows[0].duration', (d) => ({ scaling: { windows: [{ name: 'day', schedule: '0 8 * * *', duration: d, minScale: 1 }] } })],
      ['spec.ingress.retries.perTryTimeout', (d) => ({ ingress: { hosts: ['a.example.com'], retries: { attempts: 1, perTryTimeout: d } } })],
    ];
    for (const [field, spec] of cases) {
      // Windows report their own durations (InvalidSchedule, scaling/windows.ts); the field is named once.
      const reason = field.includes('windows') ? 'InvalidSchedule' : 'InvalidSpec';
      it(`refuses ${field} = "99999999999999999999h" as ${reason} on that field, once`, () => {
        assert.deepEqual(reasons(containerApp(spec('99999999999999999999h'))), [`${reason} ${field}`]);
      });
      it(`accepts ${field} = "90m"`, () => assert.deepEqual(reasons(containerApp(spec('90m'))), []));
    }
  });

  describe('model sizes the pattern admits but Kubernetes does not read (found by the schema fuzzer)', () => {
    for (const size of ['+.993e-.5', '7168.E.9', '1e.5']) {
      it(`refuses model.size ${JSON.stringify(size)} as InvalidSpec on spec.model.size instead of throwing`, () => {
        const app = modelApp({ model: { ...modelApp().spec.model!, size } });
        assert.deepEqual(validateApp(app, policy).map((p) => `${p.reason} ${p.field}`), ['InvalidSpec spec.model.size']);
      });
    }
  });

  describe('service accounts', () => {
    const withSa = (serviceAccountName: string) => containerApp({ container: { ...containerApp().spec.container!, serviceAccountName } });
    const modelWithSa = (serviceAccountName: string) => modelApp({ model: { ...modelApp().spec.model!, serviceAccountName } });
    const cases: Array<{ what: string; app: ServerlessApp; allowed?: string[]; want: string[] }> = [
      { what: 'refuses any service account by default', app: withSa('deployer'), want: ['ServiceAccountNotAllowed spec.container.serviceAccountName'] },
      { what: 'accepts "default", what the pods run as anyway', app: withSa('default'), want: [] },
      { what: 'accepts a listed service account', app: withSa('model-reader'), allowed: ['model-reader'], want: [] },
      { what: 'refuses one not listed, naming the model field', app: modelWithSa('deployer'), allowed: ['model-reader'], want: ['ServiceAccountNotAllowed spec.model.serviceAccountName'] },
      { what: 'accepts any with *', app: modelWithSa('deployer'), allowed: ['*'], want: [] },
      { what: 'has nothing to say about an app without one', app: containerApp(), want: [] },
    ];
    for (const c of cases) it(c.what, () => assert.deepEqual(reasons(c.app, { ...policy, ...(c.allowed ? { allowedServiceAccounts: c.allowed } : {}) }), c.want));

    it('says what the platform allows in the message', () => {
      assert.match(validateApp(withSa('deployer'), policy)[0]!.message, /serviceAccountName "deployer" is not allowed on this platform; allowed: \(none: pods run as the namespace's default service account\)/);
      assert.match(validateApp(withSa('deployer'), { ...policy, allowedServiceAccounts: ['a', 'b'] })[0]!.message, /allowed: a, b$/);
    });
  });
});
