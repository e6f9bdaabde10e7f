// A kubeconfig per operator replica, each with its own client certificate
// (signed by the control plane's CA, in group system:masters), so the audit
// log tells the replicas apart by user even though they share a user agent.
// The noisy-neighbour bench makes its tenants with it too, in groups of their own.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import type { ControlPlane } from '../../envtest/controlplane.ts';

const run = promisify(execFile);

/** Writes `<dir>/kubeconfig-<user>` authenticating as `user` in `groups` (the certificate's O); returns its path. */
export async function kubeconfigAs(cp: Pick<ControlPlane, 'dir' | 'server' | 'caPem'>, user: string, groups: string[] = ['system:masters']): Promise<string> {
  const at = (name: string) => join(cp.dir, `${user}.${name}`);
  await run('openssl', [
    'req', '-x509', '-CA', join(cp.dir, 'ca.crt'), '-CAkey', join(cp.dir, 'ca.key'),
    '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `${groups.map((g) => `/O=${g}`).join('')}/CN=${user}`, '-addext', 'basicConstraints=critical,CA:FALSE',
    '-addext', 'keyUsage=critical,digitalSignature', '-addext', 'extendedKeyUsage=clientAuth',
    '-keyout', at('key'), '-out', at('crt'),
  ]);
  const b64 = (name: string) => readFileSync(at(name)).toString('base64');
  const path = join(cp.dir, `kubeconfig-${user}`);
  writeFileSync(path, stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'envtest', cluster: { server: cp.server, 'certificate-authority-data': Buffer.from(cp.caPem).toString('base64') } }],
    users: [{ name: user, user: { 'client-certificate-data': b64('crt'), 'client-key-data': b64('key') } }],
    contexts: [{ name: 'envtest', context: { cluster: 'envtest', user, namespace: 'default' } }],
    'current-context': 'envtest',
  }), { mode: 0o600 });
  return path;
}
