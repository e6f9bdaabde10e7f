// Writes everything a throwaway control plane needs on disk before it starts:
// a CA and a serving certificate for 127.0.0.1 (openssl), the service-account key
// pair, a static token file with an admin and an unprivileged user, the audit
// policy, and a kubeconfig that trusts the CA and carries the admin token.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { EnvtestError } from './errors.ts';

const run = promisify(execFile);

export interface Credentials {
  caPem: string;
  adminToken: string;
  nobodyToken: string;
}

export const NOBODY_USER = 'envtest-nobody';

/** Creates ca.crt, serving.{crt,key}, sa.{key,pub}, tokens.csv and audit-policy.yaml in `dir`. */
export async function writeControlPlaneFiles(dir: string): Promise<Credentials> {
  const at = (name: string) => join(dir, name);
  await Promise.all([
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650',
      '-subj', '/CN=envtest-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', at('ca.key'), '-out', at('ca.crt')]),
    openssl(['genrsa', '-out', at('sa.key'), '2048'])
      .then(() => openssl(['rsa', '-in', at('sa.key'), '-pubout', '-out', at('sa.pub')])),
  ]);
  await openssl(['req', '-x509', '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-newkey', 'ec',
    '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-addext', 'basicConstraints=critical,CA:FALSE',
    '-addext', 'keyUsage=critical,digitalSignature', '-addext', 'extendedKeyUsage=serverAuth',
    '-keyout', at('serving.key'), '-out', at('serving.crt')]);

  const adminToken = randomBytes(24).toString('hex');
  const nobodyToken = randomBytes(24).toString('hex');
  writeFileSync(at('tokens.csv'), [
    `${adminToken},envtest-admin,envtest-admin,"system:masters"`,
    `${nobodyToken},${NOBODY_USER},${NOBODY_USER}`,
    '',
  ].join('\n'), { mode: 0o600 });
  writeFileSync(at('audit-policy.yaml'), stringify(AUDIT_POLICY));
  return { caPem: readFileSync(at('ca.crt'), 'utf8'), adminToken, nobodyToken };
}

// Writes are interesting (tests count them per user agent), and only once the
// response is known, so each request is exactly one line. Reads are logged too
// for ServiceAccounts, which only the chart test uses: it proves the operator,
// running as the chart's ServiceAccount, uses every permission the chart grants.
const AUDIT_POLICY = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived', 'ResponseStarted', 'Panic'],
  rules: [
    { level: 'Metadata', verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
    { level: 'Metadata', userGroups: ['system:serviceaccounts'] },
    { level: 'None' },
  ],
};

/** A kubeconfig with one context, `envtest`, authenticating with `token`. */
export function kubeconfigYaml(server: string, caPem: string, token: string): string {
  const user = 'envtest-admin';
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'envtest', cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: 'envtest', context: { cluster: 'envtest', user, namespace: 'default' } }],
    'current-context': 'envtest',
  });
}

/** Runs openssl, saying plainly when it is missing or what it refused. */
export async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new EnvtestError('openssl is not installed; install it (apt-get install openssl) and retry.');
    throw new EnvtestError(`openssl ${args[0]} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}
