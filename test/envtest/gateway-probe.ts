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
// headers applied (answerProbe). No route: 404, an unknown cluster: 503, both
// of which the prober retries. A KIngress is thus Ready only once istiod has
// programmed its HTTPRoutes into the gateway's routes, with the new hash.
// Requests other than Knative's probes get a 503 naming the simulation.
// Run as a program: node gateway-probe.ts XDS_DUMP XDS_ADDR NAMESPACE LABELS PORT...
import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createInterface } from 'node:readline';

/** What the prober sends (knative.dev/networking pkg/http/header). */
export const PROBE_HEADER = { key: 'k-network-probe', value: 'probe' } as const;
export const HASH_HEADER = 'k-network-hash';

/** The parts of Envoy's configuration (proto field names, as xds-dump prints them) a probe's answer depends on. */
interface StringMatch { exact?: string; prefix?: string; suffix?: string; contains?: string; safe_regex?: { regex: string }; ignore_case?: boolean }
interface HeaderMatcher { name: string; string_match?: StringMatch; present_match?: boolean; invert_match?: boolean }
interface HeaderToAdd { header: { key: string; value: string }; append_action?: string; append?: boolean }
interface WithHeaders { request_headers_to_add?: HeaderToAdd[]; request_headers_to_remove?: string[] }
interface Route extends WithHeaders {
  match: { prefix?: string; path?: string; path_separated_prefix?: string; safe_regex?: { regex: string }; case_sensitive?: boolean; headers?: HeaderMatcher[] };
  route?: { cluster?: string; weighted_clusters?: { clusters: Array<{ name: string; weight?: number } & WithHeaders> } };
  direct_response?: { status: number };
  redirect?: object;
}
interface VirtualHost extends WithHeaders { name: string; domains: string[]; routes?: Route[] }
interface RouteConfiguration extends WithHeaders { name: string; virtual_hosts?: VirtualHost[] }
export interface GatewayConfig {
  listeners: Array<{ name: string; port: number; routeConfigNames: string[] }>;
  clusters: string[];
  routes: RouteConfiguration[];
}

export interface ProbeRequest { port: number; host: string; path: string; headers: IncomingHttpHeaders }
export interface ProbeAnswer { status: number; headers: Record<string, string>; why: string }

/**
 * How Envoy with `config`, then the revision's probe handler, answer `req`.
 * Envoy picks one weighted cluster at random; the first with weight is taken
 * here (Knative's hash is set on the route, the same for all of them).
 */
export function answerProbe(config: GatewayConfig, req: ProbeRequest): ProbeAnswer {
  const notFound = (why: string): ProbeAnswer => ({ status: 404, headers: {}, why });
  const listener = config.listeners.find((l) => l.port === req.port);
  if (!listener) return notFound(`no listener on port ${req.port}`);
  const host = req.host.replace(/:\d+$/, '').toLowerCase();
  const rcs = config.routes.filter((rc) => listener.routeConfigNames.includes(rc.name));
  for (const rc of rcs) {
    const vh = virtualHostFor(rc.virtual_hosts ?? [], host);
    if (!vh) continue;
    const route = (vh.routes ?? []).find((r) => routeMatches(r, req));
    if (!route) return notFound(`no route of ${rc.name}/${vh.name} matches ${req.path}`);
    if (route.direct_response) return { status: route.direct_response.status, headers: {}, why: 'a direct response' };
    if (!route.route) return { status: 301, headers: {}, why: 'a redirect' };
    const weighted = route.route.weighted_clusters?.clusters.find((c) => (c.weight ?? 0) > 0);
    const cluster = route.route.cluster ?? weighted?.name;
    if (!cluster || !config.clusters.includes(cluster)) return { status: 503, headers: {}, why: `cluster ${cluster ?? '(none)'} unknown to the proxy` };
    // Envoy's default order: the most specific level first, so the route configuration's own headers win a conflict.
    const sent = applyHeaders(req.headers, [weighted ?? {}, route, vh, rc]);
    const isProbe = sent[PROBE_HEADER.key] === PROBE_HEADER.value;
    if (!isProbe) return { status: 503, headers: {}, why: `SIMULATED gateway: only Knative's readiness probes are answered (no container behind ${cluster})` };
    const hash = sent[HASH_HEADER];
    if (!hash) return { status: 400, headers: {}, why: `a probe request must contain a non-empty ${HASH_HEADER} header` };
    return { status: 200, headers: { [HASH_HEADER]: hash }, why: `routed to ${cluster}` };
  }
  return notFound(`no virtual host for ${host} on port ${req.port}`);
}

