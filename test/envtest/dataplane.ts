// The rig's data plane beside a control plane: the real kube-controller-manager
// (garbage collector, deployments, replica sets, endpoints, namespaces, ...),
// kube-scheduler, KWOK (simulated nodes: pods are scheduled, get an IP and turn
// Running/Ready, but no container runs) and the real Knative Serving, all from
// build.sh. They run in network namespaces that reach only the API server and
// each other, through netns-bridge.ts (the SIMULATED NETWORK); see netns.ts.
// With KServe, its local model cache runs too (kserve-localmodel.ts): the
// controller, and the node agent once per node in a namespace of its own.
// istiod (istiod.ts) runs beside them, its validating webhook registered.
// With ENVTEST_NETGW=on, Knative's own network ingress runs too
// (net-gateway-api.ts): every KIngress becomes HTTPRoutes that istiod turns
// into the ingress gateway's Envoy routes. What is still simulated: the network
// (bridge), the nodes (KWOK), the KIngress status (kingress-status.ts; with
// net-gateway-api, the gateway's data plane: gateway-probe.ts answers Knative's
// readiness probes from istiod's configuration, no Envoy runs), model downloads
// (model-download.ts) and any traffic or metrics (no container runs).
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type V1Node, type V1Pod, type V1Taint } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { EnvtestError } from './errors.ts';
import { runKIngressStatus } from './kingress-status.ts';
import { installKnativeServing, KNATIVE_NAMESPACE, KNATIVE_WEBHOOK_PORT, KNATIVE_WEBHOOK_SERVICE, knativeEnv, knativeWebhookAdmits } from './knative-serving.ts';
import { dialThrough, readServices, serveUdsToTcp } from './netns-bridge.ts';
import { createNetns, deleteNetns, deleteNetnsOnExit, netnsName, POD_CIDR, sweepLeakedNetns } from './netns.ts';
import { kubeconfigYaml } from './pki.ts';
import { spawnDetached, supervise, waitHealthy, type LaunchOptions, type RunningProcess } from './supervise.ts';
import { startIstiod } from './istiod.ts';
import { INGRESS_CLASS, startNetGatewayApi } from './net-gateway-api.ts';
import { startKServe } from './kserve.ts';
import { startLlmIsvc, type LlmIsvc } from './kserve-llmisvc.ts';
import { startLocalModel } from './kserve-localmodel.ts';
import { runModelDownload } from './model-download.ts';
import { downloadModule } from './upstream-crds.ts';
import { findCondition } from '../../src/util/conditions.ts';

export interface DataPlaneOptions {
  /**
   * Run the real Knative Serving (controller, webhook, autoscaler) and its network ingress: the KIngress
   * status stand-in, or with `netGatewayApi` the real net-gateway-api. Default true.
   */
  knative?: boolean;
  /** Run the real KServe controller (Knative mode, its webhooks and ClusterServingRuntimes) and its local model cache; needs Knative. Default: with Knative. */
  kserve?: boolean;
  /** Run the real istiod (Istio's control plane) with its validating webhook registered. Default: unless ENVTEST_ISTIO=off (build.sh then skips it). */
  istio?: boolean;
  /**
   * Knative's KIngresses through the real net-gateway-api and istiod (needs both), instead of the KIngress status
   * stand-in. Default: only with ENVTEST_NETGW=on (build.sh then builds it). Opt-in because its cost grows with
   * every route of the run: each KIngress waits for istiod to push the whole gateway configuration to the
   * simulated gateway's probe responder, and a full `npm test` ran 58 min instead of 34 with it, timing out.
   */
  netGatewayApi?: boolean;
}

