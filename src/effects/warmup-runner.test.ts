import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { LoopbackServer } from '../../test/support/http-server.ts';
import { systemClock } from '../runtime/clock.ts';
import { warmupUrl } from '../prewarm/warmup-progress.ts';
import { WarmupRunner, type WarmupProgress, type WarmupTarget } from './warmup-runner.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { waitFor } from '../../test/support/wait.ts';
import { ManualClock, stepUntil } from '../../test/support/manual-clock.ts';

const target = { key: 'team-a/shop', version: 'v2', revision: 'shop-abc', namespace: 'team-a', app: 'shop' };

/** The target's progress if it is at `phase`. */
function progressOf(runner: WarmupRunner, t: WarmupTarget, phase: WarmupProgress['phase']): WarmupProgress | undefined {
  const task = runner.current(t.key);
  const p = task?.version === t.version && task.revision === t.revision ? task.progress : undefined;
  return p?.phase === phase ? p : undefined;
}

/** The target's progress once it reaches `phase`. */
function until(runner: WarmupRunner, phase: WarmupProgress['phase']): Promise<WarmupProgress> {
  return waitFor(`the warmup to reach ${phase}`, () => progressOf(runner, target, phase));
}

/** Ended on the clock at its deadline: no later, and no earlier than the last moment a request is still worth sending (20 ms). */
function assertFailedAtDeadline(p: WarmupProgress, deadlineMs: number): void {
  const took = (p.phase === 'failed' ? p.finishedAt.getTime() : NaN) - p.startedAt.getTime();
  assert.ok(took >= deadlineMs - 20 && took <= deadlineMs, `failed ${took} ms after it started on the clock, deadline ${deadlineMs} ms`);
}

