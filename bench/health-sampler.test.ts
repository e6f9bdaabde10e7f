// The /healthz sampler probes from its own thread, so a busy benchmark main
// thread (the noisy namespace's writes) is not counted as the operator's latency.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { sampleHealth } from './health-sampler.ts';

/** A server in its own process (this thread will be blocked): 200 on /healthz, 500 elsewhere. */
async function probeTarget(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', `require('node:http').createServer((q, s) => { s.statusCode = q.url === '/healthz' ? 200 : 500; s.end('ok'); })
    .listen(0, '127.0.0.1', function () { console.log(this.address().port); })`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [port] = await once(child.stdout!, 'data') as [Buffer];
  return { url: `http://127.0.0.1:${String(port).trim()}`, child };
}

const blockFor = (ms: number) => { const until = performance.now() + ms; while (performance.now() < until) { /* this thread busy */ } };

describe('noisy-neighbour benchmark: the /healthz sampler', () => {
  let target: Awaited<ReturnType<typeof probeTarget>>;
  before(async () => { target = await probeTarget(); });
  after(() => { target.child.kill(); });

  it('probes on while the benchmark\'s main thread is blocked, and no probe\'s latency includes the block', async () => {
    const sampler = sampleHealth({ url: `${target.url}/healthz`, everyMs: 10, timeoutMs: 5_000 });
    await sampler.sampling;
    const blocked = Date.now();
    blockFor(500);
    const { at, ms, failures } = await sampler.stop();
    assert.equal(failures, 0);
    // Probes every 10 ms: a sampler on this thread would have sent none while it was blocked.
    const during = at.filter((t) => t >= blocked + 50 && t <= blocked + 450).length;
    assert.ok(during >= 5, `${during} probes were sent while this thread was blocked`);
    assert.ok(Math.max(...ms) < 500, `the slowest probe took ${Math.max(...ms).toFixed(0)} ms, less than the 500 ms block`);
  });

  it('counts a probe that is not answered 2xx, or not within the timeout, as failed', async () => {
    const failing = sampleHealth({ url: `${target.url}/other`, everyMs: 10, timeoutMs: 5_000 });
    const unreachable = sampleHealth({ url: 'http://127.0.0.1:9/healthz', everyMs: 10, timeoutMs: 5_000 });
    await Promise.all([failing.sampling, unreachable.sampling]);
    // No pause needed: a worker starts its first measured probe before it can read the stop.
    for (const s of [await failing.stop(), await unreachable.stop()]) {
      assert.ok(s.ms.length > 0, 'at least the first probe was made');
      assert.equal(s.failures, s.ms.length);
    }
  });
});
