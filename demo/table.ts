// Pure text rendering for the demo: the ServerlessApps as `kubectl get sapp -o
// wide` prints them, each app's revisions with their traffic and replicas, a
// VirtualService's or an HTTPRoute's routes, and demo-clock times in Berlin. No colours: the
// output must read the same in a terminal, a log file and a test assertion.

import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { findCondition } from '../src/util/conditions.ts';

/** What the demo shows of one Knative Revision. */
export interface RevisionRow {
  name: string;
  percent: number;
  tag?: string;
  minScale?: string;
  replicas?: number;
}

export interface HttpRoute {
  name?: string;
  match?: Array<{ headers?: Record<string, Record<string, string>> }>;
  rewrite?: { authority?: string };
  route?: Array<{ weight?: number; headers?: { request?: { set?: Record<string, string> } } }>;
}

/** What the demo shows of a Gateway API HTTPRoute: its rules' matches and weighted backends, and the status its parents' controller (istiod) wrote. */
export interface GatewayHttpRoute {
  metadata: { generation?: number };
  spec: {
    parentRefs?: Array<{ namespace?: string; name: string }>;
    hostnames?: string[];
    rules?: Array<{
      name?: string;
      matches?: Array<{ headers?: Array<{ type?: string; name: string; value: string }> }>;
      backendRefs?: Array<{ name: string; weight?: number }>;
      filters?: Array<{ type: string; requestMirror?: { backendRef: { name: string }; percent?: number } }>;
    }>;
  };
  status?: { parents?: Array<{ parentRef: { namespace?: string; name: string }; controllerName?: string; conditions?: Array<{ type: string; status: string; reason?: string; observedGeneration?: number }> }> };
}

/** Said wherever the demo shows routes: what a user might otherwise take for traffic. */
export const ROUTES_SIMULATED = 'SIMULATED data plane: no Envoy runs, so no request is proxied along these routes; the split is what the route '
  + 'asks and Knative reports, not measured traffic (the only requests answered are warmups and checks, by the demo\'s loopback stand-ins)';

/** Columns padded to their widest cell, three spaces apart, as kubectl aligns them. */
export function formatTable(header: string[], rows: string[][], indent = ''): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => (indent + cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('   ')).trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** An unset field prints as an empty cell, as kubectl prints printer columns. */
const cell = (v: string | number | undefined) => (v === undefined ? '' : String(v));

/**
 * `kubectl get sapp -o wide`, with this project's printer columns in their
 * order; the version hashes (Version, Candidate Version) and Age are left out
 * to keep the table readable (Age means little on the demo clock).
 */
export function formatApps(apps: ServerlessApp[]): string {
  const rows = [...apps]
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
    .map((a) => {
      const s = a.status;
      const ready = findCondition(s?.conditions, 'Ready');
      return [
        a.metadata.name,
        cell(ready?.status),
        cell(findCondition(s?.conditions, 'Reconciling')?.reason),
        cell(findCondition(s?.conditions, 'Stalled')?.reason),
        cell(s?.phase),
        cell(s?.versions?.stable?.summary),
        cell(s?.versions?.candidate?.summary),
        cell(s?.canary?.trafficPercent),
        cell(s?.scaling?.minScale),
        cell(s?.scaling?.maxScale),
        cell(s?.url),
        cell(ready?.reason),
      ];
    });
  return formatTable(['NAME', 'READY', 'RECONCILING', 'STALLED', 'PHASE', 'STABLE', 'CANDIDATE', 'WEIGHT', 'MIN', 'MAX', 'URL', 'REASON'], rows);
}

/** One app's revisions, those with traffic first; idle ones show 0%. */
export function formatRevisions(app: string, revisions: RevisionRow[]): string {
  const rows = [...revisions]
    .sort((a, b) => b.percent - a.percent || a.name.localeCompare(b.name))
    .map((r) => [r.name, `${r.percent}%`, cell(r.tag), cell(r.minScale), cell(r.replicas)]);
  return `  ${app}: revisions (traffic shares and replicas as Knative reports them: no request flows, the pods are KWOK's and run no container)\n`
    + formatTable(['REVISION', 'TRAFFIC', 'TAG', 'MIN-SCALE', 'REPLICAS'], rows, '    ');
}

/** A VirtualService's HTTP routes in order: which requests go where. */
export function formatRoutes(name: string, routes: HttpRoute[]): string {
  const rows = routes.map((r) => [
    cell(r.name),
    r.match?.length ? r.match.map(describeMatch).join(' or ') : '(all other requests)',
    // A sticky split names each destination's authority (its version's tag host) with its weight.
    `-> ${r.rewrite?.authority ?? (r.route ?? []).map((d) => `${d.headers?.request?.set?.[':authority'] ?? '?'} ${d.weight ?? 100}%`).join(', ')}`,
  ]);
  return `  VirtualService ${name}: HTTP routes, first match wins\n` + formatTable(['ROUTE', 'MATCH', 'DESTINATION (authority)'], rows, '    ');
}

/** An HTTPRoute's rules with their weighted backends, then what istiod (its parents' controller) says about it. */
export function formatHttpRoute(name: string, route: GatewayHttpRoute): string {
  const rows = (route.spec.rules ?? []).map((r) => {
    const headers = (r.matches ?? []).filter((m) => m.headers?.length)
      .map((m) => m.headers!.map((h) => `${h.name} ${h.type === 'RegularExpression' ? 'regex' : 'exact'} "${h.value}"`).join(' and '));
    const mirror = (r.filters ?? []).find((f) => f.type === 'RequestMirror')?.requestMirror;
    return [
      cell(r.name),
      headers.length ? headers.join(' or ') : '(all other requests)',
      (r.backendRefs ?? []).map((b) => `${b.name} ${b.weight ?? 1}`).join(', ') + (mirror ? `; mirror ${mirror.percent ?? 100}% to ${mirror.backendRef.name}` : ''),
    ];
  });
  const parents = (route.status?.parents ?? []).map((p) => {
    const conditions = (p.conditions ?? []).filter((c) => c.type === 'Accepted' || c.type === 'ResolvedRefs')
      .map((c) => `${c.type}=${c.status} (${c.reason ?? ''}${c.observedGeneration !== undefined ? `, generation ${c.observedGeneration}` : ''})`);
    return `    parent Gateway ${p.parentRef.namespace ?? ''}/${p.parentRef.name}: ${conditions.join(', ') || 'no condition yet'}${p.controllerName ? ` (written by ${p.controllerName})` : ''}`;
  });
  return `  HTTPRoute ${name} (generation ${route.metadata.generation ?? '?'}): rules, the most specific match wins\n`
    + formatTable(['RULE', 'MATCH', 'BACKENDS (revision Service, weight)'], rows, '    ')
    + `\n  status.parents, as istiod wrote it:\n${parents.join('\n') || '    (none yet)'}`;
}

function describeMatch(m: { headers?: Record<string, Record<string, string>> }): string {
  return Object.entries(m.headers ?? {})
    .map(([header, rule]) => Object.entries(rule).map(([op, value]) => `${header} ${op} "${value}"`).join(', '))
    .join(' and ');
}

const berlin = new Intl.DateTimeFormat('en-GB', {
  timeZone: 'Europe/Berlin', weekday: 'short', day: '2-digit', month: 'short', year: 'numeric',
  hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false,
});

/** "Mon, 23 Nov 2026, 07:59:30 Berlin": how the demo clock is shown. */
export function berlinTime(d: Date): string {
  return `${berlin.format(d)} Berlin`;
}
