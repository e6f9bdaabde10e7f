// KubeClient's request path against servers on loopback: that every request
// (reads, lists, watches, the Lease) carries the same credentials and
// User-Agent and is counted, that failures are ApiErrors, and that TLS
// material, proxies and connection pools are used as the kubeconfig says.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiError, KubeClient, isNotFound } from './client.ts';
import { Informer } from './informer.ts';
import { Kinds } from '../util/kinds.ts';
import { RestConfig } from './kubeconfig.ts';
import { LeaderElector } from './leader-election.ts';
import { OperatorMetrics } from './metrics.ts';
import { DEFAULT_SHARE, NamespaceShare } from './namespace-share.ts';
import { systemClock } from './clock.ts';
import { reply } from '../testing/http.ts';
import { waitFor } from '../../test/support/wait.ts';

interface Seen {
  method: string;
  url: string;
  userAgent: string | undefined;
  authorization: string | undefined;
}

/** Answers lists, watches (held open) and Lease reads and writes; remembers every request. */
class FakeApiServer {
  readonly seen: Seen[] = [];
  readonly open = new Set<ServerResponse>();
  /** Overrides the answer: return true when handled. */
  handle: (req: IncomingMessage, res: ServerResponse) => boolean = () => false;
  #lease: Record<string, unknown> | undefined;
  #server: Server | undefined;

  async start(): Promise<string> {
    this.#server = createServer((req, res) => {
      this.seen.push({ method: req.method!, url: req.url!, userAgent: req.headers['user-agent'], authorization: req.headers.authorization });
      if (this.handle(req, res)) return;
      const url = new URL(req.url!, 'http://x');
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (url.searchParams.get('watch') === 'true') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
          this.open.add(res);
          res.on('close', () => this.open.delete(res));
          return;
        }
        if (url.pathname.includes('/leases')) {
          if (req.method === 'GET') return this.#lease ? reply(res, 200, this.#lease) : reply(res, 404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'leases "l" not found' });
          const lease = JSON.parse(body) as { metadata: Record<string, unknown> };
          this.#lease = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(this.seen.length) } };
          return reply(res, req.method === 'POST' ? 201 : 200, this.#lease);
        }
        reply(res, 200, { kind: 'ConfigMapList', metadata: { resourceVersion: '1' }, items: [] });
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }
}

async function requestCounts(metrics: OperatorMetrics): Promise<Record<string, number>> {
  const counted = await metrics.registry.getSingleMetric('rest_client_requests_total')!.get();
  return Object.fromEntries(counted.values.map((v) => [`${v.labels['method']} ${v.labels['code']}`, v.value]));
}

