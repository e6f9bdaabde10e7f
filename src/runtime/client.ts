// The one way to the API server: every request the operator makes (reads,
// list and watch for the informers, the leader Lease, applies, status and
// events) goes through KubeClient, so all of them present the same
// credentials and User-Agent, fail with the same ApiError and are counted in
// rest_client_requests_total. Plain JSON in and out, no generated model
// classes, so CRDs without typings (KServe) are as easy as core kinds.
// Credentials come from the RestConfig on every request, so rotated tokens are
// picked up. Connections are kept alive in a pool of 32; watches and the
// leader Lease use connections outside it, so a held-open watch never takes a
// pool slot and a lease renewal never waits behind a burst of writes.

import { readFileSync } from 'node:fs';
import type { Agent, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import { Kinds, apiVersionOf, resourcePath, type ResourceKind } from '../util/kinds.ts';
import { toRestConfig, type KubeConfigSource, type RestConfig, type TlsMaterial } from './kubeconfig.ts';
import { readList, type ListItems } from './json-scan.ts';
import type { OperatorMetrics } from './metrics.ts';
import { http, https } from './node-http.ts';

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

/**
 * A write the API server refused for what it says, so the same write would be refused again (the
 * operator shows it on the app; `kubectl sapp plan` shows it as refused): a 4xx other than "not found",
 * "too many requests" and optimistic-lock conflicts, the request itself being wrong. And one 500:
 * server-side apply answers "failed to create typed patch object" when the object does not fit the
 * kind's schema (a field such as env[].valueFrom.SecretKeyRef: the structured-merge type converter
 * fails, k8s.io/apimachinery managedfields/internal/structuredmerge.go, and the handler returns that
 * plain error as an internal error). Retrying sends the same object again.
 */
export function isRejection(err: unknown): err is ApiError {
  if (!(err instanceof ApiError)) return false;
  if (err.code === 500) return err.message.includes('failed to create typed patch object');
  return err.code >= 400 && err.code < 500 && ![404, 408, 409, 429].includes(err.code);
}

export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.code === 404;
}

/** A write refused because its namespace is being deleted: everything in it is going away. */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!(err instanceof ApiError) || err.code !== 403) return false;
  const causes = (err.body as { details?: { causes?: Array<{ reason?: string }> } } | undefined)?.details?.causes ?? [];
  return causes.some((c) => c.reason === 'NamespaceTerminating');
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

/** Per-request options of the methods that a watch or the leader elector needs. */
export interface RequestOptions {
  /** Aborts the request (and a watch's stream). */
  signal?: AbortSignal;
  /** On a connection outside the shared pool: for requests that must never queue behind writes (the leader Lease). */
  unpooled?: boolean;
}

interface RequestSpec extends RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  /** A watch: no idle timeout (the informer's watchdog judges the stream), its own connection. */
  stream?: boolean;
  /** The namespace of the object the request is about: the one its main-thread cost is charged to (measure). */
  namespace?: string | undefined;
}

/** A create's or update's options beside the request's. */
interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
}

const POOL_SIZE = 32;
const REQUEST_TIMEOUT_MS = 30_000;

export class KubeClient {
  /** Where requests go and with which credentials. */
  readonly config: RestConfig;
  readonly fieldManager: string;
  private readonly userAgent: string;
  private readonly metrics: OperatorMetrics | undefined;
  private readonly measure: (<T>(namespace: string, fn: () => T) => T) | undefined;
  /** Connection pools for the current TLS material; replaced when it changes (a rotated client certificate). */
  private agents: { tls: TlsMaterial; pooled: Agent; unpooled: Agent } | undefined;

