// Where the API server is and how to prove who we are to it, like client-go's
// rest.Config: the server URL, the TLS material and the credentials, from the
// pod's service account or from kubeconfig files. KubeClient asks for them on
// every request, so credentials that change under a running process are
// picked up: files (a projected service-account token, certificates, a token
// file) are re-read once a minute, as client-go does, and at once after the
// server answers 401; an exec plugin's credential is kept until it expires.
// A kubeconfig feature the operator cannot honour is refused when the file is
// loaded, naming the field, rather than failing on the first request.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { systemClock, type Clock } from './clock.ts';
import { EXEC_API_VERSIONS, ExecPlugin, type ExecPluginSpec, type RunPlugin } from './exec-credential.ts';
import { record, text } from '../util/untyped.ts';
import { versionAtLeast } from '../util/version.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long a credential read from a file is used before the file is read again. */
export const FILE_REFRESH_MS = 60_000;

/** Inline PEM (or token) text, or a file to read it from. */
export type Material = { data: string } | { file: string };

export interface RestConfigOptions {
  server: string;
  ca?: Material;
  cert?: Material;
  key?: Material;
  token?: Material;
  exec?: ExecPluginSpec;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  /** An http:// or https:// proxy that every request goes through. */
  proxyUrl?: string;
  /** The context's namespace: where a command line tool works when not told (kubectl's default for -n). */
  namespace?: string;
  /** Who the credentials are, for messages: the kubeconfig's user name, or the pod's service account. */
  user?: string;
  clock?: Clock;
  /** Runs an exec plugin; tests replace it. */
  runPlugin?: RunPlugin;
}

/** TLS options for a connection pool; the same object until the material changes. */
export interface TlsMaterial {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized: boolean;
  servername?: string;
}

export interface Credentials {
  tls: TlsMaterial;
  /** The Authorization header value, if any. */
  authorization?: string;
}

/**
 * A client-node KubeConfig, which the tests, the demo and the benchmarks still
 * build: read through its kubeconfig export, so nothing in src imports client-node.
 */
export interface ExportableKubeConfig {
  exportConfig(): string;
}

export type KubeConfigSource = RestConfig | ExportableKubeConfig;

export class RestConfig {
  /** Without a trailing slash. */
  readonly server: string;
  readonly proxyUrl: string | undefined;
  readonly namespace: string | undefined;
  /** Who the credentials are, for messages (see RestConfigOptions.user). */
  readonly user: string;
  readonly #clock: Clock;
  readonly #ca: Source | undefined;
  readonly #cert: Source | undefined;
  readonly #key: Source | undefined;
  readonly #token: Source | undefined;
  readonly #exec: ExecPlugin | undefined = undefined;
  readonly #rejectUnauthorized: boolean;
  readonly #servername: string | undefined;
  #tls: TlsMaterial | undefined;

