import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { LoopbackServer, promVector } from '../../test/support/http-server.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
import { waitFor } from '../../test/support/wait.ts';
import { runChecks } from '../effects/analysis-checks.ts';
import type { Analysis, AnalysisPolicy } from '../api/v1alpha1/analysis-target.ts';
import { queryUrl, renderQuery } from './analysis.ts';

describe('Prometheus analysis', () => {
  let prom: LoopbackServer;
  beforeEach(async () => { prom = await new LoopbackServer().start(); });
  afterEach(() => prom.stop());
  const vars = { app: 'shop', namespace: 'team-a', revision: 'shop-abc', version: 'v2' };
  const policy = (): AnalysisPolicy => ({ providers: [{ name: 'main', url: prom.url }], allowAddress: false });
  const analysis = (min?: number, max?: number): Analysis => ({ prometheus: { provider: 'main' }, checks: [{ name: 'success-rate', query: 'rate{revision="{{revision}}"}', ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) }] });

  it('substitutes app, namespace, revision and version into queries', () => {
    assert.equal(renderQuery('x{a="{{app}}",n="{{ namespace }}",r="{{revision}}",v="{{version}}"}', vars), 'x{a="shop",n="team-a",r="shop-abc",v="v2"}');
  });

  it('passes when the value is within bounds, querying the named provider\'s instant query API', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.995));
    const outcome = await runChecks(analysis(0.99), vars, policy());
    assert.equal(outcome.result, 'pass');
    assert.match(decodeURIComponent(prom.requests[0]!.url), /\/api\/v1\/query\?query=rate\{revision="shop-abc"\}/);
  });

  it('fails when the value is out of bounds, naming the check and its bounds but not the value', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.8123));
    const outcome = await runChecks(analysis(0.99), vars, policy());
    assert.equal(outcome.result, 'fail');
    assert.equal(outcome.message, 'success-rate outside [0.99, +inf]');
  });

  it('never puts a value in a passing outcome either: a query may read any namespace\'s series', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.9987654));
    const outcome = await runChecks(analysis(0.99), vars, policy());
    assert.equal(outcome.message, 'checks passed: success-rate within [0.99, +inf]');
    assert.doesNotMatch(outcome.message, /0\.998/);
  });

  it('sends the app\'s namespace with every query, for a prom-label-proxy to enforce', async () => {
    prom.handler = (_r, res) => res.end(promVector(1));
    await runChecks(analysis(0.99), vars, policy());
    assert.equal(new URL(prom.requests[0]!.url, 'http://x').searchParams.get('namespace'), 'team-a');
  });

  it('treats an empty result as no data, never as a pass', async () => {
    prom.handler = (_r, res) => res.end(promVector());
    assert.equal((await runChecks(analysis(0.99), vars, policy())).result, 'nodata');
  });

  it('treats NaN and an unreachable server as no data, naming the provider but not its address', async () => {
    prom.handler = (_r, res) => res.end(promVector('NaN'));
    assert.equal((await runChecks(analysis(undefined, 1), vars, policy())).result, 'nodata');
    const p = policy();
    await prom.stop();
    const outcome = await runChecks(analysis(0.5), vars, p, { timeoutMs: 500 });
    assert.equal(outcome.result, 'nodata');
    assert.match(outcome.message, /no answer from Prometheus \(provider "main"\): connection refused/);
    assert.doesNotMatch(outcome.message, new RegExp(`127\\.0\\.0\\.1|${prom.port}`));
  });

  const hostile: Array<{ what: string; handler: (res: ServerResponse) => void; message: RegExp; absent?: RegExp; outlasts?: true }> = [
    { what: 'trickles its answer past the deadline', handler: (res) => { res.writeHead(200); const t = setInterval(() => res.write(' '), 20); res.on('close', () => clearInterval(t)); }, message: /no complete response within 300 ms/, outlasts: true },
    { what: 'sends a body past the cap', handler: (res) => { res.writeHead(200); res.end(`{"status":"success","data":{"resultType":"vector","result":[${'{"metric":{},"value":[1,"1"]},'.repeat(100)}]}}`); }, message: /larger than 1024 bytes/ },
    { what: 'redirects elsewhere', handler: (res) => { res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }); res.end(); }, message: /HTTP 302 \(redirects are not followed\)/, absent: /169\.254/ },
    { what: 'answers HTML', handler: (res) => { res.statusCode = 200; res.end('<html>internal admin console\nsecret-token=abc</html>'); }, message: /not a Prometheus answer/, absent: /secret-token/ },
    { what: 'puts control characters and a long text in its parse error', handler: (res) => { res.statusCode = 400; res.end(JSON.stringify({ status: 'error', errorType: 'bad_data', error: `bad\r\n\u001b[31m${'x'.repeat(500)}` })); }, message: /HTTP 400: bad \[31mx+…$/ },
    { what: 'names other series in an execution error', handler: (res) => { res.statusCode = 422; res.end(JSON.stringify({ status: 'error', errorType: 'execution', error: 'found duplicate series for the match group {namespace="team-b", secret="hunter2"}' })); }, message: /^check success-rate: query failed: HTTP 422$/, absent: /team-b|hunter2/ },
    { what: 'answers a non-number sample', handler: (res) => res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ value: [1, 'password=hunter2-and-much-more-text'] }] } })), message: /query returned something other than a finite number/, absent: /hunter2/ },
  ];
  for (const h of hostile) {
    it(`reports no data, briefly, when the server ${h.what}`, async () => {
      prom.handler = (_r, res) => h.handler(res);
      // The deadline runs on a manual clock: only a server that outlasts it sees the clock pass 300 ms, once it has started answering.
      const clock = new ManualClock();
      const call = runChecks(analysis(0.5), vars, policy(), { timeoutMs: 300, maxBytes: 1024 }, clock);
      if (h.outlasts) {
        await waitFor('the server to start its answer', () => prom.requests.length === 1);
        clock.advance(300);
      }
      const outcome = await call;
      assert.equal(outcome.result, 'nodata');
      assert.match(outcome.message, h.message);
      assert.ok(outcome.message.length < 240, `message is ${outcome.message.length} chars`);
      if (h.absent) assert.doesNotMatch(outcome.message, h.absent);
      assert.equal(prom.requests.length, 1, 'one request, nothing followed');
    });
  }

  it('does not query at all when the provider is not defined', async () => {
    const outcome = await runChecks({ prometheus: { provider: 'other' }, checks: [{ name: 'c', query: 'up', min: 1 }] }, vars, policy());
    assert.equal(outcome.result, 'nodata');
    assert.match(outcome.message, /provider "other" is not defined/);
    assert.equal(prom.requests.length, 0);
  });

  it('keeps a base path and encodes the query, so nothing in it can change the target', () => {
    assert.equal(queryUrl(new URL('http://p:9090/prom/'), 'up#x?y', 'team-a').href, 'http://p:9090/prom/api/v1/query?query=up%23x%3Fy&namespace=team-a');
  });
});
