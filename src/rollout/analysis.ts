// Metric checks for automated rollout steps: instant PromQL queries over the
// Prometheus HTTP API (axios). An empty result, NaN or an unreachable server is
// "no data", which halts the rollout: no data is not a pass (flagger#1035).

import axios, { type AxiosInstance } from 'axios';
import type { RolloutSpec } from '../api/v1alpha1/serverlessapp.ts';
import type { AnalysisOutcome } from './canary.ts';

export type Analysis = NonNullable<RolloutSpec['analysis']>;

export interface QueryVars { app: string; namespace: string; revision: string; version: string }

export function renderQuery(query: string, vars: QueryVars): string {
  return query.replace(/\{\{\s*(app|namespace|revision|version)\s*\}\}/g, (_, k: keyof QueryVars) => vars[k]);
}

type QueryResult = { value: number } | { nodata: string };

async function instantQuery(http: AxiosInstance, address: string, query: string, timeoutMs: number): Promise<QueryResult> {
  try {
    const res = await http.get(`${address.replace(/\/$/, '')}/api/v1/query`, { params: { query }, timeout: timeoutMs, validateStatus: () => true });
    const body = res.data as { status?: string; error?: string; data?: { resultType?: string; result?: unknown } };
    if (res.status !== 200 || body?.status !== 'success') return { nodata: `query failed: HTTP ${res.status}${body?.error ? `: ${body.error}` : ''}` };
    const r = body.data?.result;
    const raw = body.data?.resultType === 'scalar' ? (r as [number, string])[1]
      : Array.isArray(r) && r.length > 0 ? (r[0] as { value?: [number, string] }).value?.[1] : undefined;
    if (raw === undefined) return { nodata: 'query returned no data' };
    const value = Number(raw);
    return Number.isFinite(value) ? { value } : { nodata: `query returned ${raw}` };
  } catch (e) {
    return { nodata: `Prometheus unreachable: ${(e as Error).message}` };
  }
}

export async function runChecks(analysis: Analysis, vars: QueryVars, http: AxiosInstance = axios.create(), timeoutMs = 5000): Promise<AnalysisOutcome> {
  const failures: string[] = [];
  const passes: string[] = [];
  for (const check of analysis.checks) {
    const r = await instantQuery(http, analysis.prometheus.address, renderQuery(check.query, vars), timeoutMs);
    if ('nodata' in r) return { result: 'nodata', message: `check ${check.name}: ${r.nodata}` };
    const low = check.min ?? -Infinity;
    const high = check.max ?? Infinity;
    if (r.value < low || r.value > high) failures.push(`${check.name}=${r.value} outside [${check.min ?? '-inf'}, ${check.max ?? '+inf'}]`);
    else passes.push(`${check.name}=${r.value}`);
  }
  return failures.length
    ? { result: 'fail', message: failures.join('; ') }
    : { result: 'pass', message: `checks passed: ${passes.join(', ')}` };
}
