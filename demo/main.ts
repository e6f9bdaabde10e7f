// `npm run demo [-- --keep] [--router istio|gateway-api]`: the whole story on a laptop in one command. Starts
// the environment (environment.ts), tells the story (story.ts), then stops
// everything, or with --keep stays in the foreground serving the operator and
// the stand-in until Ctrl-C. One demo at a time: a second one says where the
// first one is instead of starting another control plane on a 2-core laptop.
// The story, steps a) to i): two apps Ready, a canary at 20%, a header route,
// a promotion, a rollback, automated steps gated by a Prometheus check, a
// model's failed warmup and its retry, then a scale window with a lead time
// that prewarms, opens and closes. --router picks the operator's router, as
// its own --router flag does: the story is the same, shown through the
// VirtualService or the HTTPRoute.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeFailure, EnvtestError } from '../test/envtest/errors.ts';
import { startEnvironment, type DemoEnvironment } from './environment.ts';
import { DEMO_ROUTERS, type DemoRouter } from './gateway.ts';
import { runStory } from './story.ts';
import { proxyConfig, type ProxyIdentity } from '../test/support/envoy-config.ts';

const USAGE = `Usage: npm run demo [-- [--keep] [--router istio|gateway-api]]

Runs the ServerlessApp operator's story on a local control plane and stops everything.
  --keep                 leave the cluster, operator and stand-in running (in this terminal) until Ctrl-C
  --router ROUTER        the operator's router for spec.ingress (default istio):
                           istio        an Istio VirtualService per app, admitted by the real istiod's webhook
                           gateway-api  a Gateway API HTTPRoute per app on a Gateway (class istio) the demo
                                        creates; the real istiod accepts it and writes its status
                         Either way no Envoy runs: no request is proxied along the routes.
Environment: LOG_LEVEL=info shows the operator's logs, STANDIN_LOG=1 the stand-in's writes.`;

const NAMESPACE = 'demo';
const cacheRoot = process.env.SERVERLESSAPP_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'serverlessapp-operator');
const lockPath = join(cacheRoot, 'demo.json');

interface DemoLock { pid: number; keep: boolean; startedAt: string; kubeconfig?: string }

let options: { keep: boolean; router: DemoRouter };
try {
  const { values } = parseArgs({ options: {
    keep: { type: 'boolean', default: false },
    router: { type: 'string', default: 'istio' },
    help: { type: 'boolean', short: 'h', default: false },
  } });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const router = DEMO_ROUTERS.find((r) => r === values.router);
  if (!router) throw new Error(`--router must be one of ${DEMO_ROUTERS.join(', ')}, not "${values.router}"`);
  options = { keep: values.keep, router };
} catch (err) {
  console.error(`demo: ${(err as Error).message}\n\n${USAGE}`);
  process.exit(2);
}

const say = (line: string) => console.log(line);
const began = performance.now();
const elapsed = (since = began) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** Claims the one-demo-at-a-time lock, or explains who holds it and exits. */
function claimLock(): void {
  mkdirSync(cacheRoot, { recursive: true });
  const mine: DemoLock = { pid: process.pid, keep: options.keep, startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockPath, JSON.stringify(mine), { flag: 'wx' });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const other = readLock();
    if (other && other.pid !== process.pid && isDemo(other.pid)) {
      console.error(`demo: another demo is already running (pid ${other.pid}, started ${other.startedAt}${other.keep ? ' with --keep' : ''}).`);
      if (other.kubeconfig) console.error(`Use it:   export KUBECONFIG=${other.kubeconfig}`);
      console.error(`Or stop it with Ctrl-C in its terminal (or: kill ${other.pid}), then run \`npm run demo\` again.`);
      process.exit(1);
    }
    rmSync(lockPath, { force: true }); // left by a demo that is gone
  }
  throw new Error(`could not claim ${lockPath}; remove it if no demo is running`);
}

function readLock(): DemoLock | undefined {
  try {
    return JSON.parse(readFileSync(lockPath, 'utf8')) as DemoLock;
  } catch {
    return undefined;
  }
}

function isDemo(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('demo/main.ts');
  } catch {
    return false;
  }
}

function releaseLock(): void {
  if (readLock()?.pid === process.pid) rmSync(lockPath, { force: true });
}

claimLock();
process.on('exit', releaseLock);
// The control plane's supervisor kills kube-apiserver and etcd when this process
// exits, however it exits (and the data plane's network namespaces with
// them); the operator and the stand-in live in this process.
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  process.on(signal, () => {
    console.error(`\ndemo: ${signal}: stopping everything (operator, stand-in, data plane, kube-apiserver, etcd)`);
    process.exit(code);
  });
}

