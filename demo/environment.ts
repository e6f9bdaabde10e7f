// Everything the demo runs, started in order and stopped in reverse: a real
// kube-apiserver + etcd and the rig's data plane (kube-controller-manager,
// kube-scheduler, KWOK's simulated nodes, the real Knative Serving 1.21 and
// KServe 0.20 controllers on a simulated network; all built from Go modules on
// first use), the real Knative/KServe/Istio CRDs plus ours, two loopback HTTP
// servers (simulated-servers.ts: a SIMULATED model server answering warmup
// requests, a SIMULATED Prometheus answering the rollout's checks), KServe's
// real local model cache (controller and node agents; the model download is
// SIMULATED by the rig, test/envtest/model-download.ts), the stand-in only for
// what no real controller runs, and the operator in-process on a demo clock,
// with the router asked for: istio (VirtualServices) or gateway-api
// (HTTPRoutes on a Gateway of class istio that this file creates, judged by
// the rig's real istiod; gateway.ts).
// Every listener binds 127.0.0.1 on a port the kernel picks, so a demo never
// clashes with anything on the machine.

import type { KubeConfig } from '@kubernetes/client-node';
import { parseConfig } from '../src/config.ts';
import { createOperator, type Operator } from '../src/operator.ts';
import { OffsetClock } from '../src/runtime/clock.ts';
import { createLogger } from '../src/runtime/logging.ts';
import { startControlPlane, type ControlPlane } from '../test/envtest/controlplane.ts';
import { installAllCrds } from '../test/envtest/upstream-crds.ts';
import { startStandins } from '../test/standin/standin.ts';
import { ensureParentGateway, type DemoRouter } from './gateway.ts';
import { ANALYSIS_PROVIDER, ModelServer, PrometheusStandIn } from './simulated-servers.ts';
import { DEMO_CLOCK_START } from './story.ts';

export interface DemoEnvironment {
  controlPlane: ControlPlane;
  kubeConfig: KubeConfig;
  operator: Operator;
  clock: OffsetClock;
  warmup: ModelServer;
  prometheus: PrometheusStandIn;
  router: DemoRouter;
  /** KServe's llmisvc manager runs: the story tells the LLM step. */
  llm: boolean;
  /** Under gateway-api: the parent Gateway "namespace/name" the routes attach to. */
  gateway?: string;
  /** Stops the operator, the stand-ins, the loopback servers and the control plane. */
  stop(): Promise<void>;
}

/** Without the real controllers: how long the stand-in takes to report a revision Ready or a model cached. */
const READY_DELAY_MS = 500;
/** The gateway the operator allows (--allowed-gateways); under gateway-api, the Gateway the demo creates. */
const DEMO_GATEWAY = 'istio-system/public-gateway';

