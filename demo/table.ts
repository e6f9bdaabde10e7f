// Pure text rendering for the demo: the ServerlessApps as `kubectl get sapp -o
// wide` prints them, each app's revisions with their traffic and replicas, a
// VirtualService's routes, and demo-clock times in Berlin. No colours: the
// output must read the same in a terminal, a log file and a test assertion.

import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';

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
}

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
      const ready = s?.conditions?.find((c) => c.type === 'Ready');
      return [
        a.metadata.name,
        cell(ready?.status),
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
  return formatTable(['NAME', 'READY', 'PHASE', 'STABLE', 'CANDIDATE', 'WEIGHT', 'MIN', 'MAX', 'URL', 'REASON'], rows);
}

/** One app's revisions, those with traffic first; idle ones show 0%. */
export function formatRevisions(app: string, revisions: RevisionRow[]): string {
  const rows = [...revisions]
    .sort((a, b) => b.percent - a.percent || a.name.localeCompare(b.name))
    .map((r) => [r.name, `${r.percent}%`, cell(r.tag), cell(r.minScale), cell(r.replicas)]);
  return `  ${app}: revisions (traffic and replicas as Knative reports them; the pods are KWOK's)\n`
    + formatTable(['REVISION', 'TRAFFIC', 'TAG', 'MIN-SCALE', 'REPLICAS'], rows, '    ');
}

/** A VirtualService's HTTP routes in order: which requests go where. */
export function formatRoutes(name: string, routes: HttpRoute[]): string {
  const rows = routes.map((r) => [
    cell(r.name),
    r.match?.length ? r.match.map(describeMatch).join(' or ') : '(all other requests)',
    `-> ${r.rewrite?.authority ?? '?'}`,
  ]);
  return `  VirtualService ${name}: HTTP routes, first match wins\n` + formatTable(['ROUTE', 'MATCH', 'DESTINATION (authority)'], rows, '    ');
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