  /** `config`: a RestConfig (kubeconfig.ts), or a client-node KubeConfig from the tests, demo and benchmarks. */
  /**
   * `measure`: runs writing a request about a namespaced object, and decoding its answer, charged to that
   * object's namespace (NamespaceShare.measure: the writes a namespace's apps cause are its work). Lists
   * and watches read by the informers are charged per object there.
   */
  constructor(config: KubeConfigSource, opts: { fieldManager?: string; userAgent?: string; metrics?: OperatorMetrics; measure?: <T>(namespace: string, fn: () => T) => T } = {}) {
    this.config = toRestConfig(config);
    this.fieldManager = opts.fieldManager ?? DEFAULT_FIELD_MANAGER;
    this.userAgent = opts.userAgent ?? DEFAULT_USER_AGENT;
    this.metrics = opts.metrics;
    this.measure = opts.measure;
  }

  /** The server's /version (which any user may read): its gitVersion, e.g. v1.35.4. */
  async serverVersion(): Promise<string | undefined> {
    const v = (await this.request({ method: 'GET', path: '/version' })) as { gitVersion?: string } | undefined;
    return v?.gitVersion;
  }

  /** The object, or undefined when it does not exist. */
  async get<T>(kind: ResourceKind, namespace: string | undefined, name: string, opts: RequestOptions = {}): Promise<T | undefined> {
    try {
      return (await this.request({ ...opts, method: 'GET', path: resourcePath(kind, namespace, name), namespace })) as T;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** `resourceVersion: '0'`: any version the API server has at hand, served from its watch cache (no quorum read of etcd); for reads that may be a moment old. */
  async list<T>(kind: ResourceKind, namespace?: string, opts: { labelSelector?: string; limit?: number; continue?: string; resourceVersion?: '0'; signal?: AbortSignal } = {}): Promise<ListResult<T>> {
    const query = { labelSelector: opts.labelSelector, limit: opts.limit?.toString(), continue: opts.continue, resourceVersion: opts.resourceVersion };
    const list = (await this.request({ method: 'GET', path: resourcePath(kind, namespace), query, signal: opts.signal, namespace })) as Partial<ListResult<T>> & { items?: T[] | null };
    return { items: list.items ?? [], metadata: { resourceVersion: list.metadata?.resourceVersion ?? '', ...(list.metadata?.continue ? { continue: list.metadata.continue } : {}) } };
  }

  /**
   * A list read as a stream: `items.bytes` gets each object's bytes as soon as it is complete, so the
   * client holds one object at a time, never the page (a page of large objects read whole can be
   * past V8's largest string, about 512 MiB, and fails); a page that ends within
   * `items.wholeBelowBytes` is parsed at once and its objects go to `items.parsed` (json-scan.ts readList).
   */
  async listEach(kind: ResourceKind, namespace: string | undefined, opts: { labelSelector?: string; limit?: number; continue?: string; signal?: AbortSignal }, items: ListItems | ((item: Buffer) => void)): Promise<ListResult<never>['metadata']> {
    const query = { labelSelector: opts.labelSelector, limit: opts.limit?.toString(), continue: opts.continue };
    const res = await this.open({ method: 'GET', path: resourcePath(kind, namespace), query, signal: opts.signal });
    const rest = (await readList(res, items)) as { metadata?: { resourceVersion?: string; continue?: string } };
    return { resourceVersion: rest.metadata?.resourceVersion ?? '', ...(rest.metadata?.continue ? { continue: rest.metadata.continue } : {}) };
  }

  /**
   * Opens a watch from `resourceVersion`, with bookmarks, and resolves with
   * its body (newline-delimited watch events) once the server accepted it;
   * a refusal (410 Gone, 403, ...) rejects with an ApiError. The stream ends
   * when the server closes it (timeoutSeconds) or `signal` aborts.
   */
  async watch(kind: ResourceKind, namespace: string | undefined, opts: { resourceVersion: string; timeoutSeconds: number; labelSelector?: string; signal: AbortSignal }): Promise<AsyncIterable<Uint8Array>> {
    const query = {
      watch: 'true',
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(opts.timeoutSeconds),
      labelSelector: opts.labelSelector,
    };
    return this.open({ method: 'GET', path: resourcePath(kind, namespace), query, signal: opts.signal, stream: true });
  }

  /**
   * Server-side apply with the operator's field manager: `obj` states every
   * field we own; fields we stop stating are removed, fields other managers
   * own are left alone. `kind` is only needed for kinds outside `Kinds`.
   */
  async apply<T>(obj: T, opts: { subresource?: 'status'; force?: boolean; dryRun?: boolean; kind?: ResourceKind; fieldManager?: string; signal?: AbortSignal } = {}): Promise<T> {
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
      signal: opts.signal, namespace,
    })) as T;
  }

  /**
   * `dryRun`: admission runs and the object is returned as it would be stored, but nothing is (kubectl sapp plan).
   * `fieldValidation: 'Strict'`: an unknown or duplicate field is refused (400), as `kubectl apply` asks since 1.27.
   */
  async create<T>(kind: ResourceKind, obj: T, opts: RequestOptions & WriteOptions = {}): Promise<T> {
    const { namespace } = metaOf(obj as TypedObject, false);
    const { dryRun, fieldValidation, ...rest } = opts;
    return (await this.request({ ...rest, method: 'POST', path: resourcePath(kind, namespace), body: obj, query: { fieldManager: this.fieldManager, dryRun: dryRun ? 'All' : undefined, fieldValidation }, namespace })) as T;
  }

  /** Replaces the object; its metadata.resourceVersion makes a concurrent change fail with 409. Options as create's. */
  async update<T>(kind: ResourceKind, obj: T, opts: RequestOptions & WriteOptions = {}): Promise<T> {
    const { name, namespace } = metaOf(obj as TypedObject);
    const { dryRun, fieldValidation, ...rest } = opts;
    return (await this.request({ ...rest, method: 'PUT', path: resourcePath(kind, namespace, name), body: obj, query: { fieldManager: this.fieldManager, dryRun: dryRun ? 'All' : undefined, fieldValidation }, namespace })) as T;
  }

  async mergePatch<T>(kind: ResourceKind, namespace: string | undefined, name: string, patch: object, opts: { subresource?: string; signal?: AbortSignal } = {}): Promise<T> {
    return (await this.request({
      method: 'PATCH',
      path: resourcePath(kind, namespace, name, opts.subresource),
      contentType: 'application/merge-patch+json',
      body: patch,
      query: { fieldManager: this.fieldManager },
      signal: opts.signal, namespace,
    })) as T;
  }

  /** Deletes the object; false when it was already gone. `uid` guards against deleting a successor with the same name. */
  async delete(kind: ResourceKind, namespace: string | undefined, name: string, opts: { propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'; uid?: string; dryRun?: boolean; signal?: AbortSignal } = {}): Promise<boolean> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(opts.dryRun ? { dryRun: ['All'] } : {}),
      ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
      ...(opts.uid ? { preconditions: { uid: opts.uid } } : {}),
    };
    try {
      await this.request({ method: 'DELETE', path: resourcePath(kind, namespace, name), body, signal: opts.signal, namespace });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Closes kept-alive connections that are idle, so the next requests open
   * fresh ones. After a watch went silent or a request timed out, the path to
   * the server may have dropped every connection without a word (a NAT or load
   * balancer that forgot them), and an idle one would hang the next request.
   */
  closeIdleConnections(): void {
    for (const agent of [this.agents?.pooled, this.agents?.unpooled]) {
      for (const sockets of Object.values(agent?.freeSockets ?? {})) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  /** Closes kept-alive connections and open watches (on shutdown). */
  close(): void {
    this.agents?.pooled.destroy();
    this.agents?.unpooled.destroy();
    this.agents = undefined;
  }

  /** A request whose JSON answer is read whole. */
  private async request(spec: RequestSpec): Promise<unknown> {
    const res = await this.open(spec);
    const chunks = await readChunks(res);
    return this.metered(spec.namespace, () => parseBody(Buffer.concat(chunks).toString('utf8')));
  }

  /** Runs `fn`, a synchronous piece of a request about `namespace`'s object, charged to it (measure). */
  private metered<T>(namespace: string | undefined, fn: () => T): T {
    return namespace && this.measure ? this.measure(namespace, fn) : fn();
  }

  /**
   * Sends the request and resolves with the response once its status is
   * known: a 2xx response still to be read, or an ApiError. Counted in
   * rest_client_requests_total when the status arrives (or the request fails).
   */
  private async open(spec: RequestSpec): Promise<IncomingMessage> {
    const url = new URL(this.config.server + spec.path);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, v);
    let code = '<error>';
    try {
      const creds = await this.config.credentials();
      // Outside the charge: a new TLS context (after a certificate rotation) is no namespace's work.
      const agent = this.agentFor(url.protocol, creds.tls, spec.stream || spec.unpooled);
      const res = await this.metered(spec.namespace, () => {
        const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
        const headers: OutgoingHttpHeaders = {
          accept: 'application/json',
          'user-agent': this.userAgent,
          ...(creds.authorization ? { authorization: creds.authorization } : {}),
          ...(payload !== undefined ? { 'content-type': spec.contentType ?? 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        };
        const timeout = spec.stream ? undefined : { ms: REQUEST_TIMEOUT_MS, then: () => this.closeIdleConnections() };
        return send(url, { method: spec.method, headers, agent, signal: spec.signal }, payload, timeout);
      });
      code = String(res.statusCode);
      if (res.statusCode! >= 400) {
        // A rotated token or an expired exec credential: the next request reads them afresh.
        if (res.statusCode === 401) this.config.invalidate();
        const raw = await readBody(res);
        throw toApiError(res.statusCode!, parseBody(raw), raw);
      }
      return res;
    } finally {
      this.metrics?.restRequest(code, spec.method, url.host);
    }
  }

  private agentFor(protocol: string, tls: TlsMaterial, unpooled: boolean | undefined): Agent {
    if (this.agents?.tls !== tls) {
      this.close();
      const proxy = this.config.proxyUrl;
      // One TLS context for every connection: without it each connection parses the CA and the client
      // certificate again (about 1 ms of this thread each; a plan opens a dozen at once).
      const secureContext = protocol === 'http:' ? undefined : createSecureContext({ ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert ? { cert: tls.cert } : {}), ...(tls.key ? { key: tls.key } : {}) });
      const make = (maxSockets: number): Agent => {
        const options = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets, ...(proxy ? { proxyEnv: { HTTP_PROXY: proxy, HTTPS_PROXY: proxy } } : {}) };
        return protocol === 'http:' ? new http.Agent(options) : new https.Agent({ ...options, ...tls, secureContext });
      };
      this.agents = { tls, pooled: make(POOL_SIZE), unpooled: make(Infinity) };
    }
    return unpooled ? this.agents.unpooled : this.agents.pooled;
  }
}

/** Resolves at the response's status line; `timeout` bounds any silence on the socket until the body has arrived. */
function send(url: URL, options: HttpsRequestOptions, payload: string | undefined, timeout: { ms: number; then: () => void } | undefined): Promise<IncomingMessage> {
  const transport = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = transport.request(url, options, resolve);
    if (timeout) {
      req.setTimeout(timeout.ms, () => {
        req.destroy(new Error(`${options.method} ${url.pathname}: no response within ${timeout.ms / 1000}s`));
        timeout.then();
      });
    }
    req.on('error', reject);
    req.end(payload);
  });
}

async function readChunks(res: IncomingMessage): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return chunks;
}

async function readBody(res: IncomingMessage): Promise<string> {
  return Buffer.concat(await readChunks(res)).toString('utf8');
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

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
