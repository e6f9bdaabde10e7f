// Installs the real CustomResourceDefinitions our operator writes against
// (Knative Serving, KServe, Istio networking, Gateway API and its Inference Extension), read at setup time from the
// upstream Go modules at the versions pinned below, plus this project's own CRDs
// from crds/. Nothing upstream is copied into the repository: `go mod download`
// fetches each module once into GOMODCACHE, checked against the Go checksum database.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../support/wait.ts';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api, PatchStrategy, setHeaderOptions,
  type KubeConfig, type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../src/runtime/client.ts';
import { isConditionTrue } from '../../src/util/conditions.ts';
import { EnvtestError } from './errors.ts';

// The one place the upstream CRD versions are pinned, the same versions the
// rig's controllers are built from (test/envtest/knative/go.mod, kserve/go.mod).
// knative.dev/serving v0.48.1 is Knative Serving 1.21.1; its module zip lacks the
// CRDs that are symlinks in its tree (Ingress, ServerlessService, Certificate,
// ClusterDomainClaim from knative.dev/networking; Image from knative.dev/caching),
// so those come from the networking and caching versions serving v0.48.1 requires.
// Module-tree YAML says `app.kubernetes.io/version: devel`; the release
// manifests say the release, so `release` is stamped on those CRDs.
// Bump a pin here and every test run installs that release's CRDs.
// Istio's CRDs are those of the istio.io/api version the rig's istiod pins
// (test/envtest/istio/go.mod, checked by upstream-crds.test.ts), so that its
// validation and its CRDs' schemas are one release.
// Gateway API: the standard channel (HTTPRoute v1 and its Gateway parents) of
// the newest release this Go builds (v1.7.0 needs Go 1.27); istiod pins v1.6.0,
// and istiod reads newer bundles of a minor it knows
// (istio pkg/config/schema/gatewayapi/minimumversions.go sets only minimums).
export const KNATIVE_RELEASE = '1.21.1';
/** The istio.io/istio version istiod is built from (test/envtest/istio/go.mod); its charts give the rig's istiod setup. */
export const ISTIO_MODULE = { module: 'istio.io/istio', version: 'v0.0.0-20260827124520-eed52ebb66ad' } as const;
export const UPSTREAM_CRD_SOURCES: readonly CrdSource[] = [
  { module: 'knative.dev/serving', version: 'v0.48.1', path: 'config/core/300-resources', release: KNATIVE_RELEASE },
  { module: 'knative.dev/networking', version: 'v0.0.0-20260120131110-a7cdca238a0d', path: 'config', release: KNATIVE_RELEASE },
  { module: 'knative.dev/caching', version: 'v0.0.0-20260120130310-f1fc03b7f5ee', path: 'config', release: KNATIVE_RELEASE },
  { module: 'github.com/kserve/kserve', version: 'v0.20.0', path: 'config/crd/full' },
  { module: 'istio.io/api', version: 'v1.31.0-rc.0.0.20260824154656-b943409680a7', path: 'kubernetes/customresourcedefinitions.gen.yaml' },
  { module: 'sigs.k8s.io/gateway-api', version: 'v1.6.3', path: 'config/crd/standard' },
  // The Gateway API Inference Extension KServe's llmisvc is built against (kserve/go.mod): its InferencePool
  // (inference.networking.k8s.io/v1, the only version istiod implements) and the x-k8s.io alpha kinds.
  { module: 'sigs.k8s.io/gateway-api-inference-extension', version: 'v1.5.0', path: 'config/crd/bases' },
];

export interface CrdSource {
  module: string;
  version: string;
  /** A YAML file, or a directory searched recursively for YAML files, inside the module. */
  path: string;
  /** The release these CRDs belong to, stamped as `app.kubernetes.io/version` where the tree says `devel`. */
  release?: string;
}

type Crd = V1CustomResourceDefinition & { metadata: { name: string } };

const CRD_KIND = { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false };
const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIELD_MANAGER = 'envtest';
const ESTABLISH_TIMEOUT_MS = 180_000;
const run = promisify(execFile);