describe('warmup runner', () => {
  let server: LoopbackServer;
  beforeEach(async () => { server = await new LoopbackServer().start(); });
  afterEach(() => server.stop());

  it('fills the URL template for one revision', () => {
    assert.equal(warmupUrl('http://{revision}-private.{namespace}.svc.cluster.local', target, '/v1/x'), 'http://shop-abc-private.team-a.svc.cluster.local/v1/x');
    assert.equal(warmupUrl('http://127.0.0.1:9/{namespace}/{revision}{path}?v={version}', target, '/p'), 'http://127.0.0.1:9/team-a/shop-abc/p?v=v2');
  });

  it('sends `count` requests with method, headers and body straight to the revision', async () => {
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: `${server.url}/{revision}{path}`, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {} });
    runner.ensure(target, { path: '/predict', method: 'POST', headers: { 'x-warmup': '1' }, body: '{"a":1}', count: 3 }, new Date());
    const p = await until(runner, 'succeeded');
    assert.equal(p.succeeded, 3);
    assert.equal(server.requests.length, 3);
    assert.deepEqual([server.requests[0]!.method, server.requests[0]!.url, server.requests[0]!.headers['x-warmup'], server.requests[0]!.body], ['POST', '/shop-abc/predict', '1', '{"a":1}']);
  });

  it('retries a 503 with backoff, reports each retry, and succeeds when the server recovers', async () => {
    let calls = 0;
    server.handler = (_r, res) => { res.statusCode = ++calls <= 2 ? 503 : 200; res.end(); };
    const retries: string[] = [];
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, onRetry: (_k, m) => retries.push(m), initialBackoffMs: 10 });
    runner.ensure(target, { path: '/', count: 1 }, new Date());
    const p = await until(runner, 'succeeded');
    assert.deepEqual([p.sent, p.succeeded, retries.length], [3, 1, 2]);
    assert.match(retries[0]!, /HTTP 503/);
  });

  it('fails past the deadline when the endpoint keeps answering 5xx', async () => {
    server.handler = (_r, res) => { res.statusCode = 500; res.end(); };
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, initialBackoffMs: 10 });
    runner.ensure(target, { path: '/', deadline: '300ms' }, new Date());
    const p = await until(runner, 'failed');
    assert.equal(p.succeeded, 0);
    assert.equal(p.lastError, 'HTTP 500');
  });

  it('gives up on a hanging endpoint at the deadline without blocking anything else', async () => {
    server.handler = (r, res) => { if (r.url === '/ok') res.end(); /* else never answers */ };
    const clock = new ManualClock();
    const runner = new WarmupRunner({ clock, urlTemplate: `${server.url}{path}`, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, initialBackoffMs: 10 });
    const other = { ...target, key: 'team-b/cart', namespace: 'team-b', app: 'cart' };
    const startedAt = clock.now();
    runner.ensure(target, { path: '/hang', timeout: '100ms', deadline: '400ms' }, startedAt);
    runner.ensure(other, { path: '/ok', count: 1 }, startedAt);
    await waitFor('the other app\'s warmup to succeed while the hanging request is held', () => runner.current(other.key)?.progress.phase === 'succeeded');
    assert.equal(runner.current(target.key)?.progress.phase, 'running');
    assert.equal(clock.nextTimerInMs(), 100, 'the held request\'s timeout is a timer on the runner\'s clock');
    const p = await stepUntil(clock, 'the hanging warmup to fail', () => progressOf(runner, target, 'failed'));
    assert.match(p.lastError ?? '', /^no complete response within \d+ ms$/);
    assertFailedAtDeadline(p, 400);
  });

  it('stop() cuts a request in flight at once and reports nothing after it', async () => {
    server.handler = () => { /* never answers */ };
    const reports: string[] = [];
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: (k) => reports.push(k), onRetry: (k) => reports.push(k) });
    runner.ensure(target, { path: '/', timeout: '10m', deadline: '10m' }, new Date());
    await waitFor('the warmup request to reach the server', () => server.requests.length === 1 || undefined);
    runner.stop();
    await waitFor('the server to see the request closed by the runner (its own timeout is 10 minutes)', () => server.open === 0 || undefined);
    assert.equal(runner.current(target.key), undefined);
    assert.deepEqual(reports, []);
  });

  /** `steps` says which of the runner's waits the test moves the clock past: a request's deadline too, or only the backoffs it reports. */
  const hostile: Array<{ what: string; handler: (res: ServerResponse) => void; spec: { timeout?: string; deadline: string }; steps: 'deadlines' | 'backoffs'; error: RegExp }> = [
    {
      what: 'a server that trickles bytes past the request timeout',
      handler: (res) => { res.writeHead(200); const t = setInterval(() => res.write('.'), 20); res.on('close', () => clearInterval(t)); },
      spec: { timeout: '150ms', deadline: '500ms' }, steps: 'deadlines', error: /^no complete response within 150 ms$/,
    },
    {
      what: 'a body past the response cap',
      handler: (res) => { res.writeHead(200); res.end(Buffer.alloc(64 * 1024, 'x')); },
      spec: { deadline: '500ms' }, steps: 'backoffs', error: /larger than 1024 bytes/,
    },
    {
      what: 'a redirect (never followed)',
      handler: (res) => { res.writeHead(301, { location: 'http://127.0.0.1:1/' }); res.end(); },
      spec: { deadline: '300ms' }, steps: 'backoffs', error: /^HTTP 301 \(redirects are not followed\)$/,
    },
  ];
  for (const h of hostile) {
    it(`fails at the deadline on ${h.what}, reporting a short fixed error`, async () => {
      server.handler = (_r, res) => h.handler(res);
      const retries: string[] = [];
      const clock = new ManualClock();
      const runner = new WarmupRunner({ clock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, onRetry: (_k, m) => retries.push(m), initialBackoffMs: 10, maxResponseBytes: 1024 });
      runner.ensure(target, { path: '/', ...h.spec }, clock.now());
      // Each request sent and failed is reported as a retry before its backoff: the runner then waits on the clock for nothing else.
      const inBackoff = () => retries.length === runner.sent;
      const p = await stepUntil(clock, 'the warmup to fail', () => progressOf(runner, target, 'failed'), h.steps === 'backoffs' ? { stepWhen: inBackoff } : {});
      runner.stop();
      assert.equal(p.succeeded, 0);
      const first = /fail \((.*)\); retrying/.exec(retries[0] ?? '')?.[1];
      assert.match(first ?? `(no retry reported; last error: ${p.lastError})`, h.error);
      assertFailedAtDeadline(p, parseDuration(h.spec.deadline));
      assert.ok(retries.every((m) => !m.includes(String(server.port))), 'retry events do not name the address');
    });
  }

  it('never sends a Host header a tenant set', async () => {
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, initialBackoffMs: 10 });
    runner.ensure(target, { path: '/', headers: { Host: 'internal-admin.example.com' }, deadline: '200ms' }, new Date());
    const p = await until(runner, 'failed');
    assert.match(p.lastError ?? '', /header "Host" is not allowed/);
    assert.equal(server.requests.length, 0);
  });

  it('runs a namespace\'s share of warmups at once and says so for the one that waits, while another namespace\'s goes ahead', async () => {
    const held: ServerResponse[] = [];
    server.handler = (_r, res) => { held.push(res); };
    const waits: Array<[string, string]> = [];
    const runner = new WarmupRunner({
      clock: systemClock, urlTemplate: `${server.url}/{namespace}/{app}{path}`, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {},
      onWait: (key, _m, limit) => waits.push([key, limit]), slots: { perNamespace: 1, total: 10 },
    });
    const at = (namespace: string, app: string) => ({ ...target, key: `${namespace}/${app}`, namespace, app });
    runner.ensure(at('noisy', 'a'), { path: '/', count: 1 }, new Date());
    runner.ensure(at('noisy', 'b'), { path: '/', count: 1 }, new Date());
    runner.ensure(at('victim', 'c'), { path: '/', count: 1 }, new Date());
    await waitFor('two requests held', () => held.length === 2);
    assert.deepEqual(server.requests.map((r) => r.url).sort(), ['/noisy/a/', '/victim/c/']);
    assert.deepEqual(waits, [['noisy/b', 'namespace']]);
    held.splice(0).forEach((res) => res.end());
    await waitFor('noisy/b\'s request once a slot is free', () => server.requests.some((r) => r.url === '/noisy/b/'));
    held.splice(0).forEach((res) => res.end());
    runner.stop();
  });

  it('ends a task whose work throws as failed, reporting it, never as an unhandled rejection', async () => {
    const progressed: string[] = [];
    const runner = new WarmupRunner({ clock: systemClock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: (k) => progressed.push(k) });
    runner.ensure(target, { path: '/', deadline: 'not a duration' }, new Date());
    const p = await until(runner, 'failed');
    assert.match(p.lastError ?? '', /^warmup failed: /);
    assert.deepEqual(progressed, [target.key]);
  });

  it('waits its backoff on the injected clock, and a forgotten task stops waiting at once', async () => {
    server.handler = (_r, res) => { res.statusCode = 503; res.end(); };
    const clock = new ManualClock();
    const retries: string[] = [];
    const runner = new WarmupRunner({ clock, urlTemplate: server.url, llmUrlTemplate: `${server.url}/llm/{service}{path}`, onProgress: () => {}, onRetry: (_k, m) => retries.push(m), initialBackoffMs: 1000 });
    runner.ensure(target, { path: '/', deadline: '10m' }, clock.now());
    await waitFor('the first request to fail and its backoff to start', () => retries.length === 1);
    assert.equal(clock.pending, 1, 'only the backoff: the request\'s deadline went with it');
    assert.equal(clock.nextTimerInMs(), 1000, 'the backoff is a timer on the runner\'s clock');
    clock.advance(1000);
    await waitFor('the retry after the backoff', () => server.requests.length === 2 || undefined);
    await waitFor('the second backoff to start', () => retries.length === 2);
    assert.equal(clock.pending, 1);
    assert.equal(clock.nextTimerInMs(), 2000, 'doubled');
    runner.forget(target.key);
    assert.equal(clock.pending, 0, 'forgetting the task cancels its wait');
  });
});
