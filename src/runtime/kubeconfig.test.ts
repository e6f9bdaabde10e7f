import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { OffsetClock } from './clock.ts';
import { FILE_REFRESH_MS, inClusterConfig, loadRestConfig, restConfigFromFiles, restConfigFromKubeconfig, toRestConfig } from './kubeconfig.ts';

const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN EC PRIVATE KEY-----\nkey\n-----END EC PRIVATE KEY-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A one-context kubeconfig with the given cluster and user fields. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'dev',
    clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'dev', context: { cluster: 'c', user: 'u' } }],
  };
}

describe('kubeconfig loading', () => {
  let dir: string;
  const clock = new OffsetClock(new Date('2026-05-01T00:00:00Z'));
  const load = (doc: unknown) => restConfigFromKubeconfig([{ doc, dir }], { name: 'test', clock });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const cases: Array<{ name: string; cluster: Record<string, unknown>; user?: Record<string, unknown>; files?: Record<string, string>; expect: { tls: Record<string, unknown>; authorization?: string } }> = [
    {
      name: 'a bearer token and inline CA data',
      cluster: { 'certificate-authority-data': b64(CA) }, user: { token: 'abc' },
      expect: { tls: { ca: CA, rejectUnauthorized: true }, authorization: 'Bearer abc' },
    },
    {
      name: 'a CA file, relative to the kubeconfig\'s directory',
      cluster: { 'certificate-authority': 'pki/ca.crt' }, files: { 'pki/ca.crt': CA },
      expect: { tls: { ca: CA, rejectUnauthorized: true } },
    },
    {
      name: 'CA data over a CA file when both are given, as kubectl does',
      cluster: { 'certificate-authority-data': b64(CA), 'certificate-authority': 'missing.crt' },
      expect: { tls: { ca: CA, rejectUnauthorized: true } },
    },
    {
      name: 'a client certificate and key inline',
      cluster: {}, user: { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY) },
      expect: { tls: { cert: CERT, key: KEY, rejectUnauthorized: true } },
    },
    {
      name: 'a client certificate and key from files',
      cluster: {}, user: { 'client-certificate': 'client.crt', 'client-key': join('keys', 'client.key') }, files: { 'client.crt': CERT, 'keys/client.key': KEY },
      expect: { tls: { cert: CERT, key: KEY, rejectUnauthorized: true } },
    },
    {
      name: 'a token file, its trailing newline dropped',
      cluster: {}, user: { tokenFile: 'token' }, files: { token: 'from-file\n' },
      expect: { tls: { rejectUnauthorized: true }, authorization: 'Bearer from-file' },
    },
    {
      name: 'insecure-skip-tls-verify and a TLS server name',
      cluster: { 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes.default' },
      expect: { tls: { rejectUnauthorized: false, servername: 'kubernetes.default' } },
    },
  ];

  for (const c of cases) {
    it(`reads ${c.name}`, async () => {
      for (const [path, content] of Object.entries(c.files ?? {})) {
        mkdirSync(join(dir, path, '..'), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      const config = load(kubeconfig(c.cluster, c.user));
      assert.equal(config.server, 'https://10.0.0.1:6443');
      const creds = await config.credentials();
      assert.deepEqual(creds.tls, c.expect.tls);
      assert.equal(creds.authorization, c.expect.authorization);
    });
  }

  it('drops a trailing slash from the server and keeps an http:// proxy-url', () => {
    const config = load(kubeconfig({ server: 'https://api.example.com:6443/', 'proxy-url': 'http://proxy.corp:3128' }));
    assert.equal(config.server, 'https://api.example.com:6443');
    assert.equal(config.proxyUrl, 'http://proxy.corp:3128');
  });

  it('keeps the TLS material object while it does not change, so connections are reused', async () => {
    const config = load(kubeconfig({ 'certificate-authority-data': b64(CA) }, { token: 't' }));
    assert.equal((await config.credentials()).tls, (await config.credentials()).tls);
  });

  it('reads a rotated token file after a minute, or at once after the server refused the old token', async () => {
    writeFileSync(join(dir, 'token'), 'first');
    const config = load(kubeconfig({}, { tokenFile: 'token' }));
    writeFileSync(join(dir, 'token'), 'second');
    assert.equal((await config.credentials()).authorization, 'Bearer first', 'read at most once a minute');
    clock.advance(FILE_REFRESH_MS);
    assert.equal((await config.credentials()).authorization, 'Bearer second');
    writeFileSync(join(dir, 'token'), 'third');
    config.invalidate();
    assert.equal((await config.credentials()).authorization, 'Bearer third');
  });

  it('keeps the last token when a re-read fails (a rotation in progress)', async () => {
    writeFileSync(join(dir, 'token'), 'kept');
    const config = load(kubeconfig({}, { tokenFile: 'token' }));
    rmSync(join(dir, 'token'));
    clock.advance(FILE_REFRESH_MS);
    assert.equal((await config.credentials()).authorization, 'Bearer kept');
  });

  it('merges several files as kubectl does: the first to name an entry or the current-context wins', async () => {
    const first = { 'current-context': 'dev', users: [{ name: 'u', user: { token: 'mine' } }] };
    const second = { ...kubeconfig({}, { token: 'theirs' }), 'current-context': 'other' };
    const config = restConfigFromKubeconfig([{ doc: first, dir }, { doc: second, dir }]);
    assert.equal((await config.credentials()).authorization, 'Bearer mine');
    writeFileSync(join(dir, 'a.yaml'), stringify(first));
    writeFileSync(join(dir, 'b.yaml'), stringify(second));
    const fromFiles = await restConfigFromFiles([join(dir, 'a.yaml'), join(dir, 'missing.yaml'), join(dir, 'b.yaml')]);
    assert.equal((await fromFiles.credentials()).authorization, 'Bearer mine');
  });

  it('takes the files of --kubeconfig (a list, like $KUBECONFIG) before the pod\'s service account, and ~/.kube/config last', async () => {
    writeFileSync(join(dir, 'config'), stringify(kubeconfig({ server: 'https://from-flag:6443' })));
    const inPod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', HOME: dir };
    assert.equal((await loadRestConfig({ kubeconfig: `${join(dir, 'nothing')}${delimiter}${join(dir, 'config')}`, env: inPod })).server, 'https://from-flag:6443');
    mkdirSync(join(dir, '.kube'));
    writeFileSync(join(dir, '.kube', 'config'), stringify(kubeconfig({ server: 'https://from-home:6443' })));
    assert.equal((await loadRestConfig({ env: { HOME: dir } })).server, 'https://from-home:6443');
    await assert.rejects(loadRestConfig({ env: { HOME: join(dir, 'nowhere') } }), /no kubeconfig: pass --kubeconfig or set KUBECONFIG, run in a pod, or create/);
  });


  it('uses another context when told (--context) and keeps the context\'s namespace', async () => {
    const doc = {
      ...kubeconfig({}),
      clusters: [{ name: 'c', cluster: { server: 'https://dev:6443' } }, { name: 'p', cluster: { server: 'https://prod:6443' } }],
      contexts: [{ name: 'dev', context: { cluster: 'c', namespace: 'team-a' } }, { name: 'prod', context: { cluster: 'p' } }],
    };
    const dev = restConfigFromKubeconfig([{ doc, dir }]);
    assert.deepEqual([dev.server, dev.namespace], ['https://dev:6443', 'team-a']);
    const prod = restConfigFromKubeconfig([{ doc, dir }], { context: 'prod' });
    assert.deepEqual([prod.server, prod.namespace], ['https://prod:6443', undefined]);
    assert.throws(() => restConfigFromKubeconfig([{ doc, dir }], { context: 'staging' }), /context "staging" is not among its contexts/);
    writeFileSync(join(dir, 'config'), stringify(doc));
    assert.equal((await loadRestConfig({ kubeconfig: join(dir, 'config'), context: 'prod', env: {} })).server, 'https://prod:6443');
  });
  it('reads a client-node KubeConfig (tests, demo and benchmarks build those)', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', caData: b64(CA), skipTLSVerify: false }],
      users: [{ name: 'u', token: 'kc-token' }],
      contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
      currentContext: 'ctx',
    });
    const config = toRestConfig(kc);
    assert.equal(config.server, 'https://127.0.0.1:6443');
    assert.deepEqual(await config.credentials(), { tls: { ca: CA, rejectUnauthorized: true }, authorization: 'Bearer kc-token' });
    assert.equal(toRestConfig(config), config);
  });

  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an auth-provider plugin', kubeconfig({}, { 'auth-provider': { name: 'oidc', config: {} } }), /user "u": auth-provider "oidc" is not supported \(client-go dropped auth-provider plugins\); use an exec credential plugin/],
    ['basic authentication', kubeconfig({}, { username: 'admin', password: 'secret' }), /user "u": username\/password \(basic authentication\) is not supported: Kubernetes removed it in 1\.19/],
    ['impersonation', kubeconfig({}, { as: 'jane', 'as-groups': ['dev'] }), /user "u": impersonation \(as, as-groups\) is not supported/],
    ['an exec plugin of the removed v1alpha1 API', kubeconfig({}, { exec: { command: 'kubelogin', apiVersion: 'client.authentication.k8s.io/v1alpha1' } }), /user "u": exec: apiVersion "client\.authentication\.k8s\.io\/v1alpha1" is not supported; use client\.authentication\.k8s\.io\/v1 or/],
    ['an exec plugin that always needs a terminal', kubeconfig({}, { exec: { command: 'login', apiVersion: 'client.authentication.k8s.io/v1', interactiveMode: 'Always' } }), /user "u": exec: interactiveMode Always needs a terminal/],
    ['a SOCKS proxy', kubeconfig({ 'proxy-url': 'socks5://127.0.0.1:1080' }), /proxy-url socks5:\/\/127\.0\.0\.1:1080: only http:\/\/ and https:\/\/ proxies are supported, not socks5:\/\//],
    ['insecure-skip-tls-verify beside a CA', kubeconfig({ 'insecure-skip-tls-verify': true, 'certificate-authority-data': b64(CA) }), /insecure-skip-tls-verify cannot be combined with a certificate authority/],
    ['a client certificate without its key', kubeconfig({}, { 'client-certificate-data': b64(CERT) }), /a client certificate needs its key .*client-key is missing/],
    ['a CA file that does not exist', kubeconfig({ 'certificate-authority': 'nope.crt' }), /cannot read the certificate authority file .*nope\.crt: ENOENT/],
    ['a server that is not https or http', kubeconfig({ server: 'unix:///run/k8s.sock' }), /server unix:\/\/\/run\/k8s\.sock: only https:\/\/ and http:\/\/ are supported/],
    ['no current-context', { ...kubeconfig({}), 'current-context': '' }, /kubeconfig test: no current-context/],
    ['a current-context it does not define', { ...kubeconfig({}), 'current-context': 'prod' }, /current-context "prod" is not among its contexts/],
    ['a context naming an unknown cluster', { ...kubeconfig({}), contexts: [{ name: 'dev', context: { cluster: 'x', user: 'u' } }] }, /context "dev" names cluster "x", which it does not define/],
    ['a context naming an unknown user', { ...kubeconfig({}), contexts: [{ name: 'dev', context: { cluster: 'c', user: 'y' } }] }, /context "dev" names user "y", which it does not define/],
    ['a cluster without a server', { ...kubeconfig({}), clusters: [{ name: 'c', cluster: {} }] }, /cluster "c" has no server/],
  ];
  for (const [what, doc, message] of refused) {
    it(`refuses ${what}, saying why`, () => {
      assert.throws(() => load(doc), message);
    });
  }

  it('names the file that does not parse', async () => {
    writeFileSync(join(dir, 'broken'), 'clusters: [');
    await assert.rejects(restConfigFromFiles([join(dir, 'broken')]), new RegExp(`kubeconfig ${join(dir, 'broken')}: `));
  });
});

