// SIMULATED GATEWAY DATA PLANE, for Knative's readiness probes only. The real
// net-gateway-api controller (net-gateway-api.ts) marks a KIngress Ready only
// once its prober has sent, to every gateway pod behind the gateway's Service
// (its Endpoints), a request that the programmed route answers with the
// Ingress's hash: knative.dev/net-gateway-api pkg/status/status.go
// (processWorkItem, probeVerifier), targets from pkg/reconciler/ingress/lister.go.
// The request carries `K-Network-Probe: probe` and `K-Network-Hash: override`;
// the HTTPRoute rule that knative.dev/networking pkg/ingress InsertProbe adds
// matches that header and sets K-Network-Hash to the Ingress's hash on the way
// to the revision, whose queue-proxy (or the activator) echoes it back
// (knative.dev/networking pkg/http/probe/handler.go).
//
// No Envoy runs here, and no container. This process plays both, from what the
// gateway's Envoy would hold: it listens, in the data plane's main network
// namespace (where the simulated pod IPs are local, netns.ts), on the gateway
// pod's ports, holds the gateway proxy's ADS stream to istiod (xds-dump --watch,
// the ADS client test/support/envoy-config.ts uses), and answers a probe as Envoy with
// that configuration, then the revision's probe handler, would: the listener of
// the port, the virtual host of the Host, the first route whose match holds, its
// headers applied (answerProbe, over test/support/route-eval.ts's evaluation). No route: 404, an unknown cluster: 503, both
// of which the prober retries. A KIngress is thus Ready only once istiod has
// programmed its HTTPRoutes into the gateway's routes, with the new hash.
// Requests other than Knative's probes get a 503 naming the simulation.
// Run as a program: node gateway-probe.ts XDS_DUMP XDS_ADDR NAMESPACE LABELS PORT...
import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createInterface } from 'node:readline';
import type { ProxyConfig } from '../support/envoy-config.ts';
import { findVirtualHost, routeRequest } from '../support/route-eval.ts';

/** What the prober sends (knative.dev/networking pkg/http/header). */
export const PROBE_HEADER = { key: 'k-network-probe', value: 'probe' } as const;
export const HASH_HEADER = 'k-network-hash';

/** The gateway proxy's configuration, as xds-dump prints it. */
export type GatewayConfig = ProxyConfig;

export interface ProbeRequest { port: number; host: string; path: string; headers: IncomingHttpHeaders }
export interface ProbeAnswer { status: number; headers: Record<string, string>; why: string }

/**
 * How Envoy with `config`, then the revision's probe handler, answer `req`: the listener of the port, then
 * Envoy's own choice of virtual host, route and request headers (test/support/route-eval.ts, the one
 * evaluation of Envoy's routes the rig has). Envoy picks one weighted cluster at random; the first with
 * weight is taken here (Knative's hash is set on the route, the same for all of them).
 */
export function answerProbe(config: GatewayConfig, req: ProbeRequest): ProbeAnswer {
  const notFound = (why: string): ProbeAnswer => ({ status: 404, headers: {}, why });
  const listener = config.listeners.find((l) => l.port === req.port);
  if (!listener) return notFound(`no listener on port ${req.port}`);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  for (const rc of config.routes.filter((r) => listener.routeConfigNames.includes(r.name))) {
    if (!findVirtualHost(rc, req.host)) continue;
    const outcome = routeRequest(rc, { authority: req.host, path: req.path, headers }, 0);
    if ('noRoute' in outcome) return notFound(outcome.noRoute);
    if ('answered' in outcome) return { status: outcome.answered.status, headers: {}, why: `route ${outcome.answered.route} answers itself` };
    const { cluster, requestHeaders: sent } = outcome.hop;
    if (!config.clusters.includes(cluster)) return { status: 503, headers: {}, why: `cluster ${cluster} unknown to the proxy` };
    const isProbe = sent[PROBE_HEADER.key] === PROBE_HEADER.value;
    if (!isProbe) return { status: 503, headers: {}, why: `SIMULATED gateway: only Knative's readiness probes are answered (no container behind ${cluster})` };
    const hash = sent[HASH_HEADER];
    if (!hash) return { status: 400, headers: {}, why: `a probe request must contain a non-empty ${HASH_HEADER} header` };
    return { status: 200, headers: { [HASH_HEADER]: hash }, why: `routed to ${cluster}` };
  }
  return notFound(`no virtual host for ${req.host} on port ${req.port}`);
}

/**
 * The gateway proxy's configuration as the stream from istiod last gave it
 * (`update`, each time it changes): a probe is answered from the newest, as a
 * running Envoy answers from what it last received; before the first, it waits.
 */
export function latestConfig() {
  let latest: GatewayConfig | undefined;
  let waiters: Array<(c: GatewayConfig) => void> = [];
  return {
    update(config: GatewayConfig): void {
      latest = config;
      for (const w of waiters) w(config);
      waiters = [];
    },
    current(): Promise<GatewayConfig> {
      return latest ? Promise.resolve(latest) : new Promise((resolve) => waiters.push(resolve));
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [xdsDump, xds, namespace, labels, ...ports] = process.argv.slice(2);
  if (!xdsDump || !xds || !namespace || labels === undefined || ports.length === 0) {
    console.error('usage: gateway-probe.ts XDS_DUMP XDS_ADDR NAMESPACE LABELS PORT...');
    process.exit(2);
  }
  const log = (line: string) => console.log(`${new Date().toISOString()} gateway-probe: ${line}`);
  const config = latestConfig();
  // One ADS stream held open, as the gateway's Envoy would (xds-dump --watch: a JSON line per change).
  let child: ReturnType<typeof spawn> | undefined;
  const watch = () => {
    child = spawn(xdsDump, [`--xds=${xds}`, '--type=router', `--namespace=${namespace}`, `--labels=${labels}`, '--timeout=60s', '--watch'],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout! }).on('line', (line) => config.update(JSON.parse(line) as GatewayConfig));
    child.on('exit', (code) => {
      log(`xds-dump --watch exited (${code}); reconnecting`);
      setTimeout(watch, 1_000);
    });
  };
  watch();
  process.on('exit', () => child?.kill());
  for (const port of ports.map(Number)) {
    createServer((req, res) => {
      void config.current().then((c) => {
        let answer: ProbeAnswer;
        try {
          answer = answerProbe(c, { port, host: req.headers.host ?? '', path: req.url ?? '/', headers: req.headers });
        } catch (err) {
          // A configuration the evaluation cannot read (a matcher it does not know): say so, and keep answering.
          answer = { status: 500, headers: {}, why: `SIMULATED gateway cannot evaluate the proxy's routes: ${(err as Error).message}` };
        }
        if (answer.status !== 200) log(`${answer.status} ${req.headers.host}${req.url} on :${port}: ${answer.why}`);
        res.writeHead(answer.status, answer.headers).end(answer.status === 200 ? '' : `${answer.why}\n`);
      });
    }).listen(port, () => log(`SIMULATED gateway data plane answering Knative's probes on :${port}`));
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
}
