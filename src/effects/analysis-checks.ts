// Runs an app's metric checks: instant PromQL queries over the Prometheus HTTP
// API, each one bounded outbound call (runtime/outbound.ts). What may be asked,
// of whom, and what may be said of the answer are api/v1alpha1/analysis-target.ts's and rollout/analysis.ts's rules;
// this file only sends the queries and reads the answers.

import { OutboundError, describeStatus, excerpt, outboundRequest } from '../runtime/outbound.ts';
import type { TimerClock } from '../runtime/clock.ts';
import type { AnalysisOutcome } from '../rollout/canary.ts';
import { analysisTarget, DEFAULT_ANALYSIS_POLICY, type Analysis, type AnalysisPolicy } from '../api/v1alpha1/analysis-target.ts';
import { burnRatePairs, errorRatioOf, formatBurn, gateWindows, judgeBurn, remainingBudget, type Slo } from '../rollout/slo.ts';
import { SLO_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { ANALYSIS_MAX_BYTES, ANALYSIS_TIMEOUT_MS, queryUrl, renderQuery, type AnalysisLimits, type QueryVars } from '../rollout/analysis.ts';

type QueryResult = { value: number } | { nodata: string };

async function instantQuery(target: { url: URL; label: string }, query: string, namespace: string, limits: Required<AnalysisLimits>, clock: TimerClock | undefined, cancel: AbortSignal | undefined): Promise<QueryResult> {
  let status: number;
  let text: string;
  try {
    ({ status, body: text } = await outboundRequest({ url: queryUrl(target.url, query, namespace), headers: { accept: 'application/json' }, deadlineMs: limits.timeoutMs, maxBytes: limits.maxBytes, ...(clock ? { clock } : {}), ...(cancel ? { cancel } : {}) }));
  } catch (e) {
    return { nodata: `no answer from Prometheus (${target.label}): ${e instanceof OutboundError ? e.message : 'request failed'}` };
  }
  let body: { status?: unknown; error?: unknown; errorType?: unknown; data?: { resultType?: unknown; result?: unknown } } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  if (status !== 200 || body?.status !== 'success') {
    const said = typeof body?.error === 'string' && body.errorType === 'bad_data' ? `: ${excerpt(body.error)}` : body === undefined ? ' (not a Prometheus answer)' : '';
    return { nodata: `query failed: ${describeStatus(status)}${said}` };
  }
  const r = body.data?.result;
  const raw: unknown = body.data?.resultType === 'scalar' && Array.isArray(r) ? r[1]
    : Array.isArray(r) && r.length > 0 ? (r[0] as { value?: unknown[] } | undefined)?.value?.[1] : undefined;
  if (raw === undefined) return { nodata: 'query returned no data' };
  const value = typeof raw === 'string' || typeof raw === 'number' ? Number(raw) : NaN;
  return Number.isFinite(value) ? { value } : { nodata: 'query returned something other than a finite number' };
}

interface Round {
  target: { url: URL; label: string; scoped?: boolean };
  vars: QueryVars;
  bounds: Required<AnalysisLimits>;
  clock: TimerClock | undefined;
  cancel: AbortSignal | undefined;
}

/** One query of the round, its template rendered with the round's variables (and a window). */
function ask(r: Round, template: string, window?: string): Promise<QueryResult> {
  return instantQuery(r.target, renderQuery(template, { ...r.vars, ...(window ? { window } : {}) }), r.vars.namespace, r.bounds, r.clock, r.cancel);
}

/** The SLO's error ratio over `window`: its errorRatio query, or 1 - good/total. */
async function errorRatioOver(r: Round, slo: Slo, window: string): Promise<{ value: number } | { nodata: string }> {
  if (slo.errorRatio !== undefined) return ratioQuery(r, slo.errorRatio, window);
  const good = await ask(r, slo.good!, window);
  if ('nodata' in good) return { nodata: `good: ${good.nodata}` };
  const total = await ask(r, slo.total!, window);
  if ('nodata' in total) return { nodata: `total: ${total.nodata}` };
  const value = errorRatioOf(good.value, total.value);
  return value === undefined ? { nodata: 'no requests in the window (total is 0)' } : { value };
}

/** A query answering an error ratio: clamped to [0, 1]; no data says how Prometheus answers an empty numerator. */
async function ratioQuery(r: Round, template: string, window: string): Promise<{ value: number } | { nodata: string }> {
  const q = await ask(r, template, window);
  if (!('nodata' in q)) return { value: Math.min(1, Math.max(0, q.value)) };
  const hint = /or\s+vector\(0\)/.test(template) ? '' : ' (with no error in the window Prometheus has no series to sum: write the numerator as (sum(...) or vector(0)))';
  return { nodata: `${q.nodata}${hint}` };
}

function start(analysis: Analysis, vars: QueryVars, policy: AnalysisPolicy, limits: AnalysisLimits, clock?: TimerClock, cancel?: AbortSignal): Round | AnalysisOutcome {
  const target = analysisTarget(analysis, policy);
  if (!('url' in target)) return { result: 'nodata', message: `${target.field}: ${target.message}` };
  return { target, vars, bounds: { timeoutMs: limits.timeoutMs ?? ANALYSIS_TIMEOUT_MS, maxBytes: limits.maxBytes ?? ANALYSIS_MAX_BYTES }, clock, cancel };
}

/**
 * One round: the SLO's burn-rate gates first (a fast burn fails the candidate at once), then every
 * check; the first query without data halts the round. `clock`: what each query's deadline runs on
 * (tests step a manual one); `cancel`: ends the round's requests at once. Values reach the message
 * only from a provider the platform confines to the namespace (AnalysisProvider.scoped).
 */
export async function runChecks(analysis: Analysis, vars: QueryVars, policy: AnalysisPolicy = DEFAULT_ANALYSIS_POLICY, limits: AnalysisLimits = {}, clock?: TimerClock, cancel?: AbortSignal): Promise<AnalysisOutcome> {
  const r = start(analysis, vars, policy, limits, clock, cancel);
  if ('result' in r) return r;
  const passes: string[] = [];
  if (analysis.slo) {
    const slo = analysis.slo;
    const ratios = new Map<string, number>();
    for (const window of gateWindows(slo)) {
      const q = await errorRatioOver(r, slo, window);
      if ('nodata' in q) return { result: 'nodata', message: `slo over ${window}: ${q.nodata}` };
      ratios.set(window, q.value);
    }
    const { fired } = judgeBurn(slo, ratios);
    if (fired) {
      const { pair } = fired;
      const figures = r.target.scoped ? ` (${formatBurn(fired.long)} and ${formatBurn(fired.short)})` : '';
      return { result: 'fail', burn: true, message: `error budget burning faster than ${pair.factor}x over both ${pair.long} and ${pair.short}${figures} (objective ${slo.objective}%)` };
    }
    passes.push(`burn rates within ${burnRatePairs(slo).map((p) => `${p.factor}x over ${p.long}/${p.short}`).join(', ')}`);
  }
  const failures: string[] = [];
  for (const check of analysis.checks ?? []) {
    const q = await ask(r, check.query);
    if ('nodata' in q) return { result: 'nodata', message: `check ${check.name}: ${q.nodata}` };
    const low = check.min ?? -Infinity;
    const high = check.max ?? Infinity;
    const range = `[${check.min ?? '-inf'}, ${check.max ?? '+inf'}]`;
    if (q.value < low || q.value > high) failures.push(`${check.name} outside ${range}${r.target.scoped ? ` (${q.value})` : ''}`);
    else passes.push(`${check.name} within ${range}`);
  }
  return failures.length
    ? { result: 'fail', message: failures.join('; ') }
    : { result: 'pass', message: `checks passed: ${passes.join(', ')}` };
}

/**
 * Reads the remaining error budget for the release freeze: the SLO's error ratio over its whole window
 * for `vars.version` (the version serving all traffic). The outcome is a reading, judged by the rollout.
 */
export async function readBudget(analysis: Analysis, vars: QueryVars, policy: AnalysisPolicy = DEFAULT_ANALYSIS_POLICY, limits: AnalysisLimits = {}, clock?: TimerClock, cancel?: AbortSignal): Promise<AnalysisOutcome> {
  const slo = analysis.slo;
  if (!slo) return { result: 'nodata', message: 'no slo to read a budget from' };
  const r = start(analysis, vars, policy, limits, clock, cancel);
  if ('result' in r) return r;
  const window = slo.window ?? SLO_DEFAULTS.window;
  const q = slo.budgetErrorRatio !== undefined ? await ratioQuery(r, slo.budgetErrorRatio, window) : await errorRatioOver(r, slo, window);
  if ('nodata' in q) return { result: 'nodata', message: `error budget over ${window}: ${q.nodata}` };
  return { result: 'pass', message: `error budget read over ${window}`, budget: { remaining: remainingBudget(q.value, slo.objective), shown: !!r.target.scoped } };
}
