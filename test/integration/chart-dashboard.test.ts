// The chart's Grafana dashboard. Every query of every panel and template
// variable parses as PromQL (Prometheus' own grammar) and names only metrics
// the operator registers, and every serverlessapp_* metric has a panel; the
// chart wraps the dashboard in a ConfigMap for Grafana's sidecar only when
// asked. Needs helm but no control plane:
// ENVTEST=off node test/run.ts test/integration/chart-dashboard.test.ts
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { RolloutMetrics } from '../../src/controllers/rollout-metrics.ts';
import { OperatorMetrics } from '../../src/runtime/metrics.ts';
import { CHART_DIR, HelmError, renderChart, templateChart } from '../support/helm.ts';

interface Target { expr: string; refId: string }
interface Panel { id: number; type: string; title: string; datasource?: { uid: string }; targets?: Target[]; panels?: Panel[] }
interface Variable { name: string; type: string; query: string | { query: string } }
interface Dashboard { panels: Panel[]; templating: { list: Variable[] } }

const DASHBOARD_FILE = join(CHART_DIR, 'dashboards', 'serverlessapp.json');
const dashboardText = readFileSync(DASHBOARD_FILE, 'utf8');
const dashboard = JSON.parse(dashboardText) as Dashboard;
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

/** Every metric name the operator exports, from the registry its own metrics classes build (histograms as _bucket, _sum, _count). */
async function exportedMetrics(): Promise<Set<string>> {
  const metrics = new OperatorMetrics();
  new RolloutMetrics(metrics.registry);
  const names = (await metrics.registry.getMetricsAsJSON()).flatMap((m) =>
    String(m.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => m.name + s) : [m.name]);
  return new Set(names);
}

/** Grafana's interval macros stand where PromQL wants a duration; any other $variable must sit inside a label matcher's string. */
const withGrafanaMacros = (query: string) => query.replace(/\$(__\w+|\{__\w+\})/g, '5m');

/** Grafana's `label_values(selector, label)` query: the selector is PromQL. */
function variablePromql(query: string): string {
  const m = /^label_values\((.+),\s*[A-Za-z_]\w*\)$/.exec(query.trim());
  if (!m) throw new Error(`not a label_values(selector, label) query: ${query}`);
  return m[1]!;
}

/** The metric names `expr` selects; throws where it does not parse or a selector does not name its metric. */
function selectedMetrics(expr: string): string[] {
  const text = withGrafanaMacros(expr);
  const names: string[] = [];
  const problems: string[] = [];
  parser.parse(text).iterate({
    enter: (node) => {
      if (node.type.isError) problems.push(`syntax error at ${node.from}: ${JSON.stringify(text.slice(node.from, node.from + 20))}`);
      if (node.name !== 'VectorSelector') return;
      const identifier = node.node.getChild('Identifier');
      if (identifier) names.push(text.slice(identifier.from, identifier.to));
      else problems.push(`a selector without a metric name: ${text.slice(node.from, node.to)}`);
    },
  });
  if (problems.length) throw new Error(`${expr}: ${problems.join('; ')}`);
  return names;
}

/** Why `expr` does not fit the operator's metrics, or undefined when it does. */
function queryProblem(expr: string, exported: Set<string>): string | undefined {
  try {
    const names = selectedMetrics(expr);
    if (names.length === 0) return `${expr}: selects no metric`;
    const unknown = names.filter((n) => !exported.has(n));
    return unknown.length ? `${expr}: the operator exports no ${unknown.join(', ')}` : undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const panelQueries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr })));
const variableQueries = dashboard.templating.list.filter((v) => v.type === 'query').map((v) => ({
  where: `variable $${v.name}`, expr: variablePromql(typeof v.query === 'string' ? v.query : v.query.query),
}));

