import assert from 'node:assert/strict';
import { analysisTarget, baseUrlProblem, DEFAULT_ANALYSIS_POLICY, type Analysis, type AnalysisPolicy } from './analysis-target.ts';

describe('analysis target', () => {
  const targets: Array<{ what: string; prometheus: Analysis['prometheus']; policy: AnalysisPolicy; want: string }> = [
    { what: 'a defined provider', prometheus: { provider: 'main' }, policy: { providers: [{ name: 'main', url: 'http://prometheus.monitoring:9090' }], allowAddress: false }, want: 'http://prometheus.monitoring:9090/' },
    { what: 'an undefined provider', prometheus: { provider: 'other' }, policy: { providers: [{ name: 'main', url: 'http://p:9090' }], allowAddress: false }, want: 'AnalysisProviderNotFound spec.rollout.analysis.prometheus.provider' },
    { what: 'an address where addresses are off (the default)', prometheus: { address: 'http://10.0.0.1:8080' }, policy: DEFAULT_ANALYSIS_POLICY, want: 'AnalysisAddressNotAllowed spec.rollout.analysis.prometheus.address' },
    { what: 'a provider where none is defined (the default)', prometheus: { provider: 'main' }, policy: DEFAULT_ANALYSIS_POLICY, want: 'AnalysisProviderNotFound spec.rollout.analysis.prometheus.provider' },
    { what: 'an address where addresses are allowed', prometheus: { address: 'http://prom.team-a:9090/prefix' }, policy: { providers: [], allowAddress: true }, want: 'http://prom.team-a:9090/prefix' },
    { what: 'an allowed address with a fragment that would cut the API path', prometheus: { address: 'http://internal:8080/admin#' }, policy: { providers: [], allowAddress: true }, want: 'InvalidSpec spec.rollout.analysis.prometheus.address' },
  ];
  for (const t of targets) {
    it(`resolves the query target for ${t.what}`, () => {
      const r = analysisTarget({ prometheus: t.prometheus, checks: [{ name: 'c', query: 'up', min: 1 }] }, t.policy);
      assert.equal('url' in r ? r.url.href : `${r.reason} ${r.field}`, t.want);
    });
  }

  const bases: Array<[string, string | undefined]> = [
    ['http://prometheus:9090', undefined], ['https://prom.example.com/sub/', undefined],
    ['http://user:pw@prom:9090', 'credentials in the URL are not allowed'], ['http://prom:9090/?x=1', 'a query or fragment (? or #) is not allowed in a base URL'],
    ['file:///etc/passwd', 'file: is not allowed: use http:// or https://'], ['not a url', '"not a url" is not a URL'],
  ];
  for (const [base, why] of bases) {
    it(`${why ? 'refuses' : 'accepts'} the base URL ${base}`, () => assert.equal(baseUrlProblem(base), why));
  }
});
