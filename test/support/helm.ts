// Runs the helm CLI (built from pinned Go modules by test/envtest/build.sh)
// against this repository's chart, and compares the permissions the chart's
// RBAC grants with those a client used, as the API server's audit log records
// them. Helm gets config, cache and data directories of its own, so tests
// never read or write the user's ~/.config/helm.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1EnvVar } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { buildBinaries } from '../envtest/controlplane.ts';
import { SETTLE_MS, waitFor } from './wait.ts';
import { scratchDir } from './scratch.ts';

export const CHART_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'charts', 'serverlessapp-operator');

/**
 * The Kubernetes version the tests render for (the one the rig runs), so they
 * do not follow the version helm assumes by default (its client-go's, stamped
 * by test/envtest/build.sh as helm's Makefile does).
 */
export const TEMPLATE_KUBE_VERSION = '1.35.0';

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A rendered object, as much of it as the tests read. */
export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** Helm failed; the message is helm's own error output. */
export class HelmError extends Error {
  override name = 'HelmError';
}

let helmBinary: Promise<string> | undefined;
let home: string | undefined;

function helmHome(): string {
  if (!home) {
    home = scratchDir('helm-home-');
  }
  return home;
}

/** Runs `helm args`; never rejects on a non-zero exit (the result carries it). */
export async function helm(args: string[], opts: { kubeconfig?: string; timeoutMs?: number } = {}): Promise<HelmResult> {
  helmBinary ??= buildBinaries().then((dir) => join(dir, 'helm'));
  const binary = await helmBinary;
  const dir = helmHome();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    HELM_CONFIG_HOME: join(dir, 'config'),
    HELM_CACHE_HOME: join(dir, 'cache'),
    HELM_DATA_HOME: join(dir, 'data'),
    ...(opts.kubeconfig ? { KUBECONFIG: opts.kubeconfig } : {}),
  };
  return new Promise((resolve, reject) => {
    execFile(binary, args, { env, timeout: opts.timeoutMs ?? SETTLE_MS, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
    });
  });
}

/** Writes `values` to a file helm reads with -f (JSON is YAML), so types survive as they are. */
function withValuesFile<T>(values: object, fn: (path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'helm-values-'));
  const path = join(dir, 'values.json');
  writeFileSync(path, JSON.stringify(values));
  return fn(path).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** `helm template` of the chart with `values`; resolves with helm's result, failures included. */
export function templateChart(values: object = {}, opts: { release?: string; namespace?: string } = {}): Promise<HelmResult> {
  return withValuesFile(values, (file) => helm([
    'template', opts.release ?? 'sapp', CHART_DIR, '--namespace', opts.namespace ?? 'serverlessapp-system',
    '--kube-version', TEMPLATE_KUBE_VERSION, '-f', file,
  ]));
}

/** The objects `helm template` renders with `values`; throws HelmError with helm's message when it refuses. */
export async function renderChart(values: object = {}, opts: { release?: string; namespace?: string } = {}): Promise<RenderedObject[]> {
  const result = await templateChart(values, opts);
  if (result.code !== 0) throw new HelmError(result.stderr.trim());
  return parseAllDocuments(result.stdout)
    .map((doc) => doc.toJS() as RenderedObject | null)
    .filter((o): o is RenderedObject => o !== null);
}

/** `helm install` into the cluster of `kubeconfig`, creating the namespace. */
export async function installChart(release: string, namespace: string, values: object, opts: { kubeconfig: string; extraArgs?: string[] }): Promise<string> {
  const result = await withValuesFile(values, (file) => helm([
    'install', release, CHART_DIR, '--namespace', namespace, '--create-namespace', '-f', file, ...(opts.extraArgs ?? []),
  ], { kubeconfig: opts.kubeconfig }));
  if (result.code !== 0) throw new HelmError(`helm install ${release} failed: ${result.stderr.trim()}`);
  return result.stdout;
}