/** Where the data plane's processes can be found: for tests, and for `npm run cluster` to stop them later. */
export interface DataPlane {
  /**
   * Network namespaces: `main` runs everything but the Knative autoscaler, which has `autoscaler` to itself,
   * and KServe's node agents, which have one per node (`nodes`, by node name; empty without KServe).
   */
  readonly netns: { readonly main: string; readonly autoscaler: string; readonly nodes: Readonly<Record<string, string>> };
  /** Every data-plane process, by name (as in its log file `<dir>/<name>.log`). */
  readonly processes: ReadonlyArray<{ readonly name: string; readonly pid: number; readonly binary: string }>;
  /** An admin kubeconfig that works inside the main namespace (the bridge's https://127.0.0.1:6443). */
  readonly kubeconfigInNs: string;
  /**
   * Starts `binary args` inside the main namespace with `env` added, output to
   * `<dir>/<name>.log`; stopped with the data plane and listed in `processes`.
   */
  launchInNs(name: string, binary: string, args: string[], env?: Record<string, string>): RunningProcess;
  /** The simulated nodes' names. */
  readonly nodes: readonly string[];
  /** True when the real Knative Serving runs. */
  readonly knative: boolean;
  /** Whether the real KServe controller runs. */
  readonly kserve: boolean;
  /** Whether the real istiod runs, validating every Istio object written. */
  readonly istio: boolean;
  /** Whether Knative's KIngresses go through the real net-gateway-api (ENVTEST_NETGW=on), not the status stand-in. */
  readonly netGatewayApi: boolean;
  /**
   * Starts KServe's LLMInferenceService manager (kserve-llmisvc.ts) on first call, and resolves once it
   * admits; later calls share it. Started on demand: it watches every Pod, Secret and ConfigMap of the
   * cluster, which only the LLM tests need. Needs KServe and istiod.
   */
  llmisvc(): Promise<LlmIsvc>;
  /**
   * Makes Service `namespace/name`'s `port` reach `localPort` in the main
   * namespace (where the process playing it listens), for kube-apiserver's
   * webhook calls: the simulated kube-proxy.
   */
  exposeService(service: { namespace: string; name: string; port: number; localPort: number }): Promise<void>;
  /** Pods, as KWOK reports them (all namespaces when none is given). */
  pods(namespace?: string): Promise<V1Pod[]>;
  stop(): Promise<void>;
}

/** What the data plane needs from its control plane. */
export interface DataPlaneHost {
  dir: string;
  binDir: string;
  apiPort: number;
  caPem: string;
  adminToken: string;
  detached: boolean;
  log: (line: string) => void;
  kubeConfig(): KubeConfig;
}

const here = dirname(fileURLToPath(import.meta.url));
const KWOK = { module: 'sigs.k8s.io/kwok', version: 'v0.8.0' };
/** The API server's port inside every namespace (the bridge's listener). */
const NS_API_PORT = 6443;
const MAIN_POD_IP = '10.250.0.2';
const AUTOSCALER_POD_IP = '10.250.0.3';
/** The node namespaces' addresses: 10.250.0.10 and on, one per node. */
const nodePodIp = (index: number) => `10.250.0.${10 + index}`;
const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

/** Unix socket paths in `dir`: the host's API socket and each namespace's CONNECT proxy. */
export function socketPaths(dir: string): { api: string; mainConnect: string; autoscalerConnect: string; services: string } {
  return {
    api: join(dir, 'apiserver.sock'), mainConnect: join(dir, 'netns-main.sock'), autoscalerConnect: join(dir, 'netns-autoscaler.sock'),
    services: join(dir, 'netns-main.services.json'),
  };
}

/**
 * Writes the kube-apiserver's egress selector configuration: the `cluster`
 * egress (Service-referenced webhooks) goes through the main namespace's
 * CONNECT proxy. Returns the flag to pass.
 */
export function writeEgressSelector(dir: string): string {
  const path = join(dir, 'egress-selector.yaml');
  writeFileSync(path, stringify({
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [{
      name: 'cluster',
      connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: socketPaths(dir).mainConnect } } },
    }],
  }));
  return `--egress-selector-config-file=${path}`;
}