/** Installs upstream and project CRDs and waits until all are Established; returns their names. */
export async function installAllCrds(kc: KubeConfig): Promise<string[]> {
  const crds = [...(await upstreamCrds()), ...projectCrds()];
  await installCrds(kc, crds);
  return crds.map((crd) => crd.metadata.name);
}

/** Every CRD in the pinned upstream modules (parsed once per process: the rig and the test setup both ask). */
export async function upstreamCrds(sources: readonly CrdSource[] = UPSTREAM_CRD_SOURCES): Promise<Crd[]> {
  return (await Promise.all(sources.map(crdsOf))).flat();
}

const parsed = new Map<string, Promise<Crd[]>>();

function crdsOf(src: CrdSource): Promise<Crd[]> {
  const key = `${src.module}@${src.version}/${src.path}#${src.release ?? ''}`;
  let crds = parsed.get(key);
  if (!crds) {
    crds = downloadModule(src.module, src.version).then((dir) => yamlFiles(join(dir, src.path)).flatMap(crdsInFile)
      .map((crd) => (src.release ? withReleaseLabel(crd, src.release) : crd)));
    parsed.set(key, crds);
  }
  return crds;
}

/** `obj` with `app.kubernetes.io/version: release` where its YAML says `devel`, as in the release manifests. */
export function withReleaseLabel<T extends { metadata?: { labels?: Record<string, string> } }>(obj: T, release: string): T {
  const labels = obj.metadata?.labels;
  if (labels?.['app.kubernetes.io/version'] !== 'devel') return obj;
  return { ...obj, metadata: { ...obj.metadata, labels: { ...labels, 'app.kubernetes.io/version': release } } };
}

/** This project's generated CRDs (crds/*.yaml); none yet is fine. */
export function projectCrds(root = projectRoot): Crd[] {
  return yamlFiles(join(root, 'crds')).flatMap(crdsInFile);
}

/** Creates or updates `crds` by server-side apply (huge schemas fit: no last-applied annotation), then waits for Established. */
export async function installCrds(kc: KubeConfig, crds: Crd[]): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const apply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
  // A CRD that is already there as wanted (the rig installed it) is not applied again: each apply
  // of a large schema costs the API server seconds on a busy machine.
  // Raw JSON, not client-node's typed models (which rename x-kubernetes-* keys), to compare with the YAML.
  const list = await new KubeClient(kc, { userAgent: 'envtest' }).list<V1CustomResourceDefinition>(CRD_KIND);
  const live = new Map(list.items.map((c) => [c.metadata?.name ?? '', c]));
  const wanted = crds.filter((crd) => !isInstalled(crd, live.get(crd.metadata.name)));
  await forEachLimited(wanted, 4, async (crd) => {
    const deadline = performance.now() + BUSY_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await api.patchCustomResourceDefinition({ name: crd.metadata.name, body: crd, fieldManager: FIELD_MANAGER, force: true }, apply);
        return;
      } catch (err) {
        // A busy API server (2 shared cores) answers a huge schema's apply with 504/429/503; the apply
        // is idempotent, so it is tried again until the deadline, then reported with every attempt.
        if (!busy(err) || performance.now() > deadline) {
          throw new Error(`installing CRD ${crd.metadata.name} failed after ${attempt} attempt(s) in ${BUSY_RETRY_MS / 1000}s: ${describeApiError(err)}`);
        }
        await sleep(Math.min(2_000 * attempt, 15_000));
      }
    }
  });
  await waitEstablished(api, new Set(crds.map((crd) => crd.metadata.name)));
}

