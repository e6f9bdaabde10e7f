// Runs an app's metric checks: instant PromQL queries over the Prometheus HTTP
// API, each one bounded outbound call (runtime/outbound.ts). What may be asked,
// of whom, and what may be said of the answer are api/v1alpha1/analysis-target.ts's and rollout/analysis.ts's rules;
// this file only sends the queries and reads the answers.

import { OutboundError, describeStatus, excerpt, outboundRequest } from '../runtime/outbound.ts';
import type { TimerClock } from '../runtime/clock.ts';
import type { AnalysisOutcome } from '../rollout/canary.ts';
import { analysisTarget, DEFAULT_ANALYSIS_POLICY, type Analysis, type AnalysisPolicy } from '../api/v1alpha1/analysis-target.ts';
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

/**
 * Runs every check against the app's target; the first without data halts the round. `clock`: what each
 * query's deadline runs on (tests step a manual one); `cancel`: ends the round's request at once.
 */
export async function runChecks(analysis: Analysis, vars: QueryVars, policy: AnalysisPolicy = DEFAULT_ANALYSIS_POLICY, limits: AnalysisLimits = {}, clock?: TimerClock, cancel?: AbortSignal): Promise<AnalysisOutcome> {
  const target = analysisTarget(analysis, policy);
  if (!('url' in target)) return { result: 'nodata', message: `${target.field}: ${target.message}` };
  const bounds = { timeoutMs: limits.timeoutMs ?? ANALYSIS_TIMEOUT_MS, maxBytes: limits.maxBytes ?? ANALYSIS_MAX_BYTES };
  const failures: string[] = [];
  const passes: string[] = [];
  for (const check of analysis.checks) {
    const r = await instantQuery(target, renderQuery(check.query, vars), vars.namespace, bounds, clock, cancel);
    if ('nodata' in r) return { result: 'nodata', message: `check ${check.name}: ${r.nodata}` };
    const low = check.min ?? -Infinity;
    const high = check.max ?? Infinity;
    const range = `[${check.min ?? '-inf'}, ${check.max ?? '+inf'}]`;
    if (r.value < low || r.value > high) failures.push(`${check.name} outside ${range}`);
    else passes.push(`${check.name} within ${range}`);
  }
  return failures.length
    ? { result: 'fail', message: failures.join('; ') }
    : { result: 'pass', message: `checks passed: ${passes.join(', ')}` };
}