export async function startEnvironment(log: (line: string) => void, router: DemoRouter = 'istio'): Promise<DemoEnvironment> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch((err: Error) => log(`while stopping: ${err.message}`));
  };
  try {
    log('starting a local cluster: kube-apiserver + etcd, kube-controller-manager, kube-scheduler, KWOK nodes, the real Knative Serving 1.21 and KServe 0.20 (the first run builds them from Go modules: about 30 minutes on 2 cores; later runs start in about a minute)');
    let started = performance.now();
    const controlPlane = await startControlPlane({ log: () => {}, dataPlane: true });
    stops.push(() => controlPlane.stop());
    log(`control plane ready at ${controlPlane.server} in ${seconds(started)}`);
    const kubeConfig = controlPlane.kubeConfig();

    started = performance.now();
    const crds = await installAllCrds(kubeConfig);
    log(`installed ${crds.length} CRDs (Knative Serving, KServe, Istio and Gateway API from their Go modules, plus serverlessapps.serverlessapp.io) in ${seconds(started)}`);
    if (router === 'gateway-api') {
      // The operator's promotion waits for the route's own Accepted status: without istiod nothing writes it.
      if (!controlPlane.dataPlane?.istio) throw new Error('--router gateway-api needs the rig\'s istiod to accept the HTTPRoutes, and it is off (ENVTEST_ISTIO=off): unset ENVTEST_ISTIO, or use --router istio');
      await ensureParentGateway(kubeConfig, DEMO_GATEWAY);
      log(`router gateway-api: created Gateway ${DEMO_GATEWAY} (class istio, a Hostname address: istiod accepts routes on it and deploys nothing; SIMULATED: no Envoy runs behind it, no request is proxied)`);
    }

    // KServe's LLMInferenceService manager, for the LLM step: started before the operator, which then serves LLM apps at once.
    const llm = !!(controlPlane.dataPlane?.kserve && controlPlane.dataPlane.istio);
    if (llm) {
      started = performance.now();
      await controlPlane.dataPlane!.llmisvc();
      log(`KServe's llmisvc manager (LLMInferenceService, its webhooks and presets) ready in ${seconds(started)}; KWOK pods stand in for vLLM (SIMULATED)`);
    }
    const warmup = await new ModelServer().start();
    stops.push(() => warmup.stop());
    const prometheus = await new PrometheusStandIn().start();
    stops.push(() => prometheus.stop());

    const real = { knative: controlPlane.dataPlane?.knative ?? false, kserve: controlPlane.dataPlane?.kserve ?? false, istio: controlPlane.dataPlane?.istio ?? false };
    const simulated = [...(real.knative ? [] : ['Knative Serving']), ...(real.kserve ? [] : ['InferenceServices', 'model caches (LocalModelCache status)'])];
    if (simulated.length > 0) {
      const standins = await startStandins({ kubeConfig, readyDelayMs: READY_DELAY_MS, knative: !real.knative, kserve: !real.kserve, caches: !real.kserve });
      stops.push(() => standins.stop());
      log(`SIMULATED by the stand-in: ${simulated.join(', ')}, reported ready after ${READY_DELAY_MS} ms`);
    }
    log(`real: ${[...(real.knative ? ['Knative Serving 1.21'] : []), ...(real.kserve ? ['KServe 0.20 with its local model cache (controller and node agents; SIMULATED model download)'] : []), ...(real.istio ? ['istiod (its webhook and Gateway API controller; SIMULATED data plane: no Envoy runs)'] : [])].join(', ') || 'neither controller'}`);

    // The flags a user would pass to `npm start`; the demo clock is --clock-start.
    const config = parseConfig([
      '--clock-start', DEMO_CLOCK_START,
      '--leader-elect', 'false',
      '--metrics-bind-address', '127.0.0.1:0',
      '--health-probe-bind-address', '127.0.0.1:0',
      '--allowed-gateways', DEMO_GATEWAY,
      '--router', router,
      '--warmup-url-template', `${warmup.url}/{namespace}/{revision}{path}`,
      '--llm-warmup-url-template', `${warmup.url}/{namespace}/{revision}{path}`,
      '--analysis-providers', `${ANALYSIS_PROVIDER}=${prometheus.url}`,
    ], { LOG_LEVEL: process.env.LOG_LEVEL ?? 'error' });
    const clock = new OffsetClock(new Date(config.clockStart!));
    const operator = await createOperator(kubeConfig, config, { logger: createLogger({ level: config.logLevel }), clock });
    await operator.manager.start();
    stops.push(async () => {
      operator.apps.effects.warmups.stop();
      await operator.manager.stop();
    });
    log(`operator running in-process (metrics http://127.0.0.1:${operator.manager.ports.metrics}/metrics, `
      + `router ${router}, warmup requests to ${warmup.url}, analysis provider "${ANALYSIS_PROVIDER}" at ${prometheus.url}, in-place revision scaling: ${operator.settings.inPlaceBounds})`);

    return { controlPlane, kubeConfig, operator, clock, warmup, prometheus, router, llm, ...(router === 'gateway-api' ? { gateway: DEMO_GATEWAY } : {}), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function seconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}