/** `go mod download` one module version into GOMODCACHE (a no-op when cached); returns its directory. */
export async function downloadModule(module: string, version: string): Promise<string> {
  const env = { ...process.env, GOTOOLCHAIN: 'local', GOWORK: 'off', GOFLAGS: '-mod=mod' };
  let stdout: string;
  try {
    ({ stdout } = await run('go', ['mod', 'download', '-json', `${module}@${version}`], { cwd: tmpdir(), env }));
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new EnvtestError('Go is not installed; install Go >= 1.25 (the machine image has it at /usr/local/go/bin) and put it on PATH.');
    const detail = parseDownload(e.stdout ?? '')?.Error ?? e.stderr?.trim() ?? e.message;
    throw new EnvtestError(`could not download ${module}@${version} for its CRDs (${detail}); check that the Go module proxy is reachable (go env GOPROXY).`);
  }
  const dir = parseDownload(stdout)?.Dir;
  if (!dir) throw new EnvtestError(`go mod download ${module}@${version} printed no directory.`);
  return dir;
}

function parseDownload(stdout: string): { Dir?: string; Error?: string } | undefined {
  try {
    return JSON.parse(stdout) as { Dir?: string; Error?: string };
  } catch {
    return undefined;
  }
}

function yamlFiles(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => join(path, name));
}

function crdsInFile(path: string): Crd[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((doc) => doc.toJS({ maxAliasCount: -1 }) as Crd | null)
    // kustomize patches next to the CRDs are partial CRD documents: only whole definitions count.
    .filter((obj): obj is Crd => obj?.kind === 'CustomResourceDefinition' && obj.apiVersion === 'apiextensions.k8s.io/v1'
      && Boolean(obj.spec?.group) && (obj.spec?.versions?.length ?? 0) > 0)
    .map(({ status: _status, ...crd }) => {
      const { creationTimestamp: _created, ...metadata } = crd.metadata;
      return { ...crd, metadata };
    });
}

async function waitEstablished(api: ApiextensionsV1Api, names: Set<string>): Promise<void> {
  let pending: V1CustomResourceDefinition[] = [];
  await waitFor('the CRDs to be Established', async () => {
    const { items } = await api.listCustomResourceDefinition();
    pending = items.filter((crd) => names.has(crd.metadata?.name ?? '') && !isEstablished(crd));
    return pending.length === 0 && items.filter((crd) => names.has(crd.metadata?.name ?? '')).length === names.size;
  }, { timeoutMs: ESTABLISH_TIMEOUT_MS, intervalMs: 200 }).catch((e: Error) => {
    // Which CRDs were not Established and why, and the wait's own message (with a list's last error, if any).
    const why = pending.map((crd) => `${crd.metadata?.name}: ${(crd.status?.conditions ?? [])
      .filter((c) => c.status !== 'True').map((c) => `${c.type}=${c.status} ${c.message ?? ''}`).join('; ')}`);
    throw new Error(`CRDs not Established after ${ESTABLISH_TIMEOUT_MS / 1000}s (${e.message}):\n${why.join('\n')}`);
  });
}

/** The live CRD holds everything `crd` states (labels and spec; defaults the server added do not count). */
function isInstalled(crd: Crd, live: V1CustomResourceDefinition | undefined): boolean {
  return !!live && isEstablished(live) && contains(live.metadata?.labels ?? {}, crd.metadata.labels ?? {}) && contains(live.spec, crd.spec);
}

function contains(live: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return live === want;
  if (Array.isArray(want)) return Array.isArray(live) && live.length === want.length && want.every((w, i) => contains(live[i], w));
  if (live === null || typeof live !== 'object') return false;
  return Object.entries(want).every(([k, v]) => v === undefined || contains((live as Record<string, unknown>)[k], v));
}

function isEstablished(crd: V1CustomResourceDefinition): boolean {
  return isConditionTrue(crd.status?.conditions, 'Established');
}

async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: Math.min(limit, queue.length) }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
  }));
}

/** How long an apply the API server answered "busy" is tried again. */
const BUSY_RETRY_MS = 5 * 60_000;

/** The API server's answers that say "not now", not "no". */
function busy(err: unknown): boolean {
  const code = (err as { code?: number }).code;
  return code === 429 || code === 502 || code === 503 || code === 504;
}

function describeApiError(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  if (e.code === undefined) return e.message ?? String(err);
  const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body);
  try {
    return `${e.code} ${(JSON.parse(body) as { message?: string }).message ?? body}`;
  } catch {
    return `${e.code} ${body}`;
  }
}
