// The stand-ins' own small REST client: node:https with one keep-alive agent,
// so thousands of status writes reuse a few TLS connections, and a User-Agent
// and field manager of our own, so tests can tell the stand-ins' writes from
// the operator's. Credentials come from @kubernetes/client-node's KubeConfig.

import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    managedFields?: unknown;
  };
  spec?: any;
  status?: any;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Resource {
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: any;
}

export class ApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  constructor(status: number, message: string, reason?: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404;
}

/** `/apis/<group>/<version>[/namespaces/<ns>]/<plural>[/<name>]` */
export function resourcePath(r: Resource, namespace?: string, name?: string): string {
  const ns = r.namespaced && namespace ? `/namespaces/${namespace}` : '';
  return `/apis/${r.group}/${r.version}${ns}/${r.plural}${name ? `/${name}` : ''}`;
}

interface Connection {
  base: URL;
  headers: Record<string, string>;
  agent: http.Agent;
  watchAgent: http.Agent;
}

export class KubeClient {
  readonly userAgent: string;
  readonly fieldManager: string;
  private readonly kubeConfig: KubeConfig;
  private connection: Promise<Connection> | undefined;
  private readonly maxSockets: number;

  constructor(kubeConfig: KubeConfig, name: string, maxSockets = 16) {
    this.kubeConfig = kubeConfig;
    this.userAgent = name;
    this.fieldManager = name;
    this.maxSockets = maxSockets;
  }

  get(path: string): Promise<any> {
    return this.request('GET', path);
  }

  create(path: string, obj: unknown): Promise<any> {
    return this.request('POST', `${path}?fieldManager=${this.fieldManager}`, obj, 'application/json');
  }

  /** Server-side apply, taking ownership of every field in `obj` (force: we are the only writer of them). */
  apply(path: string, obj: unknown): Promise<any> {
    return this.request('PATCH', `${path}?fieldManager=${this.fieldManager}&force=true`, obj, 'application/apply-patch+yaml');
  }

  /**
   * Server-side applies `obj` to the status subresource of `path`; resolves to
   * undefined if the object is gone (deleted since we read it).
   */
  async applyStatus(path: string, obj: unknown): Promise<any> {
    try {
      return await this.apply(`${path}/status`, obj);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  mergePatch(path: string, patch: unknown): Promise<any> {
    return this.request('PATCH', `${path}?fieldManager=${this.fieldManager}`, patch, 'application/merge-patch+json');
  }

  delete(path: string): Promise<any> {
    return this.request('DELETE', path);
  }

  async request(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const c = await this.connect();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = send(c, c.agent, method, path, {
        ...c.headers,
        'User-Agent': this.userAgent,
        Accept: 'application/json',
        ...(payload !== undefined ? { 'Content-Type': contentType ?? 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) } : {}),
      });
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const parsed = parseJson(text);
          if ((res.statusCode ?? 500) >= 300) {
            reject(new ApiError(res.statusCode ?? 500, `${method} ${path}: ${res.statusCode} ${parsed?.message ?? text}`, parsed?.reason));
          } else {
            resolve(parsed);
          }
        });
      });
      req.end(payload);
    });
  }

  /**
   * Streams watch events for `path` from `resourceVersion` until the server ends
   * the watch (resolves), the connection fails (rejects) or `signal` aborts.
   */
  async watch(path: string, resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const c = await this.connect();
    const timeoutSeconds = 240 + Math.floor(Math.random() * 120);
    const query = `watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${timeoutSeconds}`;
    const sep = path.includes('?') ? '&' : '?';
    await new Promise<void>((resolve, reject) => {
      if (signal.aborted) return resolve();
      const req = send(c, c.watchAgent, 'GET', `${path}${sep}${query}`, { ...c.headers, 'User-Agent': this.userAgent, Accept: 'application/json' });
      const abort = () => { req.destroy(); resolve(); };
      signal.addEventListener('abort', abort, { once: true });
      let failure: Error | undefined;
      const done = (err?: Error) => {
        signal.removeEventListener('abort', abort);
        if ((failure ?? err) && !signal.aborted) reject(failure ?? err); else resolve();
      };
      req.setTimeout((timeoutSeconds + 30) * 1000, () => req.destroy(new Error('watch went silent')));
      req.on('error', done);
      req.on('close', () => done());
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => done(new ApiError(res.statusCode ?? 500, `watch ${path}: ${Buffer.concat(chunks).toString('utf8')}`)));
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl);
            buffered = buffered.slice(nl + 1);
            const event = parseJson(line);
            if (event?.type) {
              try {
                onEvent(event);
              } catch (err) {
                failure = err as Error;
                req.destroy();
                return;
              }
            }
          }
        });
        res.on('end', () => done());
        res.on('error', done);
        res.on('aborted', () => done(new Error('watch aborted by the server')));
      });
      req.end();
    });
  }

  /** Closes idle keep-alive sockets so the process can exit. */
  async close(): Promise<void> {
    if (!this.connection) return;
    const c = await this.connection.catch(() => undefined);
    c?.agent.destroy();
    c?.watchAgent.destroy();
    this.connection = undefined;
  }

  private connect(): Promise<Connection> {
    this.connection ??= this.openConnection().catch((err) => {
      this.connection = undefined;
      throw err;
    });
    return this.connection;
  }

  private async openConnection(): Promise<Connection> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const opts: https.RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(opts);
    const base = new URL(cluster.server);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
    if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    const tls = { ca: opts.ca, cert: opts.cert, key: opts.key, ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}) };
    const secure = base.protocol === 'https:';
    const make = (maxSockets: number) => secure
      ? new https.Agent({ ...tls, keepAlive: true, maxSockets })
      : new http.Agent({ keepAlive: true, maxSockets });
    return { base, headers, agent: make(this.maxSockets), watchAgent: make(Infinity) };
  }
}

function send(c: Connection, agent: http.Agent, method: string, path: string, headers: Record<string, string>): http.ClientRequest {
  const url = new URL(c.base.pathname.replace(/\/$/, '') + path, c.base);
  const lib = url.protocol === 'https:' ? https : http;
  return lib.request(url, { method, headers, agent });
}

function parseJson(text: string): any {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
