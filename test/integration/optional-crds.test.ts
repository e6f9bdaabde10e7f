// A cluster without KServe or Istio: the operator starts, container apps run,
// and apps that need the missing kinds say so (Ready=False KServeNotInstalled /
// IstioNotInstalled, naming the kind) until it is installed, when they are
// picked up without a restart. The rig has every CRD, so the operator talks to
// it through a loopback proxy that answers 404 for the KServe and Istio API
// groups while they are "not installed", as an API server without their CRDs does.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { Kinds } from '../../src/util/kinds.ts';
import { app, applyApp, condition, readyTrue, userClient, waitForApp } from '../support/apps.ts';
import { freshNamespace, testEnv } from '../support/cluster.ts';
import { startOperator, type RunningOperator } from '../support/operator.ts';
import { SETTLE_MS } from '../support/wait.ts';

const HIDDEN = ['/apis/serving.kserve.io/', '/apis/networking.istio.io/'];

/** Forwards to the API server with the admin's credentials; 404 for the hidden groups while `hidden`. */
async function hidingProxy(): Promise<{ kubeConfig: KubeConfig; reveal(): void; stop(): Promise<void> }> {
  const admin = testEnv().kubeConfig();
  const upstream = new URL(admin.getCurrentCluster()!.server);
  const tls: https.RequestOptions = {};
  await admin.applyToHTTPSOptions(tls);
  let hidden = true;
  const server = http.createServer((req, res) => {
    if (hidden && HIDDEN.some((p) => req.url?.startsWith(p))) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'the server could not find the requested resource' }));
      return;
    }
    const { host: _h, ...headers } = req.headers;
    const out = https.request({ ...tls, host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...headers, ...(tls.headers as object) } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    // Plain HTTP on loopback (client-node wants skipTLSVerify said for that); the proxy speaks TLS to the API server.
    clusters: [{ name: 'proxy', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'proxy' }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
    currentContext: 'proxy',
  });
  return {
    kubeConfig,
    reveal: () => { hidden = false; },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a cluster without KServe or Istio CRDs (integration)', function () {
  this.timeout(600_000);
  let proxy: Awaited<ReturnType<typeof hidingProxy>>;
  let op: RunningOperator;
  let ns: string;
  const reason = (a: ServerlessApp) => condition(a, 'Ready')?.reason;

  before(async () => {
    proxy = await hidingProxy();
    ns = await freshNamespace('no-kserve');
    op = await startOperator({}, { kubeConfig: proxy.kubeConfig });
  });
  after(async () => {
    await op?.stop();
    await proxy?.stop();
  });

  it('starts, and runs container apps', async () => {
    assert.ok(op.manager.isLeader(), 'the controllers started: no missing CRD held them back');
    await applyApp(app(ns, 'web', { container: { image: 'ghcr.io/acme/web:1' } }));
    await waitForApp(ns, 'web', readyTrue, 'container app Ready', 120_000);
  });

  it('reports what a model app and an app with ingress need, naming the kind, and picks them up once installed', async () => {
    await applyApp(app(ns, 'iris', { model: { format: { name: 'sklearn' }, storageUri: 'gs://models/iris/v1' } }));
    await applyApp(app(ns, 'routed', { container: { image: 'ghcr.io/acme/routed:1' }, ingress: { hosts: [`routed.${ns}.example.com`], gateways: ['istio-system/public'] } }));
    const model = await waitForApp(ns, 'iris', (a) => reason(a) === 'KServeNotInstalled', 'KServeNotInstalled');
    assert.match(condition(model, 'Ready')!.message, /^spec\.model: needs KServe, but this cluster does not serve inferenceservices\.serving\.kserve\.io\/v1beta1/);
    const routed = await waitForApp(ns, 'routed', (a) => reason(a) === 'IstioNotInstalled', 'IstioNotInstalled');
    assert.match(condition(routed, 'Ready')!.message, /^spec\.ingress: needs Istio, .*virtualservices\.networking\.istio\.io\/v1/);
    assert.equal(await userClient().get(Kinds.InferenceService, ns, 'iris'), undefined, 'nothing written for it');

    proxy.reveal();
    await waitForApp(ns, 'routed', readyTrue, 'the app with ingress Ready once Istio is "installed"', 120_000);
    assert.ok(await userClient().get(Kinds.VirtualService, ns, 'routed-routes'));
    await waitForApp(ns, 'iris', (a) => reason(a) !== 'KServeNotInstalled', 'the model app picked up once KServe is "installed"', SETTLE_MS);
    assert.ok(await userClient().get(Kinds.InferenceService, ns, 'iris'));
  });
});
