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
 * A separate process that probes `port` one request after another, every `everyMs`, for `forMs`,
 * and prints what each got and when it was answered. A probe's instant is read from its answer, not
 * planned: on a loaded machine this process may run late, and the test judges each probe by when it
 * was answered relative to the block.
 */
const PROBER = `
const [port, everyMs, forMs] = process.argv.slice(1).map(Number);
const probe = () => fetch('http://127.0.0.1:' + port + '/healthz').then(async (res) => ({ status: res.status, body: await res.text(), at: Date.now() }));
console.log('started');
(async () => {
  const probes = [];
  for (const end = Date.now() + forMs; Date.now() < end; await new Promise((r) => setTimeout(r, everyMs))) probes.push(await probe());
  console.log(JSON.stringify(probes));
})();
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
    this.timeout(60_000);
    const stallAfterMs = 3_000, heartbeatMs = 1_000, blockMs = 7_000;
    const s = await startHealthServers({ metricsAddr: '127.0.0.1:0', probeAddr: '127.0.0.1:0', registry: new Registry(), readyCheck: () => true, stallAfterMs });
    try {
      const prober = spawn(process.execPath, ['-e', PROBER, String(s.probePort), '100', String(blockMs + 1_000)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      prober.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      while (!out.includes('started')) await once(prober.stdout, 'data');
      // A reconcile that never yields, as the worst one could: nothing on this thread runs for 7 s.
      const blockedFrom = Date.now();
      while (Date.now() - blockedFrom < blockMs);
      const blockedUntil = Date.now();
      await once(prober, 'exit');
      const probes = JSON.parse(out.slice(out.indexOf('['))) as Array<{ status: number; body: string; at: number }>;
      const during = probes.filter((p) => p.at > blockedFrom && p.at < blockedUntil);
      const seen = JSON.stringify(during.map((p) => [p.at - blockedFrom, p.status]));
      // The last heartbeat came at most a beat (and some scheduling lag) before the block.
      const early = during.filter((p) => p.at - blockedFrom < stallAfterMs - heartbeatMs - 1_000);
      assert.ok(early.length > 0, `a probe answered early in the block (ms into it, status): ${seen}`);
      assert.ok(early.every((p) => p.status === 200), `answered ok while this thread was blocked, short of the bound: ${seen}`);
      const stuck = during.filter((p) => p.status === 500);
      assert.ok(stuck.length > 0, `a probe past the bound fails liveness: ${seen}`);
      assert.ok(stuck.every((p) => p.at - blockedFrom > stallAfterMs - heartbeatMs - 500), `and none before the loop could have been stuck past the bound: ${seen}`);
      assert.match(stuck[0]!.body, /main event loop stuck for \d+ s \(bound 3 s\)/);
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