export async function uninstallChart(release: string, namespace: string, opts: { kubeconfig: string }): Promise<void> {
  const result = await helm(['uninstall', release, '--namespace', namespace], { kubeconfig: opts.kubeconfig });
  if (result.code !== 0) throw new HelmError(`helm uninstall ${release} failed: ${result.stderr.trim()}`);
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

/** A permission as kubectl spells it: "patch serverlessapps/status.serverlessapp.io", "get leases.coordination.k8s.io". */
export function permission(verb: string, apiGroup: string, resource: string): string {
  return `${verb} ${resource}${apiGroup ? `.${apiGroup}` : ''}`;
}

/** Every (verb, resource) a set of rules grants; resourceNames narrow a grant but do not change its verb and resource. */
export function grantedPermissions(rules: PolicyRule[]): Set<string> {
  const granted = new Set<string>();
  for (const r of rules) {
    for (const group of r.apiGroups ?? []) for (const resource of r.resources ?? []) for (const verb of r.verbs) granted.add(permission(verb, group, resource));
  }
  return granted;
}

/** One request of the audit log, as much of it as the permission check reads. */
export interface AuditedRequest {
  verb: string;
  apiGroup: string;
  /** With the subresource, e.g. serverlessapps/status. */
  resource: string;
  namespace?: string;
  name?: string;
  code: number;
}

/** The resource requests `username` made, oldest first, from the audit log at `path` (JSON lines). */
export function auditedRequests(path: string, username: string): AuditedRequest[] {
  const requests: AuditedRequest[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as {
      stage?: string; verb?: string; user?: { username?: string }; responseStatus?: { code?: number };
      objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
    };
    const ref = e.objectRef;
    if (e.stage !== 'ResponseComplete' || e.user?.username !== username || !ref?.resource || !e.verb) continue;
    requests.push({
      verb: e.verb, apiGroup: ref.apiGroup ?? '', resource: ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource,
      ...(ref.namespace ? { namespace: ref.namespace } : {}), ...(ref.name ? { name: ref.name } : {}), code: e.responseStatus?.code ?? 0,
    });
  }
  return requests;
}

/**
 * The permissions the requests were authorized with. A 403 was refused, so it
 * used nothing. A server-side apply that created its object (PATCH answered
 * 201) was authorized as create as well as patch.
 */
export function permissionsUsed(requests: AuditedRequest[]): Set<string> {
  const used = new Set<string>();
  for (const r of requests) {
    if (r.code === 403) continue;
    used.add(permission(r.verb, r.apiGroup, r.resource));
    if (r.verb === 'patch' && r.code === 201) used.add(permission('create', r.apiGroup, r.resource));
  }
  return used;
}

/** Checked by the OwnerReferencesPermissionEnforcement admission plugin when a child's ownerReference sets blockOwnerDeletion, not by a request of its own. */
const ADMISSION_ONLY = new Set(['update serverlessapps/finalizers.serverlessapp.io']);

export const describeRequest = (r: AuditedRequest) => `${r.verb} ${r.resource}${r.apiGroup ? `.${r.apiGroup}` : ''} ${r.namespace ?? '(cluster)'}/${r.name ?? ''}`;

/**
 * What `username` did with what its roles grant, from the audit log: its requests, those refused
 * (the chart grants too little) and the grants it never used (too much). A watch is logged when it
 * ends, so a just-stopped operator's watches may take a moment: unused grants are looked at again
 * for up to `settleMs`.
 */
export async function auditGrants(auditLog: string, username: string, granted: Set<string>, settleMs = 10_000): Promise<{ requests: AuditedRequest[]; refused: string[]; unused: string[] }> {
  const unused = () => {
    const used = permissionsUsed(auditedRequests(auditLog, username));
    return [...granted].filter((p) => !used.has(p) && !ADMISSION_ONLY.has(p)).sort();
  };
  // Grants still unused after `settleMs` are the answer (too much granted), not a failure of this wait.
  await waitFor(`the audit log to show ${username} using every grant`, () => unused().length === 0, { timeoutMs: settleMs, intervalMs: 200 }).catch(() => undefined);
  const requests = auditedRequests(auditLog, username);
  return { requests, refused: requests.filter((r) => r.code === 403).map(describeRequest), unused: unused() };
}

/** The environment a pod of the chart's Deployment sees, with the downward API (its namespace and name) filled in. */
export function podEnv(env: V1EnvVar[], pod: { namespace: string; name: string }): Record<string, string> {
  const fields: Record<string, string> = { 'metadata.namespace': pod.namespace, 'metadata.name': pod.name };
  return Object.fromEntries(env.map((e) => [e.name, e.value ?? fields[e.valueFrom?.fieldRef?.fieldPath ?? ''] ?? '']));
}