export async function startDataPlane(host: DataPlaneHost, opts: DataPlaneOptions = {}): Promise<DataPlane> {
  const started = performance.now();
  const withKnative = opts.knative ?? true;
  const withKServe = withKnative && (opts.kserve ?? true);
  const withIstio = opts.istio ?? process.env.ENVTEST_ISTIO !== 'off';
  const withNetGatewayApi = withKnative && (opts.netGatewayApi ?? process.env.ENVTEST_NETGW === 'on');
  // net-gateway-api programs istiod's gateways; asked for without istiod it would quietly not run.
  if (withNetGatewayApi && !withIstio) throw new Error('ENVTEST_NETGW=on needs the rig\'s istiod, which ENVTEST_ISTIO=off turns off: unset one of them');
  const { dir } = host;
  const sockets = socketPaths(dir);
  const nodes = rigNodes();
  const nodeNetns: Record<string, string> = withKServe ? Object.fromEntries(nodes.map((n) => [n.metadata!.name!, netnsName()])) : {};
  const netns = { main: netnsName(), autoscaler: netnsName(), nodes: nodeNetns };
  const allNetns = [netns.main, netns.autoscaler, ...Object.values(nodeNetns)];
  // A detached data plane's namespaces outlive this process on purpose (`npm run cluster -- down` removes them).
  const cancelDeleteOnExit = host.detached ? () => {} : deleteNetnsOnExit(allNetns);
  const running: Array<RunningProcess & { binary: string }> = [];
  let hostBridge: { close(): void } | undefined;
  const harnessStop = new AbortController();
  /** `execs`: the program `binary` execs into, which its pid then runs (what `npm run cluster -- down` checks before it kills). */
  const launch = (name: string, binary: string, args: string[], launchOpts: LaunchOptions = {}, execs?: string): RunningProcess & { binary: string } => {
    const proc = (host.detached ? spawnDetached : supervise)(name, binary, args, join(dir, `${name}.log`), undefined, launchOpts);
    const entry = Object.assign(proc, { binary: execs ?? binary });
    running.push(entry);
    return entry;
  };
  const node = (name: string, script: string, args: string[], launchOpts: LaunchOptions = {}) =>
    launch(name, process.execPath, ['--no-warnings', join(here, script), ...args], launchOpts);
  const stopAll = async () => {
    harnessStop.abort();
    await Promise.all(running.reverse().map((p) => p.stop(5_000)));
    hostBridge?.close();
    await Promise.all(allNetns.map(deleteNetns));
    cancelDeleteOnExit();
  };

  try {
    const swept = await sweepLeakedNetns();
    if (swept.length > 0) host.log(`removed ${swept.length} network namespaces left by killed runs: ${swept.join(', ')}`);
    if (host.detached) node('netns-bridge-host', 'netns-bridge.ts', ['host', sockets.api, String(host.apiPort)]);
    else hostBridge = await serveUdsToTcp(sockets.api, host.apiPort);
    await Promise.all([createNetns(netns.main, MAIN_POD_IP), createNetns(netns.autoscaler, AUTOSCALER_POD_IP),
      ...Object.values(nodeNetns).map((ns, i) => createNetns(ns, nodePodIp(i)))]);

    const bridges = [
      { name: 'netns-bridge-main', ns: netns.main, connect: sockets.mainConnect },
      { name: 'netns-bridge-autoscaler', ns: netns.autoscaler, connect: sockets.autoscalerConnect },
      ...Object.entries(nodeNetns).map(([n, ns]) => ({ name: `netns-bridge-${n}`, ns, connect: join(dir, `netns-${n}.sock`) })),
    ].map((b) => ({
      ...b,
      proc: node(b.name, 'netns-bridge.ts', ['ns', '--listen', String(NS_API_PORT), '--to', sockets.api, '--connect', b.connect,
        '--services', sockets.services], { netns: b.ns }),
    }));
    await Promise.all(bridges.map((b) => waitHealthy(b.proc, dir, () => reachable(b.connect, NS_API_PORT))));

    const kubeconfig = join(dir, 'netns.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(`https://127.0.0.1:${NS_API_PORT}`, host.caPem, host.adminToken), { mode: 0o600 });
    const bin = (name: string) => join(host.binDir, name);
    const inMain = { netns: netns.main };

    mkdirSync(join(dir, 'kcm'), { recursive: true });
    const kcm = launch('kube-controller-manager', bin('kube-controller-manager'), [
      `--kubeconfig=${kubeconfig}`, '--bind-address=127.0.0.1', '--secure-port=10257', `--cert-dir=${join(dir, 'kcm')}`,
      '--leader-elect=false', `--service-account-private-key-file=${join(dir, 'sa.key')}`, `--root-ca-file=${join(dir, 'ca.crt')}`,
      '--kube-api-qps=200', '--kube-api-burst=400', '--concurrent-gc-syncs=10', '--v=1',
    ], inMain);
    mkdirSync(join(dir, 'scheduler'), { recursive: true });
    const scheduler = launch('kube-scheduler', bin('kube-scheduler'), [
      `--kubeconfig=${kubeconfig}`, '--bind-address=127.0.0.1', '--secure-port=10259', `--cert-dir=${join(dir, 'scheduler')}`,
      '--leader-elect=false', '--kube-api-qps=200', '--kube-api-burst=400', '--v=1',
    ], inMain);
    const kwokConfig = await writeKwokStages(dir);
    const kwok = launch('kwok', bin('kwok'), [
      `--kubeconfig=${kubeconfig}`, `--config=${kwokConfig}`, `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
      // Without a lease duration KWOK renews no node lease, the node lifecycle controller marks the nodes NotReady and pods never turn Ready.
      '--node-lease-duration-seconds=40', `--cidr=${POD_CIDR}`, `--node-ip=${MAIN_POD_IP}`,
    ], inMain);

    const kc = host.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await Promise.all(nodes.map((n) => core.createNode({ body: n }).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    })));
    const exposeService: DataPlane['exposeService'] = async ({ namespace, name, port, localPort }) => {
      const svc = await core.readNamespacedService({ namespace, name });
      const clusterIp = svc.spec?.clusterIP;
      if (!clusterIp || clusterIp === 'None') throw new EnvtestError(`Service ${namespace}/${name} has no ClusterIP to expose`);
      const services = { ...readServices(sockets.services), [`${clusterIp}:${port}`]: localPort, [`${name}.${namespace}.svc:${port}`]: localPort };
      writeFileSync(`${sockets.services}.tmp`, JSON.stringify(services));
      renameSync(`${sockets.services}.tmp`, sockets.services);
    };

    // With net-gateway-api, Knative's KIngresses are Gateway API routes, which istiod implements.
    const knativeInstalled = withKnative ? installKnativeServing(kc, withNetGatewayApi ? INGRESS_CLASS : undefined) : Promise.resolve();
    const launchInNs = (name: string, binary: string, args: string[], env: Record<string, string>) => launch(name, binary, args, { ...inMain, env });
    // Beside Knative's start: it needs only the API server. Awaited before KServe, whose VirtualServices it validates.
    const istiodStarted = withIstio
      ? startIstiod({ binDir: host.binDir, dir, kubeConfig: kc, kubeconfigInNs: kubeconfig, exposeService, launchInNs })
      : Promise.resolve(undefined);
    istiodStarted.catch(() => {});

    await Promise.all([
      waitHealthy(kcm, dir, () => httpsOk(sockets.mainConnect, 10257, '/healthz')),
      waitHealthy(scheduler, dir, () => httpsOk(sockets.mainConnect, 10259, '/healthz')),
      waitHealthy(kwok, dir, () => nodesReady(core, nodes.map((n) => n.metadata!.name!))),
      knativeInstalled,
    ]);

    if (withKnative) {
      await exposeService({ namespace: KNATIVE_NAMESPACE, name: KNATIVE_WEBHOOK_SERVICE, port: 443, localPort: KNATIVE_WEBHOOK_PORT });
      const controller = launch('knative-controller', bin('knative-controller'), [`--kubeconfig=${kubeconfig}`], { ...inMain, env: knativeEnv('controller', MAIN_POD_IP) });
      const webhook = launch('knative-webhook', bin('knative-webhook'), [`--kubeconfig=${kubeconfig}`], { ...inMain, env: knativeEnv('webhook', MAIN_POD_IP) });
      const autoscaler = launch('knative-autoscaler', bin('knative-autoscaler'), [`--kubeconfig=${kubeconfig}`],
        { netns: netns.autoscaler, env: knativeEnv('autoscaler', AUTOSCALER_POD_IP) });
      let lastRefusal = '(none)';
      // In the harness's process unless detached: it only talks to the API server, and a Node process of its own costs ~140 MiB.
      if (!withNetGatewayApi && host.detached) node('kingress-status', 'kingress-status.ts', [join(dir, 'kubeconfig')]);
      else if (!withNetGatewayApi) void runKIngressStatus(kc, harnessStop.signal);
      await Promise.all([
        waitHealthy(controller, dir, () => httpOk(sockets.mainConnect, 8080, '/readiness')),
        waitHealthy(autoscaler, dir, () => reachable(sockets.autoscalerConnect, 8080)),
        waitHealthy(webhook, dir, () => knativeWebhookAdmits(kc, (m) => { lastRefusal = m; })).catch((err: Error) => {
          throw new EnvtestError(`${err.message}\nkube-apiserver's last answer to a dry-run Knative Service: ${lastRefusal}`);
        }),
      ]);
    }
    const istiod = await istiodStarted;
    if (istiod) host.log(`istiod's webhook answered ${(istiod.readyInMs / 1000).toFixed(1)}s after its setup began`);
    // Beside KServe's start: it needs istiod (the Gateways' implementation) and Knative's namespace.
    const netgwStarted = withNetGatewayApi ? (async () => {
      const at = performance.now();
      await startNetGatewayApi({
        binDir: host.binDir, dir, kubeConfig: kc, kubeconfigInNs: kubeconfig, exposeService, launchInNs,
        launchNodeInNs: (name, script, args) => node(name, script, args, inMain),
        listening: (port) => reachable(sockets.mainConnect, port),
      }, (p, check) => waitHealthy(p, dir, check));
      host.log(`net-gateway-api started in ${((performance.now() - at) / 1000).toFixed(1)}s`);
    })() : Promise.resolve();
    netgwStarted.catch(() => {});
    if (withKServe) {
      await startKServe({ binDir: host.binDir, dir, kubeConfig: kc, kubeconfigInNs: kubeconfig, exposeService, launchInNs });
      // SIMULATED model download, in the harness's process unless detached, like the KIngress status.
      if (host.detached) node('model-download', 'model-download.ts', [join(dir, 'kubeconfig'), dir]);
      else void runModelDownload(kc, dir, harnessStop.signal);
      await startLocalModel({
        binDir: host.binDir, dir, kubeConfig: kc, kubeconfigInNs: kubeconfig, exposeService, launchInNs,
        launchOnNode: (n, name, binary, args, env, execs) => launch(name, binary, args, { netns: nodeNetns[n]!, env }, execs),
        nodes: Object.keys(nodeNetns),
      });
    }
    await netgwStarted;
    host.log(`data plane ready in ${((performance.now() - started) / 1000).toFixed(1)}s (netns ${allNetns.join(', ')}; `
      + `${withKnative ? 'Knative Serving 1.21' : 'no Knative'}${withIstio ? ', istiod (no Envoy runs)' : ''}`
      + `${withNetGatewayApi ? ', net-gateway-api (gateway data plane SIMULATED for its probes)' : withKnative ? ', KIngress status SIMULATED' : ''}${withKServe ? ', KServe 0.20 with its local model cache (model downloads SIMULATED)' : ''})`);

    const rig = { binDir: host.binDir, dir, kubeConfig: kc, kubeconfigInNs: kubeconfig, exposeService, launchInNs };
    let llmisvc: Promise<LlmIsvc> | undefined;
    return {
      netns,
      get processes() { return running.map((p) => ({ name: p.name, pid: p.pid, binary: p.binary })); },
      kubeconfigInNs: kubeconfig,
      launchInNs: (name, binary, args, env = {}) => launch(name, binary, args, { ...inMain, env }),
      nodes: nodes.map((n) => n.metadata!.name!),
      knative: withKnative,
      kserve: withKServe,
      istio: withIstio,
      netGatewayApi: withNetGatewayApi,
      llmisvc() {
        if (!withKServe || !withIstio) return Promise.reject(new EnvtestError('the LLMInferenceService manager needs the rig\'s KServe and istiod (ENVTEST_ISTIO=off turns istiod off)'));
        llmisvc ??= startLlmIsvc(rig);
        return llmisvc;
      },
      exposeService,
      async pods(namespace) {
        const list = namespace ? await core.listNamespacedPod({ namespace }) : await core.listPodForAllNamespaces();
        return list.items;
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** Removes what a detached data plane left: its namespaces (its processes are stopped by pid). */
export async function deleteDataPlaneNetns(names: readonly string[]): Promise<void> {
  await Promise.all(names.map(deleteNetns));
}

/**
 * Two simulated nodes; the second has GPUs, the way the NVIDIA device plugin and GPU feature discovery
 * label one, and the taint GPU node pools carry (GKE, AKS) so that only pods that tolerate it land there.
 */
function rigNodes(): V1Node[] {
  const node = (name: string, index: number, extra: { labels?: Record<string, string>; capacity?: Record<string, string>; taints?: V1Taint[] }): V1Node => {
    // Large, so a whole test run's apps (each revision keeps a pod: without queue-proxy metrics the
    // autoscaler never scales to zero) fit; a request of 1000 CPUs still never schedules.
    const capacity = { cpu: '256', memory: '1Ti', pods: '5000', 'ephemeral-storage': '10Ti', ...extra.capacity };
    return {
      apiVersion: 'v1', kind: 'Node',
      metadata: {
        name,
        annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
        labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok', ...extra.labels },
      },
      spec: { podCIDR: `10.244.${index}.0/24`, podCIDRs: [`10.244.${index}.0/24`], ...(extra.taints ? { taints: extra.taints } : {}) },
      status: { capacity, allocatable: capacity },
    };
  };
  return [
    node('rig-node-1', 1, {}),
    node('rig-gpu-node-1', 2, { labels: { 'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'simulated' }, capacity: { 'nvidia.com/gpu': '64' },
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }] }),
  ];
}

/** KWOK's own stages (node initialise, lease heartbeat, pod ready/complete/delete) from its module, in one config file. */
async function writeKwokStages(dir: string): Promise<string> {
  const kwok = await downloadModule(KWOK.module, KWOK.version);
  const docs = ['node/fast', 'node/heartbeat-with-lease', 'pod/fast'].flatMap((stage) => {
    const stageDir = join(kwok, 'kustomize/stage', stage);
    return readdirSync(stageDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort()
      .map((f) => readFileSync(join(stageDir, f), 'utf8'));
  });
  if (docs.length === 0) throw new EnvtestError(`no KWOK stages found in ${kwok}/kustomize/stage`);
  const path = join(dir, 'kwok.yaml');
  writeFileSync(path, docs.join('\n---\n'));
  return path;
}

async function nodesReady(core: CoreV1Api, names: string[]): Promise<boolean> {
  const { items } = await core.listNode();
  return names.every((name) => findCondition(items.find((n) => n.metadata?.name === name)?.status?.conditions, 'Ready')?.status === 'True');
}

/** True when something listens on `port` inside the namespace behind `connectSock`. */
async function reachable(connectSock: string, port: number): Promise<boolean> {
  try {
    (await dialThrough(connectSock, port)).destroy();
    return true;
  } catch {
    return false;
  }
}

function httpOk(connectSock: string, port: number, path: string): Promise<boolean> {
  return get(connectSock, port, path, false);
}

function httpsOk(connectSock: string, port: number, path: string): Promise<boolean> {
  return get(connectSock, port, path, true);
}

/** One HTTP/1.0 GET through the namespace's CONNECT proxy; true on a 2xx. Self-signed serving certs are expected. */
async function get(connectSock: string, port: number, path: string, tls: boolean): Promise<boolean> {
  let raw;
  try {
    raw = await dialThrough(connectSock, port);
  } catch {
    return false;
  }
  const socket = tls ? tlsConnect({ socket: raw, rejectUnauthorized: false, servername: 'localhost' }) : raw;
  return new Promise((resolve) => {
    let head = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(false); }, 2_000);
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n')) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(/^HTTP\/1\.[01] 2\d\d/.test(head));
    });
    socket.on('error', () => { clearTimeout(timer); resolve(false); });
    socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`);
  });
}