  constructor(o: RestConfigOptions) {
    let url: URL;
    try {
      url = new URL(o.server);
    } catch {
      throw new Error(`server ${JSON.stringify(o.server)} is not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`server ${o.server}: only https:// and http:// are supported`);
    if (o.insecureSkipTlsVerify && o.ca) throw new Error('insecure-skip-tls-verify cannot be combined with a certificate authority (kubectl refuses it too)');
    if (!o.cert !== !o.key && !o.exec) throw new Error(`a client certificate needs its key and a key needs its certificate (${o.cert ? 'client-key' : 'client-certificate'} is missing)`);
    if (o.proxyUrl) checkProxyUrl(o.proxyUrl);
    this.server = o.server.replace(/\/+$/, '');
    this.proxyUrl = o.proxyUrl || undefined;
    this.namespace = o.namespace || undefined;
    this.user = o.user || '(no user)';
    this.#clock = o.clock ?? systemClock;
    this.#ca = o.ca && source(o.ca, 'certificate authority');
    this.#cert = o.cert && source(o.cert, 'client certificate');
    this.#key = o.key && source(o.key, 'client key');
    this.#token = o.token && source(o.token, 'token', true);
    this.#rejectUnauthorized = !o.insecureSkipTlsVerify;
    this.#servername = o.tlsServerName || undefined;
    // Read every file now, so a missing one stops the operator at start, naming it.
    const now = this.#clock.now().getTime();
    for (const s of [this.#ca, this.#cert, this.#key, this.#token]) s?.value(now);
    if (o.exec) {
      const ca = this.#ca?.value(now);
      const cluster = {
        server: this.server,
        ...(ca ? { 'certificate-authority-data': Buffer.from(ca).toString('base64') } : {}),
        ...(o.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
        ...(this.#servername ? { 'tls-server-name': this.#servername } : {}),
        ...(this.proxyUrl ? { 'proxy-url': this.proxyUrl } : {}),
      };
      this.#exec = new ExecPlugin(o.exec, cluster, o.runPlugin);
    }
  }

  /** What the next request presents: TLS material and the Authorization header. */
  async credentials(): Promise<Credentials> {
    const now = this.#clock.now().getTime();
    const fromExec = this.#exec ? await this.#exec.credential(now) : undefined;
    const ca = this.#ca?.value(now);
    const cert = fromExec?.cert ?? this.#cert?.value(now);
    const key = fromExec?.key ?? this.#key?.value(now);
    const t = this.#tls;
    if (!t || t.ca !== ca || t.cert !== cert || t.key !== key) {
      this.#tls = {
        rejectUnauthorized: this.#rejectUnauthorized,
        ...(ca !== undefined ? { ca } : {}),
        ...(cert !== undefined ? { cert } : {}),
        ...(key !== undefined ? { key } : {}),
        ...(this.#servername ? { servername: this.#servername } : {}),
      };
    }
    const token = fromExec?.token ?? this.#token?.value(now);
    return { tls: this.#tls!, ...(token ? { authorization: `Bearer ${token}` } : {}) };
  }

  /** The server refused our credentials (401): the next request reads files and runs the exec plugin afresh. */
  invalidate(): void {
    for (const s of [this.#ca, this.#cert, this.#key, this.#token]) s?.expire();
    this.#exec?.expire();
  }
}

/**
 * The operator's connection as main.ts finds it: the kubeconfig files given
 * (--kubeconfig or $KUBECONFIG, a list like $PATH), else the pod's service
 * account, else ~/.kube/config.
 */
export async function loadRestConfig(opts: { kubeconfig?: string; context?: string; env?: NodeJS.ProcessEnv; clock?: Clock } = {}): Promise<RestConfig> {
  const env = opts.env ?? process.env;
  const clock = opts.clock ? { clock: opts.clock } : {};
  const files = { ...clock, ...(opts.context ? { context: opts.context } : {}) };
  if (opts.kubeconfig) return restConfigFromFiles(opts.kubeconfig.split(delimiter).filter(Boolean), files);
  if (env['KUBERNETES_SERVICE_HOST'] && !opts.context) return inClusterConfig(env, clock);
  const home = join(env['HOME'] || homedir(), '.kube', 'config');
  if (!existsSync(home)) throw new Error(`no kubeconfig: pass --kubeconfig or set KUBECONFIG, run in a pod, or create ${home}`);
  return restConfigFromFiles([home], files);
}

/** The pod's service account: its token (re-read as the kubelet rotates it) and the cluster CA. */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env, opts: { dir?: string; clock?: Clock } = {}): RestConfig {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) throw new Error('not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  const dir = opts.dir ?? SERVICE_ACCOUNT_DIR;
  return new RestConfig({
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca: { file: join(dir, 'ca.crt') },
    token: { file: join(dir, 'token') },
    user: `the pod's service account (token ${join(dir, 'token')})`,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
}

/** Kubeconfig files merged as kubectl merges them: the first file to name a cluster, user, context or current-context wins. Missing files are skipped. */
export async function restConfigFromFiles(paths: string[], opts: { clock?: Clock; context?: string } = {}): Promise<RestConfig> {
  const present = paths.filter((p) => existsSync(p));
  if (present.length === 0) throw new Error(`kubeconfig ${paths.join(delimiter)} does not exist`);
  // Loaded only here: an operator in a pod never parses YAML.
  const { parse } = await import('./yaml-parse.ts');
  const docs = present.map((path) => {
    try {
      return { doc: parse(readFileSync(path, 'utf8')) as unknown, dir: dirname(resolve(path)) };
    } catch (err) {
      throw new Error(`kubeconfig ${path}: ${(err as Error).message}`);
    }
  });
  return restConfigFromKubeconfig(docs, { ...opts, name: present.join(delimiter) });
}

/** A client-node KubeConfig, or a RestConfig as it is. */
export function toRestConfig(source: KubeConfigSource): RestConfig {
  if (source instanceof RestConfig) return source;
  return restConfigFromKubeconfig([{ doc: JSON.parse(source.exportConfig()) as unknown, dir: process.cwd() }], { name: 'KubeConfig' });
}

/** Parsed kubeconfig documents, each with the directory its relative paths start from; `context` instead of their current-context (kubectl's --context). */
export function restConfigFromKubeconfig(docs: Array<{ doc: unknown; dir: string }>, opts: { name?: string; clock?: Clock; context?: string } = {}): RestConfig {
  const where = `kubeconfig ${opts.name ?? ''}`.trim();
  const clusters = new Map<string, Entry>();
  const users = new Map<string, Entry>();
  const contexts = new Map<string, Entry>();
  let current: string | undefined;
  for (const { doc, dir } of docs) {
    const d = record(doc);
    current ||= text(d['current-context']);
    collect(d['clusters'], 'cluster', dir, clusters);
    collect(d['users'], 'user', dir, users);
    collect(d['contexts'], 'context', dir, contexts);
  }
  if (opts.context) current = opts.context;
  if (!current) throw new Error(`${where}: no current-context`);
  const context = contexts.get(current)?.fields;
  if (!context) throw new Error(`${where}: ${opts.context ? 'context' : 'current-context'} ${JSON.stringify(current)} is not among its contexts`);
  const clusterName = text(context['cluster']);
  const cluster = clusterName ? clusters.get(clusterName) : undefined;
  if (!cluster) throw new Error(`${where}: context ${JSON.stringify(current)} names cluster ${JSON.stringify(clusterName ?? '')}, which it does not define`);
  const userName = text(context['user']);
  const user = userName ? users.get(userName) : { fields: {}, dir: cluster.dir };
  if (!user) throw new Error(`${where}: context ${JSON.stringify(current)} names user ${JSON.stringify(userName)}, which it does not define`);

  const c = cluster.fields;
  const u = user.fields;
  const server = text(c['server']);
  if (!server) throw new Error(`${where}: cluster ${JSON.stringify(clusterName)} has no server`);
  let exec: ExecPluginSpec | undefined;
  try {
    refuseUnsupported(u);
    exec = u['exec'] ? execSpec(record(u['exec']), user.dir) : undefined;
  } catch (err) {
    throw new Error(`${where}: user ${JSON.stringify(userName ?? '')}: ${(err as Error).message}`);
  }
  const proxyUrl = text(c['proxy-url']);
  const tlsServerName = text(c['tls-server-name']);
  const namespace = text(context['namespace']);
  try {
    return new RestConfig({
      server,
      ...material(c, 'certificate-authority', cluster.dir, 'ca'),
      ...material(u, 'client-certificate', user.dir, 'cert'),
      ...material(u, 'client-key', user.dir, 'key'),
      ...(text(u['token']) ? { token: { data: text(u['token'])! } } : text(u['tokenFile']) ? { token: { file: resolve(user.dir, text(u['tokenFile'])!) } } : {}),
      ...(exec ? { exec } : {}),
      insecureSkipTlsVerify: c['insecure-skip-tls-verify'] === true,
      ...(tlsServerName ? { tlsServerName } : {}),
      ...(proxyUrl ? { proxyUrl } : {}),
      ...(namespace ? { namespace } : {}),
      ...(userName ? { user: `${JSON.stringify(userName)} of ${where}` } : {}),
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  } catch (err) {
    throw new Error(`${where}: context ${JSON.stringify(current)}: ${(err as Error).message}`);
  }
}

interface Entry {
  fields: Record<string, unknown>;
  dir: string;
}

function collect(list: unknown, field: string, dir: string, into: Map<string, Entry>): void {
  if (!Array.isArray(list)) return;
  for (const item of list) {
    const named = record(item);
    const name = text(named['name']);
    if (name && !into.has(name)) into.set(name, { fields: record(named[field]), dir });
  }
}

/** `<field>-data` (base64) wins over `<field>` (a path, relative to the kubeconfig's directory). */
function material(fields: Record<string, unknown>, field: string, dir: string, as: 'ca' | 'cert' | 'key'): Partial<Record<'ca' | 'cert' | 'key', Material>> {
  const data = text(fields[`${field}-data`]);
  if (data) return { [as]: { data: Buffer.from(data, 'base64').toString('utf8') } };
  const file = text(fields[field]);
  return file ? { [as]: { file: resolve(dir, file) } } : {};
}

function refuseUnsupported(u: Record<string, unknown>): void {
  const set = (k: string) => u[k] !== undefined && u[k] !== null && u[k] !== '' && !(Array.isArray(u[k]) && u[k].length === 0);
  if (set('auth-provider')) {
    const name = text(record(u['auth-provider'])['name']) ?? '';
    throw new Error(`auth-provider ${JSON.stringify(name)} is not supported (client-go dropped auth-provider plugins); use an exec credential plugin, e.g. kubelogin for OIDC`);
  }
  if (set('username') || set('password')) throw new Error('username/password (basic authentication) is not supported: Kubernetes removed it in 1.19');
  const impersonation = ['as', 'as-uid', 'as-groups', 'as-user-extra'].filter(set);
  if (impersonation.length > 0) throw new Error(`impersonation (${impersonation.join(', ')}) is not supported: give the operator credentials of its own`);
}

function execSpec(e: Record<string, unknown>, dir: string): ExecPluginSpec {
  const command = text(e['command']);
  if (!command) throw new Error('exec: command is missing');
  const apiVersion = text(e['apiVersion']) ?? '';
  if (!EXEC_API_VERSIONS.includes(apiVersion)) {
    throw new Error(`exec: apiVersion ${JSON.stringify(apiVersion)} is not supported; use ${EXEC_API_VERSIONS.join(' or ')}`);
  }
  if (e['interactiveMode'] === 'Always') throw new Error('exec: interactiveMode Always needs a terminal, which the operator does not have');
  const env = Array.isArray(e['env']) ? e['env'].map((x) => record(x)).map((x) => ({ name: text(x['name']) ?? '', value: text(x['value']) ?? '' })) : [];
  const installHint = text(e['installHint']);
  return {
    command, apiVersion, dir,
    args: Array.isArray(e['args']) ? e['args'].map(String) : [],
    env: env.filter((x) => x.name),
    provideClusterInfo: e['provideClusterInfo'] === true,
    ...(installHint ? { installHint } : {}),
  };
}

function checkProxyUrl(proxyUrl: string): void {
  let url: URL;
  try {
    url = new URL(proxyUrl);
  } catch {
    throw new Error(`proxy-url ${JSON.stringify(proxyUrl)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`proxy-url ${proxyUrl}: only http:// and https:// proxies are supported, not ${url.protocol}//`);
  // Node's agents take a proxy from 24.5 and 22.21; an older Node would silently connect directly.
  const node = process.versions.node;
  if (!(versionAtLeast(node, '24.5') || (node.startsWith('22.') && versionAtLeast(node, '22.21')))) throw new Error(`proxy-url needs Node.js 22.21 or 24.5 or later (this is ${process.versions.node})`);
}

interface Source {
  value(nowMs: number): string;
  expire(): void;
}

function source(m: Material, what: string, trim = false): Source {
  if ('data' in m) {
    const value = trim ? m.data.trim() : m.data;
    return { value: () => value, expire() {} };
  }
  return new FileSource(m.file, what, trim);
}

/** A file read at most once per FILE_REFRESH_MS; if a re-read fails, the last good content is kept. */
class FileSource implements Source {
  readonly #path: string;
  readonly #what: string;
  readonly #trim: boolean;
  #value: string | undefined;
  #readAt = -Infinity;

  constructor(path: string, what: string, trim: boolean) {
    this.#path = path;
    this.#what = what;
    this.#trim = trim;
  }

  value(nowMs: number): string {
    if (this.#value !== undefined && nowMs - this.#readAt < FILE_REFRESH_MS) return this.#value;
    try {
      const content = readFileSync(this.#path, 'utf8');
      this.#value = this.#trim ? content.trim() : content;
    } catch (err) {
      if (this.#value === undefined) throw new Error(`cannot read the ${this.#what} file ${this.#path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    this.#readAt = nowMs;
    return this.#value;
  }

  expire(): void {
    this.#readAt = -Infinity;
  }
}
