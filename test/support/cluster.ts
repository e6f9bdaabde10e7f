// Helpers for integration tests against the control plane that the global setup
// started for this run: its connection details, a namespace per test (nothing
// deletes namespaces here, as no controller-manager runs), applying YAML, and the
// audit log's record of writes and the windows in which a component writes nothing
// (polling is wait.ts).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { writeLabel, type AuditWrite } from '../envtest/audit.ts';
import type { ControlPlane } from '../envtest/controlplane.ts';
import { assertQuietWindow } from './quiet-window.ts';

let current: ControlPlane | undefined;

const fixturesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const FIELD_MANAGER = 'integration-test';

/** Called by the global setup; tests use testEnv(). */
export function setTestEnv(cp: ControlPlane | undefined): void {
  current = cp;
}

/** The control plane of this test run. */
export function testEnv(): ControlPlane {
  if (!current) {
    throw new Error('no control plane is running: run integration tests with `npm test` (or mocha with .mocharc.json, which requires test/support/global-setup.ts), not with ENVTEST=off');
  }
  return current;
}

/** Creates a namespace with a unique name starting with `prefix`. */
export async function freshNamespace(prefix = 'test'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await testEnv().kubeConfig().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** The text of test/fixtures/<name>. */
export function fixture(name: string): string {
  return readFileSync(join(fixturesDir, name), 'utf8');
}

/** Server-side applies every document in `yaml` (into `namespace` when given); returns what the server stored. */
export async function applyYaml(yaml: string, opts: { namespace?: string } = {}): Promise<KubernetesObject[]> {
  const client = KubernetesObjectApi.makeApiClient(testEnv().kubeConfig());
  const applied: KubernetesObject[] = [];
  for (const doc of parseAllDocuments(yaml)) {
    const obj = doc.toJS() as KubernetesObject | null;
    if (!obj) continue;
    if (opts.namespace) obj.metadata = { ...obj.metadata, namespace: opts.namespace };
    applied.push(await client.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
  }
  return applied;
}

/** Writes recorded by the audit log since `since` from clients whose User-Agent starts with `userAgentPrefix`. */
export function writesSince(since: Date, userAgentPrefix: string): AuditWrite[] {
  return testEnv().auditWrites({ since, userAgentPrefix });
}

export interface NoWrites {
  /** What the window is about, for messages ("operator writes after the restart"). */
  what: string;
  namespace: string;
  /** Whose writes: the start of its client's User-Agent ("serverlessapp-operator"). */
  userAgentPrefix: string;
  /** Writes from this instant on count (taken before the restart or resync the window follows). */
  since: Date;
  windowMs: number;
  /**
   * The positive control: creates `marker` (a ConfigMap in `namespace`) through a client of that
   * User-Agent, the component's own when it has one. The window's reader must then find it: a wrong
   * user agent, namespace or audit log would otherwise pass as "nothing written".
   */
  control: (marker: { apiVersion: 'v1'; kind: 'ConfigMap'; metadata: { name: string; namespace: string }; data: Record<string, string> }) => Promise<unknown>;
}

/**
 * "Nothing was written", which cannot be waited for: no write by `userAgentPrefix` in `namespace`
 * (or of a cluster-scoped object) from `since` to the end of a window of `windowMs` (callers open it once the component's queue is
 * idle), then the control's marker write, which the same reader must see. The audit log is written
 * before the API server answers (blocking mode), so each look is complete up to that moment.
 */
export async function assertNoWrites(w: NoWrites): Promise<void> {
  const marker = `no-writes-control-${randomBytes(4).toString('hex')}`;
  await assertQuietWindow({
    what: `${w.what} (writes by ${w.userAgentPrefix}* in ${w.namespace} since ${w.since.toISOString()})`,
    windowMs: w.windowMs,
    // Cluster-scoped writes (a HostClaim, say) count too: they name no namespace to tell whose they are.
    observe: () => writesSince(w.since, w.userAgentPrefix).filter((x) => x.namespace === w.namespace || x.namespace === undefined).map((x) => `${writeLabel(x)} ${x.name ?? ''}`),
    expect: [],
    control: () => w.control({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: marker, namespace: w.namespace }, data: { control: w.what } }),
    controlShows: (writes) => writes.includes(`create configmaps ${marker}`),
  });
}

/**
 * ConfigMaps the cluster publishes into every namespace, not a test's objects: kube-controller-manager's
 * root CA, and the rig's istiod's root certificate and CRL (pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go).
 */
export function publishedIntoEveryNamespace(name: string | undefined): boolean {
  return name === 'kube-root-ca.crt' || name === 'istio-ca-root-cert' || name === 'istio-ca-crl';
}
