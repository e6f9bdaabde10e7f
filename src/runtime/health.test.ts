import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { parseAddr, startHealthServers } from './health.ts';

describe('health servers', () => {
  it('serves /healthz always, /readyz only when ready, and metrics on their own port', async () => {
    let ready = false;
    const registry = new Registry();
    const s = await startHealthServers({ metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', registry, readyCheck: () => ready });
    try {
      assert.notEqual(s.metricsPort, s.probePort);
      const probe = (p: string) => fetch(`http://127.0.0.1:${s.probePort}${p}`).then((r) => r.status);
      assert.equal(await probe('/healthz'), 200);
      assert.equal(await probe('/readyz'), 503);
      ready = true;
      assert.equal(await probe('/readyz'), 200);
      assert.equal(await probe('/metrics'), 404);
      const metrics = await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /text\/plain/);
    } finally {
      await s.close();
    }
  });

  it('parses host:port, :port and bracketed IPv6', () => {
    assert.deepEqual(parseAddr(':8080'), { port: 8080 });
    assert.deepEqual(parseAddr('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
    assert.deepEqual(parseAddr('[::1]:8081'), { host: '::1', port: 8081 });
    assert.throws(() => parseAddr('localhost:http'), /invalid listen address/);
  });
});