describe('Grafana dashboard: queries', () => {
  let exported: Set<string>;
  before(async () => { exported = await exportedMetrics(); });

  it('parses every panel and variable query and names only metrics the operator exports', () => {
    assert.ok(panelQueries.length >= 20, `${panelQueries.length} panel queries`);
    const problems = [...panelQueries, ...variableQueries].map((q) => [q.where, queryProblem(q.expr, exported)]).filter(([, p]) => p);
    assert.deepEqual(problems, []);
  });

  it('charts every serverlessapp_* metric the operator exports', () => {
    const charted = new Set(panelQueries.flatMap((q) => selectedMetrics(q.expr)).map((n) => n.replace(/_(bucket|sum|count)$/, '')));
    const own = [...exported].filter((n) => n.startsWith('serverlessapp_')).map((n) => n.replace(/_(bucket|sum|count)$/, ''));
    assert.deepEqual([...new Set(own)].filter((n) => !charted.has(n)), []);
  });

  it('reads every panel from the $datasource variable, with ids unique', () => {
    const queried = panels.filter((p) => p.targets);
    assert.deepEqual(queried.filter((p) => p.datasource?.uid !== '${datasource}').map((p) => p.title), []);
    assert.equal(new Set(panels.map((p) => p.id)).size, panels.length);
    assert.deepEqual(dashboard.templating.list.map((v) => v.name), ['datasource', 'job', 'namespace', 'app']);
  });

  const cases: Array<[string, string, RegExp | undefined]> = [
    ['a histogram quantile over the buckets', 'histogram_quantile(0.99, sum by (le) (rate(controller_runtime_reconcile_time_seconds_bucket{job=~"$job"}[$__rate_interval])))', undefined],
    ['a gauge with the app filters', 'max by (namespace, name) (serverlessapp_canary_weight{namespace=~"$namespace", name=~"$app"})', undefined],
    ['a metric the operator does not export', 'sum(rate(serverlessapp_reconcile_attempts_total[5m]))', /exports no serverlessapp_reconcile_attempts_total/],
    ['a histogram by its base name', 'rate(serverlessapp_warmup_duration_seconds[5m])', /exports no serverlessapp_warmup_duration_seconds$/],
    ['a counter with a histogram suffix', 'serverlessapp_rollouts_total_count', /exports no serverlessapp_rollouts_total_count/],
    ['one unknown metric beside a known one', 'workqueue_depth / workqueue_depth_max', /exports no workqueue_depth_max$/],
    ['a syntax error', 'sum(rate(workqueue_adds_total[5m])', /syntax error/],
    ['a template variable outside a string', 'rate(workqueue_adds_total[$window])', /syntax error/],
    ['a selector by __name__ only', '{__name__="workqueue_depth"}', /without a metric name/],
    ['no metric at all', 'vector(1)', /selects no metric/],
  ];
  for (const [name, expr, want] of cases) {
    it(`${want ? 'refuses' : 'accepts'} ${name}`, () => {
      const problem = queryProblem(expr, exported);
      if (want) assert.match(problem ?? '(accepted)', want);
      else assert.equal(problem, undefined);
    });
  }

  it('reads the selector of a label_values variable and refuses any other variable query', () => {
    assert.equal(variablePromql('label_values(serverlessapp_canary_weight{job=~"$job"}, namespace)'), 'serverlessapp_canary_weight{job=~"$job"}');
    assert.throws(() => variablePromql('query_result(up)'), /not a label_values/);
  });
});

describe('Grafana dashboard: the chart', function () {
  this.timeout(600_000);
  const dashboards = (objects: Awaited<ReturnType<typeof renderChart>>) => objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard'));

  it('renders no dashboard by default', async () => {
    assert.deepEqual(dashboards(await renderChart()), []);
  });

  it('renders the dashboard file in a ConfigMap with the sidecar\'s default label when enabled', async () => {
    const [cm, ...more] = dashboards(await renderChart({ dashboard: { enabled: true } }));
    assert.ok(cm, 'a dashboard ConfigMap');
    assert.equal(more.length, 0);
    assert.equal(cm.metadata.name, 'sapp-serverlessapp-operator-dashboard');
    assert.equal(cm.metadata.namespace, 'serverlessapp-system');
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    assert.deepEqual(JSON.parse((cm.data as Record<string, string>)['serverlessapp-operator.json']!), dashboard);
  });

  it('takes the label, its value, the namespace and annotations from the values', async () => {
    const [cm] = dashboards(await renderChart({ dashboard: { enabled: true, label: 'example.com/dashboard', labelValue: 'ops', namespace: 'monitoring', annotations: { grafana_folder: 'Operators' } } }));
    assert.equal(cm?.metadata.namespace, 'monitoring');
    assert.equal(cm?.metadata.labels?.['example.com/dashboard'], 'ops');
    assert.equal(cm?.metadata.labels?.grafana_dashboard, undefined);
    assert.deepEqual((cm as unknown as { metadata: { annotations: object } }).metadata.annotations, { grafana_folder: 'Operators' });
  });

  it('refuses a label that is not a Kubernetes label', async () => {
    const r = await templateChart({ dashboard: { enabled: true, label: 'grafana dashboard' } });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /at '\/dashboard\/label'/);
    await assert.rejects(renderChart({ dashboard: { enabled: 'yes' } }), (err: Error) => err instanceof HelmError && /\/dashboard\/enabled/.test(err.message));
  });

  it('keeps the app\'s namespace label on scrape, which the dashboard filters on', async () => {
    const objects = await renderChart({ metrics: { serviceMonitor: { enabled: true } } });
    const sm = objects.find((o) => o.kind === 'ServiceMonitor') as unknown as { spec: { endpoints: Array<{ honorLabels?: boolean }> } };
    assert.equal(sm.spec.endpoints[0]?.honorLabels, true);
    assert.match(dashboardText, /namespace=~\\"\$namespace\\"/);
  });
});
