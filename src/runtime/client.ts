// The one component that writes objects to the API server (and reads them when
// a cache will not do). Plain JSON in and out, no generated model classes, so
// CRDs without typings (KServe) are as easy as core kinds. TLS material and
// credentials come from the KubeConfig on every request, so rotated tokens are
// picked up; connections are kept alive. Every request is counted in
// rest_client_requests_total.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { Kinds, apiVersionOf, resourcePath, type ResourceKind } from './kinds.ts';
import type { OperatorMetrics } from './metrics.ts';

export const DEFAULT_FIELD_MANAGER = 'serverlessapp-operator';
export const DEFAULT_USER_AGENT = `serverlessapp-operator/${packageVersion()}`;

/** A failed API call. `message` is the server's Status.message, which names the offending field. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason?: string;
  readonly body?: unknown;

  constructor(code: number, message: string, reason?: string, body?: unknown) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    if (reason !== undefined) this.reason = reason;
    if (body !== undefined) this.body = body;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.code === 404;
}

interface ObjectMeta {
  name: string;
  namespace?: string;
}

interface TypedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Partial<ObjectMeta>;
}

export interface ListResult<T> {
  items: T[];
  metadata: { resourceVersion: string; continue?: string };
}

interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
}

export class KubeClient {
  private readonly kc: KubeConfig;
  readonly fieldManager: string;
  private readonly userAgent: string;
  private readonly metrics: OperatorMetrics | undefined;
  private agent: { fingerprint: string; agent: http.Agent } | undefined;

  constructor(kc: KubeConfig, opts: { fieldManager?: string; userAgent?: string; metrics?: OperatorMetrics } = {}) {
    this.kc = kc;
    this.fieldManager = opts.fieldManager ?? DEFAULT_FIELD_MANAGER;
    this.userAgent = opts.userAgent ?? DEFAULT_USER_AGENT;
    this.metrics = opts.metrics;
  }

  /** The object, or undefined when it does not exist. */
  async get<T>(kind: ResourceKind, namespace: string | undefined, name: string): Promise<T | undefined> {
    try {
      return (await this.request({ method: 'GET', path: resourcePath(kind, namespace, name) })) as T;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list<T>(kind: ResourceKind, namespace?: string, opts: { labelSelector?: string; limit?: number; continue?: string } = {}): Promise<ListResult<T>> {
    const query = { labelSelector: opts.labelSelector, limit: opts.limit?.toString(), continue: opts.continue };
    const list = (await this.request({ method: 'GET', path: resourcePath(kind, namespace), query })) as Partial<ListResult<T>> & { items?: T[] | null };
    return { items: list.items ?? [], metadata: { resourceVersion: list.metadata?.resourceVersion ?? '', ...(list.metadata?.continue ? { continue: list.metadata.continue } : {}) } };
  }

  /**
   * Server-side apply with the operator's field manager: `obj` states every
   * field we own; fields we stop stating are removed, fields other managers
   * own are left alone. `kind` is only needed for kinds outside `Kinds`.
   */
  async apply<T>(obj: T, opts: { subresource?: 'status'; force?: boolean; dryRun?: boolean; kind?: ResourceKind; fieldManager?: string } = {}): Promise<T> {
    const o = obj as TypedObject;
    const kind = opts.kind ?? kindOf(o);
    const { name, namespace } = metaOf(o);
    return (await this.request({
      method: 'PATCH',
      path: resourcePath(kind, namespace, name, opts.subresource),
      // JSON is YAML, so the object goes as it is.
      contentType: 'application/apply-patch+yaml',
      body: { ...o, apiVersion: apiVersionOf(kind), kind: kind.kind },
      query: { fieldManager: opts.fieldManager ?? this.fieldManager, force: String(opts.force ?? true), dryRun: opts.dryRun ? 'All' : undefined },
    })) as T;
  }

  async create<T>(kind: ResourceKind, obj: T): Promise<T> {
    const { namespace } = metaOf(obj as TypedObject, false);
    return (await this.request({ method: 'POST', path: resourcePath(kind, namespace), body: obj, query: { fieldManager: this.fieldManager } })) as T;
  }

  /** Replaces the object; its metadata.resourceVersion makes a concurrent change fail with 409. */
  async update<T>(kind: ResourceKind, obj: T): Promise<T> {
    const { name, namespace } = metaOf(obj as TypedObject);
    return (await this.request({ method: 'PUT', path: resourcePath(kind, namespace, name), body: obj, query: { fieldManager: this.fieldManager } })) as T;
  }

  async mergePatch<T>(kind: ResourceKind, namespace: string | undefined, name: string, patch: object, opts: { subresource?: string } = {}): Promise<T> {
    return (await this.request({
      method: 'PATCH',
      path: resourcePath(kind, namespace, name, opts.subresource),
      contentType: 'application/merge-patch+json',
      body: patch,
      query: { fieldManager: this.fieldManager },
    })) as T;
  }

  /** Deletes the object; false when it was already gone. `uid` guards against deleting a successor with the same name. */
  async delete(kind: ResourceKind, namespace: string | undefined, name: string, opts: { propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'; uid?: string } = {}): Promise<boolean> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(opts.uid ? { preconditions: { uid: opts.uid } } : {}),
    };
    try {
      await this.request({ method: 'DELETE', path: resourcePath(kind, namespace, name), body });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Closes kept-alive connections (on shutdown). */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  private async request(spec: RequestSpec): Promise<unknown> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + spec.path);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, v);

    const options: https.RequestOptions = { headers: {} };
    await this.kc.applyToHTTPSOptions(options);
    // A proxy agent from the kubeconfig must stay; otherwise use our kept-alive one.
    if (!cluster.proxyUrl) options.agent = this.agentFor(url.protocol, options);
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const headers: http.OutgoingHttpHeaders = {
      ...(options.headers as http.OutgoingHttpHeaders),
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...(payload !== undefined ? { 'content-type': spec.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
    };

    let code = '<error>';
    try {
      const res = await send(url, { ...options, method: spec.method, headers }, payload);
      code = String(res.status);
      const body = parseBody(res.body);
      if (res.status >= 400) throw toApiError(res.status, body, res.body);
      return body;
    } finally {
      this.metrics?.restRequest(code, spec.method, url.host);
    }
  }

  private agentFor(protocol: string, tls: https.RequestOptions): http.Agent {
    const material = [tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.rejectUnauthorized, tls.servername, protocol].map((x) => (x === undefined ? '' : String(x))).join('\0');
    const fingerprint = createHash('sha256').update(material).digest('hex');
    if (this.agent?.fingerprint === fingerprint) return this.agent.agent;
    this.agent?.agent.destroy();
    const keepAlive = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets: 32 };
    const agent = protocol === 'http:'
      ? new http.Agent(keepAlive)
      : new https.Agent({
          ...keepAlive,
          ...pick(tls, ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']),
        });
    this.agent = { fingerprint, agent };
    return agent;
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

function send(url: URL, options: https.RequestOptions, payload: string | undefined): Promise<{ status: number; body: string }> {
  const transport = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${options.method} ${url.pathname}: no response within ${REQUEST_TIMEOUT_MS / 1000}s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toApiError(status: number, body: unknown, raw: string): ApiError {
  const s = (typeof body === 'object' && body !== null ? body : {}) as { kind?: string; message?: string; reason?: string };
  const message = s.message || raw.trim() || http.STATUS_CODES[status] || `HTTP ${status}`;
  return new ApiError(status, message, s.reason || undefined, body);
}

function kindOf(o: TypedObject): ResourceKind {
  const found = Object.values(Kinds).find((k) => apiVersionOf(k) === o.apiVersion && k.kind === o.kind);
  if (!found) throw new Error(`cannot apply ${o.apiVersion}/${o.kind}: not a kind the operator knows (pass opts.kind)`);
  return found;
}

function metaOf(o: TypedObject, needName = true): { name: string; namespace: string | undefined } {
  const name = o.metadata?.name ?? '';
  if (needName && !name) throw new Error(`${o.kind ?? 'object'} has no metadata.name`);
  return { name, namespace: o.metadata?.namespace };
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