describe('KubeClient', () => {
  let api: FakeApiServer;
  let server: string;
  let client: KubeClient | undefined;
  let dir: string;

  beforeEach(async () => {
    api = new FakeApiServer();
    server = await api.start();
    dir = mkdtempSync(join(tmpdir(), 'client-test-'));
  });

  afterEach(async () => {
    client?.close();
    client = undefined;
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends reads, lists, watches and the Lease with one User-Agent and one credential, and counts them all', async () => {
    const metrics = new OperatorMetrics({ processMetrics: false });
    client = new KubeClient(new RestConfig({ server, token: { data: 'secret' } }), { metrics, userAgent: 'serverlessapp-operator/test' });
    const informer = new Informer(client, Kinds.ConfigMap, { namespaces: ['a'] });
    await informer.start();
    await waitFor('the watch', () => api.open.size === 1);
    const elector = new LeaderElector(client, { namespace: 'a', name: 'l', identity: 'me', leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 100 });
    let leading = false;
    void elector.run({ onStartedLeading: () => (leading = true), onStoppedLeading() {} });
    await waitFor('leadership', () => leading);
    await elector.stop();
    informer.stop();
    await client.get(Kinds.ConfigMap, 'a', 'x');

    assert.deepEqual(new Set(api.seen.map((s) => s.userAgent)), new Set(['serverlessapp-operator/test']));
    assert.deepEqual(new Set(api.seen.map((s) => s.authorization)), new Set(['Bearer secret']));
    const counts = await requestCounts(metrics);
    assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), api.seen.length, 'every request is counted');
    assert.equal(counts['GET 404'], 1, 'the first Lease read');
    assert.equal(counts['POST 201'], 1, 'the Lease created');
    assert.ok((counts['PUT 200'] ?? 0) >= 1, 'the Lease released');
    assert.ok(api.seen.some((s) => s.url.includes('watch=true')), 'the watch went the same way');
  });

  it('rejects a refused watch with an ApiError that carries the code and reason', async () => {
    api.handle = (_req, res) => {
      reply(res, 410, { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (5)' });
      return true;
    };
    client = new KubeClient(new RestConfig({ server }));
    const watch = client.watch(Kinds.ConfigMap, 'a', { resourceVersion: '1', timeoutSeconds: 10, signal: new AbortController().signal });
    await assert.rejects(watch, (err: unknown) => err instanceof ApiError && err.code === 410 && err.reason === 'Expired' && err.message === 'too old resource version: 1 (5)');
  });

  it('reports the CPU of writing a request and decoding its answer to the namespace of the object it is about, none for a cluster-scoped one', async () => {
    // An answer large enough that decoding it costs measurable CPU (the object as the API server returns it).
    const big = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'tenant' }, data: Object.fromEntries(Array.from({ length: 4_000 }, (_, i) => [`k${i}`, 'v'.repeat(200)])) };
    api.handle = (req, res) => {
      req.resume();
      req.on('end', () => reply(res, 200, req.url!.includes('/namespaces/tenant/') ? big : { apiVersion: 'serverlessapp.io/v1alpha1', kind: 'HostClaim', metadata: { name: 'h' } }));
      return true;
    };
    const charged = new Map<string, number>();
    const share = new NamespaceShare(DEFAULT_SHARE, systemClock, { hooks: { onCharge: (namespace, ms) => charged.set(namespace, (charged.get(namespace) ?? 0) + ms) } });
    client = new KubeClient(new RestConfig({ server }), { measure: (namespace, fn) => share.measure(namespace, fn) });
    await client.apply(big);
    await client.get(Kinds.ConfigMap, 'tenant', 'x');
    await client.get(Kinds.HostClaim, undefined, 'h');
    assert.deepEqual([...charged.keys()], ['tenant'], 'only the namespaced requests are charged, to their namespace');
    assert.ok(charged.get('tenant')! > 0, `writing and decoding about 1.6 MiB twice costs CPU: ${charged.get('tenant')} ms`);
  });

  it('reports a missing object as undefined on get and as isNotFound elsewhere', async () => {
    api.handle = (_req, res) => {
      reply(res, 404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'configmaps "x" not found' });
      return true;
    };
    client = new KubeClient(new RestConfig({ server }));
    assert.equal(await client.get(Kinds.ConfigMap, 'a', 'x'), undefined);
    await assert.rejects(client.mergePatch(Kinds.ConfigMap, 'a', 'x', {}), (err: unknown) => isNotFound(err));
  });

  it('reads a rotated token at once after the server answered 401', async () => {
    writeFileSync(join(dir, 'token'), 'old');
    api.handle = (req, res) => {
      if (req.headers.authorization === 'Bearer old') {
        reply(res, 401, { kind: 'Status', code: 401, reason: 'Unauthorized', message: 'Unauthorized' });
        return true;
      }
      return false;
    };
    client = new KubeClient(new RestConfig({ server, token: { file: join(dir, 'token') } }));
    writeFileSync(join(dir, 'token'), 'new');
    await assert.rejects(client.list(Kinds.ConfigMap, 'a'), (err: unknown) => err instanceof ApiError && err.code === 401);
    await client.list(Kinds.ConfigMap, 'a');
    assert.deepEqual(api.seen.map((s) => s.authorization), ['Bearer old', 'Bearer new']);
  });

  it('reuses kept-alive connections until told to close the idle ones', async () => {
    const ports: number[] = [];
    api.handle = (req) => {
      ports.push(req.socket.remotePort!);
      return false;
    };
    client = new KubeClient(new RestConfig({ server }));
    await client.list(Kinds.ConfigMap, 'a');
    await client.list(Kinds.ConfigMap, 'a');
    client.closeIdleConnections();
    await client.list(Kinds.ConfigMap, 'a');
    assert.equal(ports[1], ports[0], 'kept alive');
    assert.notEqual(ports[2], ports[1], 'a fresh connection');
  });

  it('keeps watches out of the connection pool, so requests still flow with 40 watches open', async () => {
    client = new KubeClient(new RestConfig({ server }));
    const stop = new AbortController();
    const watches = Array.from({ length: 40 }, () => client!.watch(Kinds.ConfigMap, 'a', { resourceVersion: '1', timeoutSeconds: 60, signal: stop.signal }));
    await Promise.all(watches);
    assert.equal(api.open.size, 40);
    const listed = await client.list(Kinds.ConfigMap, 'a', { signal: AbortSignal.timeout(2_000) });
    assert.deepEqual(listed.items, []);
    stop.abort();
    await waitFor('the watches to close', () => api.open.size === 0);
  });

  it('ends a watch stream when its signal aborts', async () => {
    client = new KubeClient(new RestConfig({ server }));
    const stop = new AbortController();
    const stream = await client.watch(Kinds.ConfigMap, 'a', { resourceVersion: '1', timeoutSeconds: 60, signal: stop.signal });
    await waitFor('the watch', () => api.open.size === 1);
    for (const res of api.open) res.write('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}}\n');
    const received: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) received.push(Buffer.from(chunk).toString());
    })();
    await waitFor('the bookmark', () => received.length === 1);
    stop.abort();
    await assert.rejects(reading, 'reading an aborted stream fails');
    await waitFor('the server to see the close', () => api.open.size === 0);
  });

  it('goes through the kubeconfig\'s proxy-url', async () => {
    const proxied: string[] = [];
    const proxy = createServer((req, res) => {
      proxied.push(`${req.method} ${req.url}`);
      const upstream = httpRequest(req.url!, { method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      client = new KubeClient(new RestConfig({ server, proxyUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` }));
      await client.list(Kinds.ConfigMap, 'a');
      assert.deepEqual(proxied, [`GET ${server}/api/v1/namespaces/a/configmaps`]);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });
});

describe('KubeClient over TLS', function () {
  this.timeout(20_000);
  let dir: string;
  const pem = (name: string) => readFileSync(join(dir, name), 'utf8');

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'client-tls-'));
    const openssl = (args: string[]) => promisify(execFile)('openssl', args, { cwd: dir });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'];
    await openssl(['req', '-x509', ...ec, '-subj', '/CN=test-ca', '-addext', 'basicConstraints=critical,CA:TRUE', '-keyout', 'ca.key', '-out', 'ca.crt']);
    await openssl(['req', '-x509', '-CA', 'ca.crt', '-CAkey', 'ca.key', ...ec, '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', 'server.key', '-out', 'server.crt']);
    await openssl(['req', '-x509', '-CA', 'ca.crt', '-CAkey', 'ca.key', ...ec, '-subj', '/CN=operator', '-keyout', 'client.key', '-out', 'client.crt']);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('verifies the server with the CA and presents the client certificate, also through a CONNECT proxy', async () => {
    const api = createTlsServer({ key: pem('server.key'), cert: pem('server.crt'), ca: pem('ca.crt'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
      reply(res, 200, { kind: 'ConfigMap', metadata: { name: String(peer.subject?.CN) } });
    });
    const tunnels: string[] = [];
    const proxy = createServer();
    proxy.on('connect', (req: IncomingMessage, socket: import('node:net').Socket) => {
      tunnels.push(req.url!);
      const [host, port] = req.url!.split(':');
      const upstream = connect(Number(port), host!, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await Promise.all([api, proxy].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
    const server = `https://127.0.0.1:${(api.address() as AddressInfo).port}`;
    const tls = { ca: { file: join(dir, 'ca.crt') }, cert: { file: join(dir, 'client.crt') }, key: { file: join(dir, 'client.key') } };
    const direct = new KubeClient(new RestConfig({ server, ...tls }));
    const tunnelled = new KubeClient(new RestConfig({ server, ...tls, proxyUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` }));
    const untrusting = new KubeClient(new RestConfig({ server, cert: tls.cert, key: tls.key }));
    try {
      assert.deepEqual(await direct.get(Kinds.ConfigMap, 'a', 'x'), { kind: 'ConfigMap', metadata: { name: 'operator' } });
      assert.deepEqual(await tunnelled.get(Kinds.ConfigMap, 'a', 'x'), { kind: 'ConfigMap', metadata: { name: 'operator' } });
      assert.deepEqual(tunnels, [`127.0.0.1:${(api.address() as AddressInfo).port}`]);
      await assert.rejects(untrusting.get(Kinds.ConfigMap, 'a', 'x'), /self-signed certificate in certificate chain|unable to verify|unable to get local issuer/);
    } finally {
      for (const c of [direct, tunnelled, untrusting]) c.close();
      for (const s of [api, proxy]) {
        s.closeAllConnections();
        s.close();
      }
    }
  });

  it('opens parallel connections with one TLS context: the CA and the client certificate are parsed once, not per connection', async () => {
    const api = createTlsServer({ key: pem('server.key'), cert: pem('server.crt'), ca: pem('ca.crt'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      // Held a moment, so the requests cannot share a connection.
      setImmediate(() => reply(res, 200, { kind: 'ConfigMap', metadata: { name: String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN) } }));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    const connections = new Set<unknown>();
    api.on('secureConnection', (socket) => connections.add(socket));
    const tlsModule = createRequire(import.meta.url)('node:tls') as typeof import('node:tls');
    const original = tlsModule.createSecureContext;
    let contexts = 0;
    tlsModule.createSecureContext = (options) => { contexts++; return original(options); };
    syncBuiltinESMExports();
    const client = new KubeClient(new RestConfig({ server: `https://127.0.0.1:${(api.address() as AddressInfo).port}`, ca: { file: join(dir, 'ca.crt') }, cert: { file: join(dir, 'client.crt') }, key: { file: join(dir, 'client.key') } }));
    try {
      const got = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((n) => client.get<{ metadata: { name: string } }>(Kinds.ConfigMap, n, 'x')));
      assert.deepEqual(got.map((o) => o?.metadata.name), ['operator', 'operator', 'operator', 'operator', 'operator']);
      assert.equal(connections.size, 5);
      assert.equal(contexts, 1);
    } finally {
      tlsModule.createSecureContext = original;
      syncBuiltinESMExports();
      client.close();
      api.closeAllConnections();
      api.close();
    }
  });
});