/** Envoy's virtual host selection: an exact domain, then the longest `*suffix`, then the longest `prefix*`, then `*`. */
function virtualHostFor(vhs: VirtualHost[], host: string): VirtualHost | undefined {
  const withoutPort = (d: string) => d.toLowerCase().replace(/:\*$/, '');
  const exact = vhs.find((vh) => vh.domains.some((d) => withoutPort(d) === host));
  if (exact) return exact;
  let best: { vh: VirtualHost; len: number; kind: number } | undefined;
  for (const vh of vhs) {
    for (const raw of vh.domains) {
      const d = withoutPort(raw);
      const kind = d === '*' ? 0 : d.startsWith('*') && host.endsWith(d.slice(1)) ? 2 : d.endsWith('*') && host.startsWith(d.slice(0, -1)) ? 1 : -1;
      if (kind < 0) continue;
      if (!best || kind > best.kind || (kind === best.kind && d.length > best.len)) best = { vh, len: d.length, kind };
    }
  }
  return best?.vh;
}

function routeMatches(r: Route, req: ProbeRequest): boolean {
  const m = r.match;
  const path = req.path.split('?')[0] ?? '/';
  const cs = m.case_sensitive ?? true;
  const eq = (a: string, b: string) => (cs ? a === b : a.toLowerCase() === b.toLowerCase());
  const pathOk = m.prefix !== undefined ? (cs ? path.startsWith(m.prefix) : path.toLowerCase().startsWith(m.prefix.toLowerCase()))
    : m.path !== undefined ? eq(path, m.path)
      : m.path_separated_prefix !== undefined ? eq(path, m.path_separated_prefix) || path.startsWith(`${m.path_separated_prefix}/`)
        : m.safe_regex !== undefined ? new RegExp(`^(?:${m.safe_regex.regex})$`).test(path)
          : false;
  return pathOk && (m.headers ?? []).every((h) => headerMatches(h, req.headers));
}

function headerMatches(h: HeaderMatcher, headers: IncomingHttpHeaders): boolean {
  const raw = headers[h.name.toLowerCase()];
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  let ok: boolean;
  if (h.present_match !== undefined) ok = (value !== undefined) === h.present_match;
  else if (value === undefined) ok = false;
  else {
    const s = h.string_match ?? {};
    const v = s.ignore_case ? value.toLowerCase() : value;
    const norm = (x: string) => (s.ignore_case ? x.toLowerCase() : x);
    ok = s.exact !== undefined ? v === norm(s.exact)
      : s.prefix !== undefined ? v.startsWith(norm(s.prefix))
        : s.suffix !== undefined ? v.endsWith(norm(s.suffix))
          : s.contains !== undefined ? v.includes(norm(s.contains))
            : s.safe_regex !== undefined ? new RegExp(`^(?:${s.safe_regex.regex})$`).test(value)
              : true;
  }
  return h.invert_match ? !ok : ok;
}

/** The request headers after each level's removals and additions, most specific level first. */
function applyHeaders(incoming: IncomingHttpHeaders, levels: WithHeaders[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(incoming)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(',') : v;
  for (const level of levels) {
    for (const k of level.request_headers_to_remove ?? []) delete out[k.toLowerCase()];
    for (const { header, append_action: action, append } of level.request_headers_to_add ?? []) {
      const k = header.key.toLowerCase();
      const appends = action === undefined ? append !== false : action === 'APPEND_IF_EXISTS_OR_ADD';
      if (action === 'ADD_IF_ABSENT' && k in out) continue;
      out[k] = appends && k in out ? `${out[k]},${header.value}` : header.value;
    }
  }
  return out;
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
        const answer = answerProbe(c, { port, host: req.headers.host ?? '', path: req.url ?? '/', headers: req.headers });
        if (answer.status !== 200) log(`${answer.status} ${req.headers.host}${req.url} on :${port}: ${answer.why}`);
        res.writeHead(answer.status, answer.headers).end(answer.status === 200 ? '' : `${answer.why}\n`);
      });
    }).listen(port, () => log(`SIMULATED gateway data plane answering Knative's probes on :${port}`));
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
}
