import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OffsetClock } from './clock.ts';
import { restConfigFromKubeconfig } from './kubeconfig.ts';

const V1 = 'client.authentication.k8s.io/v1';

/**
 * A plugin script: each run appends KUBERNETES_EXEC_INFO to runs.log and
 * prints `status` (a template: RUN becomes the run number).
 */
function writePlugin(dir: string, status: Record<string, unknown>, apiVersion = V1): string {
  const script = join(dir, 'plugin.mjs');
  writeFileSync(script, `
    import { appendFileSync, readFileSync } from 'node:fs';
    const log = ${JSON.stringify(join(dir, 'runs.log'))};
    appendFileSync(log, process.env.KUBERNETES_EXEC_INFO + '\\n');
    const run = readFileSync(log, 'utf8').trim().split('\\n').length;
    const status = JSON.parse(${JSON.stringify(JSON.stringify(status))}.replaceAll('RUN', String(run)));
    if (process.env.PLUGIN_GREETING) status.token += '-' + process.env.PLUGIN_GREETING;
    console.log(JSON.stringify({ apiVersion: ${JSON.stringify(apiVersion)}, kind: 'ExecCredential', status }));
  `);
  return script;
}

function runs(dir: string): Array<{ spec: { interactive: boolean; cluster?: Record<string, unknown> } }> {
  try {
    return readFileSync(join(dir, 'runs.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

describe('exec credential plugins', function () {
  this.timeout(10_000);
  let dir: string;
  const clock = new OffsetClock(new Date('2026-05-01T00:00:00Z'));

  function configWith(exec: Record<string, unknown>, cluster: Record<string, unknown> = {}) {
    const doc = {
      'current-context': 'dev',
      clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
      users: [{ name: 'u', user: { exec: { apiVersion: V1, command: process.execPath, ...exec } } }],
      contexts: [{ name: 'dev', context: { cluster: 'c', user: 'u' } }],
    };
    return restConfigFromKubeconfig([{ doc, dir }], { clock });
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'exec-plugin-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('presents the token the plugin prints, with its env, and runs it without a terminal', async () => {
    const config = configWith({ args: [writePlugin(dir, { token: 'tok' })], env: [{ name: 'PLUGIN_GREETING', value: 'hi' }] });
    assert.equal((await config.credentials()).authorization, 'Bearer tok-hi');
    assert.equal(runs(dir)[0]?.spec.interactive, false);
    assert.equal(runs(dir)[0]?.spec.cluster, undefined, 'cluster info only on request');
  });

  it('keeps the credential until its expirationTimestamp, then runs the plugin again', async () => {
    const expiry = new Date(clock.now().getTime() + 10 * 60_000).toISOString();
    const config = configWith({ args: [writePlugin(dir, { token: 'run-RUN', expirationTimestamp: expiry })] });
    assert.equal((await config.credentials()).authorization, 'Bearer run-1');
    clock.advance(9 * 60_000);
    assert.equal((await config.credentials()).authorization, 'Bearer run-1');
    clock.advance(60_000);
    assert.equal((await config.credentials()).authorization, 'Bearer run-2');
  });

  it('runs the plugin once for requests that need it at the same moment', async () => {
    const config = configWith({ args: [writePlugin(dir, { token: 'shared' })] });
    const all = await Promise.all(Array.from({ length: 5 }, () => config.credentials()));
    assert.deepEqual(new Set(all.map((c) => c.authorization)), new Set(['Bearer shared']));
    assert.equal(runs(dir).length, 1);
  });

  it('runs the plugin again after the server refused its credential', async () => {
    const config = configWith({ args: [writePlugin(dir, { token: 'run-RUN' })] });
    assert.equal((await config.credentials()).authorization, 'Bearer run-1');
    config.invalidate();
    assert.equal((await config.credentials()).authorization, 'Bearer run-2');
  });

  it('presents a client certificate and key the plugin prints', async () => {
    const config = configWith({ args: [writePlugin(dir, { clientCertificateData: 'CERT', clientKeyData: 'KEY' })] });
    const creds = await config.credentials();
    assert.deepEqual(creds.tls, { cert: 'CERT', key: 'KEY', rejectUnauthorized: true });
    assert.equal(creds.authorization, undefined);
  });

  it('passes the cluster to a plugin that asks for it (provideClusterInfo)', async () => {
    const config = configWith({ args: [writePlugin(dir, { token: 't' })], provideClusterInfo: true }, { 'tls-server-name': 'api.internal' });
    await config.credentials();
    assert.deepEqual(runs(dir)[0]?.spec.cluster, { server: 'https://10.0.0.1:6443', 'tls-server-name': 'api.internal' });
  });

  it('resolves a relative command with a slash against the kubeconfig\'s directory', async () => {
    const script = join(dir, 'plugin.sh');
    writeFileSync(script, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(writePlugin(dir, { token: 'relative' }))}\n`, { mode: 0o755 });
    const config = configWith({ command: './plugin.sh' });
    assert.equal((await config.credentials()).authorization, 'Bearer relative');
  });

  it('fails with the install hint when the plugin is not installed', async () => {
    const config = configWith({ command: 'no-such-kube-plugin', installHint: 'install it with: brew install no-such-kube-plugin' });
    await assert.rejects(config.credentials(), /exec plugin no-such-kube-plugin failed: .*; install it with: brew install no-such-kube-plugin/);
  });

  it('fails with what the plugin said on stderr when it exits non-zero', async () => {
    const script = join(dir, 'fail.mjs');
    writeFileSync(script, 'console.error("token expired, run: login --renew"); process.exit(3);');
    await assert.rejects(configWith({ args: [script] }).credentials(), /exec plugin .* failed: token expired, run: login --renew/);
  });

  it('refuses output that is not an ExecCredential of the requested version', async () => {
    await assert.rejects(configWith({ args: [writePlugin(dir, { token: 't' }, 'client.authentication.k8s.io/v1beta1')] }).credentials(),
      /printed client\.authentication\.k8s\.io\/v1beta1 ExecCredential, expected client\.authentication\.k8s\.io\/v1 ExecCredential/);
    await assert.rejects(configWith({ args: [writePlugin(dir, { expirationTimestamp: '2030-01-01T00:00:00Z' })] }).credentials(),
      /returned neither status\.token nor status\.clientCertificateData with clientKeyData/);
  });
});
