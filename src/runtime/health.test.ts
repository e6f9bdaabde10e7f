import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Registry } from 'prom-client';
import { parseAddr, startHealthServers } from './health.ts';
import { waitFor } from '../../test/support/wait.ts';

/** Waits until `url` answers `want`, naming the url, the status wanted and the last one seen. */
async function answers(url: string, want: number): Promise<void> {
  let last: number | undefined;
  await waitFor(`${url} to answer ${want}`, async () => (last = await fetch(url).then((r) => r.status)) === want)
    .catch((e: Error) => { throw new Error(`${e.message}; last ${last}`); });
}

/**
 * A separate process that probes `port` at each instant (ms after it starts) and prints what it got
 * and when: the instants are the test's subject (0.2 s and 3.5 s into a block of this thread).
 */
const PROBER = `
const [port, ...delays] = process.argv.slice(1).map(Number);
const probe = () => fetch('http://127.0.0.1:' + port + '/healthz').then(async (res) => ({ status: res.status, body: await res.text(), at: Date.now() }));
console.log('started');
Promise.all(delays.map((d) => new Promise((resolve) => setTimeout(() => resolve(probe()), d))))
  .then((probes) => console.log(JSON.stringify(probes)));
`;

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
      await answers(`http://127.0.0.1:${s.probePort}/readyz`, 200);
      assert.equal(await probe('/metrics'), 404);
      const metrics = await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /text\/plain/);
    } finally {
      await s.close();
    }
  });

  it('answers /healthz while the main event loop is blocked, and fails it only once the loop is stuck past the bound', async function () {
    this.timeout(30_000);
    const s = await startHealthServers({ metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', registry: new Registry(), readyCheck: () => true, stallAfterMs: 2_000 });
    try {
      const prober = spawn(process.execPath, ['-e', PROBER, String(s.probePort), '200', '3500'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      prober.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      while (!out.includes('started')) await once(prober.stdout, 'data');
      // A reconcile that never yields, as the worst one could: nothing on this thread runs for 5 s.
      const blockedFrom = Date.now();
      while (Date.now() - blockedFrom < 5_000);
      const blockedUntil = Date.now();
      await once(prober, 'exit');
      const [during, stuck] = JSON.parse(out.slice(out.indexOf('['))) as Array<{ status: number; body: string; at: number }>;
      assert.equal(during!.status, 200, 'a probe 0.2 s into the block is answered: ok');
      assert.ok(during!.at < blockedUntil, 'and answered while this thread was still blocked');
      assert.equal(stuck!.status, 500, 'a probe 3.5 s into the block fails liveness');
      assert.match(stuck!.body, /main event loop stuck for \d+ s \(bound 2 s\)/);
      assert.ok(stuck!.at < blockedUntil, 'also answered while this thread was blocked');
      await answers(`http://127.0.0.1:${s.probePort}/healthz`, 200);
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
