import assert from 'node:assert/strict';
import { LoopbackServer, promVector } from '../../test/support/http-server.ts';
import { renderQuery, runChecks } from './analysis.ts';

describe('Prometheus analysis', () => {
  let prom: LoopbackServer;
  beforeEach(async () => { prom = await new LoopbackServer().start(); });
  afterEach(() => prom.stop());
  const vars = { app: 'shop', namespace: 'team-a', revision: 'shop-abc', version: 'v2' };
  const analysis = (min?: number, max?: number) => ({ prometheus: { address: prom.url }, checks: [{ name: 'success-rate', query: 'rate{revision="{{revision}}"}', ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) }] });

  it('substitutes app, namespace, revision and version into queries', () => {
    assert.equal(renderQuery('x{a="{{app}}",n="{{ namespace }}",r="{{revision}}",v="{{version}}"}', vars), 'x{a="shop",n="team-a",r="shop-abc",v="v2"}');
  });

  it('passes when the value is within bounds, querying the instant query API', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.995));
    const outcome = await runChecks(analysis(0.99), vars);
    assert.equal(outcome.result, 'pass');
    assert.match(decodeURIComponent(prom.requests[0]!.url), /\/api\/v1\/query\?query=rate\{revision="shop-abc"\}/);
  });

  it('fails when the value is out of bounds', async () => {
    prom.handler = (_r, res) => res.end(promVector(0.8));
    const outcome = await runChecks(analysis(0.99), vars);
    assert.equal(outcome.result, 'fail');
    assert.match(outcome.message, /success-rate=0.8/);
  });

  it('treats an empty result as no data, never as a pass', async () => {
    prom.handler = (_r, res) => res.end(promVector());
    assert.equal((await runChecks(analysis(0.99), vars)).result, 'nodata');
  });

  it('treats NaN and an unreachable server as no data', async () => {
    prom.handler = (_r, res) => res.end(promVector('NaN'));
    assert.equal((await runChecks(analysis(undefined, 1), vars)).result, 'nodata');
    await prom.stop();
    assert.equal((await runChecks(analysis(0.5), vars, undefined, 500)).result, 'nodata');
  });
});