say(`ServerlessApp operator demo
  REAL:      kube-apiserver, etcd, kube-controller-manager, kube-scheduler, Knative Serving 1.21
             (controller, webhook, autoscaler), KServe 0.20 (controller and webhooks, and its local
             model cache: controller, webhook and a node agent per node), istiod (Istio's control
             plane: its webhook admits every VirtualService; under --router gateway-api it accepts
             the HTTPRoutes and writes their status), and the CRDs of Knative Serving, KServe,
             Istio, Gateway API v1.6.3 and ServerlessApp.
  ROUTER:    ${options.router === 'gateway-api' ? 'gateway-api (a Gateway API HTTPRoute per app; --router istio for VirtualServices)' : 'istio (an Istio VirtualService per app; --router gateway-api for HTTPRoutes)'}
  SIMULATED: the nodes (KWOK: pods are scheduled and turn Ready, no container runs), the network
             (a bridge standing in for kube-proxy and cluster DNS), the data plane (no Envoy runs:
             istiod configures no proxy and no request is proxied along the routes shown; ${process.env.ENVTEST_NETGW === 'on'
    ? `the real
             net-gateway-api reconciles KIngresses, its probes answered by a stand-in;`
    : `KIngresses
             are marked ready as net-istio would;`} Knative's autoscaler sees no request),
             the model server answering warmup requests and the Prometheus answering the rollout's
             checks (loopback servers in this process), and the model download for node caches (the
             rig writes the folder KServe's download Job would fill; nothing is fetched).
  The operator runs in this process on a demo clock, so rollout intervals and the 08:00 and 18:00
  window transitions take seconds.
`);

let env: DemoEnvironment | undefined;
try {
  env = await startEnvironment((line) => say(`setup: ${line}`), options.router);
  const running = env;
  writeFileSync(lockPath, JSON.stringify({ ...readLock(), kubeconfig: running.controlPlane.kubeconfigPath }));
  const storyStarted = performance.now();
  await runStory({
    kubeConfig: running.kubeConfig, namespace: NAMESPACE, clock: running.clock, print: say,
    resync: () => running.operator.apps.controller.enqueueAll(),
    warmupRequests: () => running.warmup.requests, llm: running.llm,
    failWarmups: (failing) => { running.warmup.failing = failing; },
    analysisQueries: () => running.prometheus.queries(),
    router: running.router, ...(running.gateway ? { gateway: running.gateway } : {}),
    ...(running.controlPlane.dataPlane?.istio ? { proxyConfig: (proxy: ProxyIdentity) => proxyConfig(proxy, running.controlPlane) } : {}),
  });
  say(`\nthe story took ${elapsed(storyStarted)}; the whole demo so far ${elapsed()}`);
} catch (err) {
  console.error(`\ndemo failed: ${err instanceof EnvtestError ? describeFailure(err) : (err as Error).message}`);
  if (/address already in use/.test(String(err))) {
    console.error('A port picked for the control plane was taken by another program just before it started: run `npm run demo` again.');
  } else if (!(err instanceof EnvtestError)) {
    console.error('For details run again with LOG_LEVEL=info (operator logs) and STANDIN_LOG=1 (stand-in writes).');
  }
  await env?.stop();
  process.exit(1);
}

if (options.keep) {
  say(`
Everything keeps running in this terminal: press Ctrl-C to stop everything (operator, stand-in, data plane, control plane).
In another terminal:
  export KUBECONFIG=${env.controlPlane.kubeconfigPath}
  kubectl get sapp -A
  kubectl explain serverlessapp.spec.scaling
  kubectl describe sapp shop -n ${NAMESPACE}
  kubectl get ksvc,revisions,${env.router === 'gateway-api' ? 'httproutes' : 'virtualservices'} -n ${NAMESPACE}${env.gateway ? `
  kubectl get gateway ${env.gateway.split('/')[1]} -n ${env.gateway.split('/')[0]}` : ''}
The demo clock keeps running from where the story left it; edits you apply are reconciled as usual.
(Event ages in kubectl look odd, e.g. <invalid>: the operator stamps Events with the demo clock.)`);
  setInterval(() => {}, 1 << 30); // stay in the foreground until a signal
} else {
  await env.stop();
  say(`stopped everything (operator, stand-in, data plane, kube-apiserver, etcd); total ${elapsed()}`);
  say('Explore on your own with `npm run demo -- --keep`.');
  process.exit(0);
}