describe('in-cluster configuration', () => {
  let dir: string;
  const clock = new OffsetClock(new Date('2026-05-01T00:00:00Z'));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'serviceaccount-'));
    writeFileSync(join(dir, 'ca.crt'), CA);
    writeFileSync(join(dir, 'token'), 'sa-token-1');
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('uses the service host and port, the service account CA and its token', async () => {
    const config = inClusterConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, { dir, clock });
    assert.equal(config.server, 'https://10.96.0.1:443');
    assert.deepEqual(await config.credentials(), { tls: { ca: CA, rejectUnauthorized: true }, authorization: 'Bearer sa-token-1' });
  });

  it('brackets an IPv6 service host', () => {
    assert.equal(inClusterConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, { dir }).server, 'https://[fd00::1]:443');
  });

  it('picks up the token the kubelet rotated', async () => {
    const config = inClusterConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, { dir, clock });
    await config.credentials();
    writeFileSync(join(dir, 'token'), 'sa-token-2');
    clock.advance(FILE_REFRESH_MS);
    assert.equal((await config.credentials()).authorization, 'Bearer sa-token-2');
  });

  it('says what is missing outside a pod or without a mounted token', () => {
    assert.throws(() => inClusterConfig({}, { dir }), /not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set/);
    rmSync(join(dir, 'token'));
    assert.throws(() => inClusterConfig({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, { dir }), /cannot read the token file .*token: ENOENT/);
  });
});
