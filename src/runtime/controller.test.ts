import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Controller, keepingRequeue, REFUSED_WRITE_BACKOFF_MS, refusedWriteRetry, RetryError, TerminalError, type Reconcile, type Request } from './controller.ts';
import type { Informer } from './informer.ts';
import { createLogger } from './logging.ts';
import { OperatorMetrics } from './metrics.ts';
import { ManualClock } from '../../test/support/manual-clock.ts';
import { assertQuietWindow } from '../../test/support/quiet-window.ts';
import { waitFor } from '../../test/support/wait.ts';

const logger = createLogger({ silent: true });

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

interface Obj { metadata: { namespace: string; name: string; owner?: string } }

/** The slice of an Informer a controller uses: events and a list. */
class FakeInformer extends EventEmitter {
  objects: Obj[] = [];
  list(): Obj[] {
    return this.objects;
  }
  asInformer(): Informer<Obj> {
    return this as unknown as Informer<Obj>;
  }
}

const metricsList: OperatorMetrics[] = [];
const controllers: Controller[] = [];

/** A controller on a manual clock: requeue delays and retry backoff pass only when the test advances it. */
function makeController(reconcile: Reconcile, opts: { concurrency?: number; baseDelayMs?: number; onStopped?: () => void } = {}) {
  const metrics = new OperatorMetrics({ processMetrics: false });
  metricsList.push(metrics);
  const clock = new ManualClock();
  const c = new Controller({ name: 'test', reconcile, logger, metrics, clock, concurrency: opts.concurrency ?? 1, queue: { baseDelayMs: opts.baseDelayMs ?? 5 }, ...(opts.onStopped ? { onStopped: opts.onStopped } : {}) });
  controllers.push(c);
  return { c, metrics, clock };
}

async function metricValue(metrics: OperatorMetrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = await metrics.registry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value;
}

const web: Request = { namespace: 'demo', name: 'web' };

describe('Controller', () => {
  afterEach(async () => {
    await Promise.all(controllers.splice(0).map((c) => c.stop()));
  });

  it('reconciles again after requeueAfterMs, without counting it as a failure', async () => {
    const times: number[] = [];
    const { c, metrics, clock } = makeController(async () => {
      times.push(clock.now().getTime());
      return times.length === 1 ? { requeueAfterMs: 60 } : undefined;
    });
    c.start();
    c.enqueue(web);
    await waitFor('the first reconcile to finish', () => times.length === 1 && c.isIdle());
    clock.advance(59);
    assert.equal(c.isIdle(), true, 'not requeued before 60 ms');
    clock.advance(1);
    await waitFor('the requeued reconcile', () => times.length === 2);
    assert.equal(times[1]! - times[0]!, 60);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'requeue_after' }), 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'success' }), 1);
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 0);
  });

  it('does not retry a TerminalError, but counts it', async () => {
    let calls = 0;
    const { c, metrics, clock } = makeController(async () => {
      calls++;
      throw new TerminalError('spec.container.image: must be set');
    });
    c.start();
    c.enqueue(web);
    await waitFor('the reconcile to finish', () => calls === 1 && c.isIdle());
    assert.equal(clock.pending, 0, 'no retry is scheduled (an ordinary error schedules one: see the next test)');
    clock.advance(3_600_000);
    assert.equal(c.isIdle(), true);
    assert.equal(calls, 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'test' }), 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'test' }), 1);
  });

  it('retries other errors with a growing backoff until the reconcile succeeds', async () => {
    const times: number[] = [];
    const { c, metrics, clock } = makeController(async () => {
      times.push(clock.now().getTime());
      if (times.length <= 3) throw new Error('apiserver unavailable');
    }, { baseDelayMs: 20 });
    c.start();
    c.enqueue(web);
    for (const [n, delay] of [[1, 20], [2, 40], [3, 80]] as const) {
      await waitFor(`failure ${n} and its retry scheduled`, () => times.length === n && c.isIdle() && clock.pending === 1);
      assert.equal(clock.nextTimerInMs(), delay, `retry ${n} waits ${delay} ms`);
      clock.advance(delay);
    }
    await waitFor('the fourth reconcile to succeed', () => times.length === 4 && c.isIdle());
    assert.deepEqual(times.slice(1).map((t, i) => t - times[i]!), [20, 40, 80]);
    assert.equal(clock.pending, 0, 'a success ends the retries');
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'error' }), 3);
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 3);
  });

  it('retryNow runs a key at once and restarts its backoff from the base delay', async () => {
    const times: number[] = [];
    const { c, clock } = makeController(async () => {
      times.push(clock.now().getTime());
      throw new Error('refused: the model is cached by another app');
    }, { baseDelayMs: 20 });
    c.start();
    c.enqueue(web);
    for (const [n, delay] of [[1, 20], [2, 40], [3, 80]] as const) {
      await waitFor(`failure ${n} and its retry scheduled`, () => times.length === n && c.isIdle() && clock.pending === 1);
      assert.equal(clock.nextTimerInMs(), delay);
      if (n < 3) clock.advance(delay);
    }
    c.retryNow(web);
    await waitFor('the reconcile retryNow asked for, before the 80 ms backoff passed', () => times.length === 4 && c.isIdle());
    assert.equal(times[3], times[2], 'ran without the clock moving');
    assert.equal(clock.nextTimerInMs(), 20, 'its next failure waits the base delay (the old 80 ms timer is still armed behind it)');
  });

  it('keeps the requeue a retried failure carries: the earlier of it and the backoff runs the key', async () => {
    const times: number[] = [];
    const { c, clock } = makeController(async () => {
      times.push(clock.now().getTime());
      if (times.length === 1) throw new RetryError('the API server refused a write', 30);
    }, { baseDelayMs: 60_000 });
    c.start();
    c.enqueue(web);
    await waitFor('the refused reconcile and its retry scheduled', () => times.length === 1 && c.isIdle() && clock.pending >= 1);
    assert.equal(clock.nextTimerInMs(), 30, 'the plan\'s requeue (30 ms), not the 60 s backoff');
    clock.advance(30);
    await waitFor('the second reconcile', () => times.length === 2 && c.isIdle());
    assert.equal(times[1]! - times[0]!, 30);
  });

  it('retries a write the API server refused after a second, then two: not nine times in two seconds', async () => {
    const times: number[] = [];
    const { c, clock } = makeController(async () => {
      times.push(clock.now().getTime());
      throw refusedWriteRetry('admission webhook "localmodelcache.kserve-webhook-server.validator" denied the request');
    });
    c.start();
    c.enqueue(web);
    await waitFor('the refused reconcile and its retry scheduled', () => times.length === 1 && c.isIdle() && clock.pending >= 1);
    assert.equal(clock.nextTimerInMs(), REFUSED_WRITE_BACKOFF_MS);
    clock.advance(REFUSED_WRITE_BACKOFF_MS);
    await waitFor('the first retry, and the second scheduled', () => times.length === 2 && c.isIdle() && clock.pending >= 1);
    assert.equal(clock.nextTimerInMs(), 2 * REFUSED_WRITE_BACKOFF_MS);
  });

  it('spends no retry budget on failures whose planned look comes first: another key\'s retry is not delayed by them', async () => {
    const metrics = new OperatorMetrics({ processMetrics: false });
    metricsList.push(metrics);
    const clock = new ManualClock();
    const failed: string[] = [];
    // One token per 100 s: had each planned retry reserved one, `other` would wait about 20 x 100 s.
    const c = new Controller({
      name: 'test', logger, metrics, clock, concurrency: 1, queue: { baseDelayMs: 60_000, qps: 0.01, burst: 1 },
      reconcile: async (req) => {
        failed.push(req.name);
        if (req.name === 'other') throw new Error('connect ECONNREFUSED');
        throw new RetryError('the API server refused a write', 30);
      },
    });
    controllers.push(c);
    c.start();
    for (let i = 0; i < 20; i++) c.enqueue({ namespace: 'demo', name: `planned-${i}` });
    await waitFor('20 planned failures', () => failed.length === 20 && c.isIdle());
    c.enqueue({ namespace: 'demo', name: 'other' });
    await waitFor('the other key\'s failure', () => failed.length === 21 && c.isIdle());
    clock.advance(30);
    await waitFor('the 20 planned retries at 30 ms', () => failed.length === 41 && c.isIdle());
    clock.advance(60_000 - 30);
    await waitFor('the other key\'s retry after its 60 s backoff', () => failed.filter((n) => n === 'other').length === 2);
  });

  it('never runs more reconciles at once than its concurrency', async () => {
    const g = gate();
    let running = 0;
    let peak = 0;
    let finished = 0;
    const { c, metrics } = makeController(async () => {
      running++;
      peak = Math.max(peak, running);
      await g.opened;
      running--;
      finished++;
    }, { concurrency: 3 });
    c.start();
    for (let i = 0; i < 10; i++) c.enqueue({ namespace: 'demo', name: `app-${i}` });
    // Every worker holds its reconcile until the gate opens: more workers would all be in at once.
    await waitFor('three reconciles running', () => running === 3);
    g.open();
    await waitFor('all ten reconciled', () => finished === 10);
    assert.equal(peak, 3);
    assert.equal(await metricValue(metrics, 'controller_runtime_max_concurrent_reconciles', { controller: 'test' }), 3);
  });

  it('never reconciles one key in two workers at once, and reconciles it again if it changed meanwhile', async () => {
    const g = gate();
    let running = 0;
    let peak = 0;
    let calls = 0;
    const { c } = makeController(async () => {
      calls++;
      running++;
      peak = Math.max(peak, running);
      if (calls === 1) await g.opened;
      running--;
    }, { concurrency: 4 });
    c.start();
    c.enqueue(web);
    await waitFor('the first reconcile', () => calls === 1);
    c.enqueue(web);
    c.enqueue(web);
    await assertQuietWindow({ controlTimeoutMs: 10_000,
      what: 'a second worker reconciled the key in flight', windowMs: 50, observe: () => calls,
      control: () => g.open(), // the first one finishes: the key, changed meanwhile, runs again
    });
    await waitFor('the reconcile after the change', () => calls === 2 && c.isIdle());
    assert.equal(calls, 2, 'two adds while in flight make one more reconcile');
    assert.equal(peak, 1);
  });

  it('keeps its worker alive when a reconcile throws synchronously', async () => {
    const seen: string[] = [];
    const { c } = makeController(((req: Request) => {
      seen.push(req.name);
      if (req.name === 'bad') throw new TypeError('cannot read properties of undefined');
      return Promise.resolve();
    }) as Reconcile, { concurrency: 1 });
    c.start();
    c.enqueue({ namespace: 'demo', name: 'bad' });
    c.enqueue({ namespace: 'demo', name: 'good' });
    await waitFor('the next key after the throw', () => seen.includes('good'));
  });

  it('waits for in-flight reconciles on stop, takes no new work meanwhile, and keeps what arrived for the next start', async () => {
    const g = gate();
    const seen: string[] = [];
    let finished = false;
    const { c } = makeController(async (req) => {
      seen.push(req.name);
      if (req.name === 'slow') {
        await g.opened;
        finished = true;
      }
    });
    c.start();
    c.enqueue({ namespace: 'demo', name: 'slow' });
    await waitFor('the slow reconcile', () => seen.length === 1);
    let stopped = false;
    const stopping = c.stop().then(() => (stopped = true));
    c.enqueue({ namespace: 'demo', name: 'late' });
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'stop() returned while a reconcile was running', windowMs: 50, observe: () => stopped, control: () => g.open() });
    await stopping;
    assert.equal(finished, true);
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'a reconcile ran while stopped', windowMs: 50, observe: () => [...seen], control: () => c.start() });
    await waitFor('the key enqueued while draining', () => seen.includes('late'));
    assert.deepEqual(seen, ['slow', 'late'], 'the key enqueued while draining waited for the next start');
  });

  it('runs onStopped once the in-flight reconcile has finished, so no effect it starts outlives the stop', async () => {
    const g = gate();
    const order: string[] = [];
    const { c } = makeController(async () => {
      await g.opened;
      order.push('reconcile finished (it may start effects)');
    }, { onStopped: () => order.push('onStopped') });
    c.start();
    c.enqueue(web);
    await waitFor('the reconcile to start', () => !c.isIdle() || undefined);
    const stopping = c.stop();
    await assertQuietWindow({ controlTimeoutMs: 10_000, what: 'onStopped ran while a reconcile was running', windowMs: 50, observe: () => [...order], control: () => g.open() });
    await stopping;
    assert.deepEqual(order, ['reconcile finished (it may start effects)', 'onStopped']);
  });

  it('abandon() aborts the in-flight reconcile\'s signal and returns at once; the reconcile is not retried; a later start() begins a new term', async () => {
    const signals: AbortSignal[] = [];
    const order: string[] = [];
    const { c, metrics } = makeController(async (_req, ctx) => {
      signals.push(ctx.signal);
      if (signals.length > 1) return;
      // A write that never answers, but ends when its signal aborts (as KubeClient's requests do).
      await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    }, { onStopped: () => order.push('onStopped') });
    c.start();
    c.enqueue(web);
    await waitFor('the reconcile to start', () => signals.length === 1);
    c.abandon();
    order.push('abandon returned');
    assert.deepEqual([signals[0]!.aborted, order], [true, ['onStopped', 'abandon returned']]);
    await waitFor('the abandoned reconcile to end', () => c.isIdle());
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 0, 'not retried: its queue is gone');
    c.start();
    c.enqueue({ namespace: 'demo', name: 'next' });
    await waitFor('a reconcile of the new term', () => signals.length === 2);
    assert.equal(signals[1]!.aborted, false);
  });

  it('runs a key again at once when its reconcile asks to replan, with no backoff and no error', async () => {
    let runs = 0;
    const { c, metrics } = makeController(async () => (++runs < 3 ? { replan: true } : undefined), { baseDelayMs: 60_000 });
    c.start();
    c.enqueue(web);
    await waitFor('three reconciles, without the clock moving', () => runs === 3 && c.isIdle());
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'requeue' }), 2);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'test' }) ?? 0, 0);
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 0);
  });

  it('maps informer events to requests, the old owner too when an update moves a child', async () => {
    const seen: string[] = [];
    const { c } = makeController(async (req) => {
      seen.push(`${req.namespace}/${req.name}`);
    });
    const apps = new FakeInformer();
    const children = new FakeInformer();
    c.watches(apps.asInformer(), (o) => [{ namespace: o.metadata.namespace, name: o.metadata.name }]);
    c.watches(children.asInformer(), (o) => (o.metadata.owner ? [{ namespace: o.metadata.namespace, name: o.metadata.owner }] : []));
    c.start();
    apps.emit('add', { metadata: { namespace: 'demo', name: 'web' } });
    await waitFor('the add', () => seen.length === 1);
    children.emit('update', { metadata: { namespace: 'demo', name: 'svc', owner: 'api' } }, { metadata: { namespace: 'demo', name: 'svc', owner: 'old' } });
    children.emit('delete', { metadata: { namespace: 'demo', name: 'orphan' } });
    await waitFor('the update (new and old owner) and the delete', () => seen.length === 3);
    assert.deepEqual(seen.sort(), ['demo/api', 'demo/old', 'demo/web']);
  });

  it('skips updates its predicate says change nothing it reads, but never a forced resync', async () => {
    const seen = new Set<string>();
    const { c } = makeController(async (req) => { seen.add(req.name); });
    const apps = new FakeInformer();
    type Gen = Obj & { metadata: { generation?: number } };
    const at = (name: string, generation: number): Gen => ({ metadata: { namespace: 'a', name, generation } });
    c.watches(apps.asInformer() as unknown as Informer<Gen>, (o) => [{ namespace: o.metadata.namespace, name: o.metadata.name }], (o, old) => o.metadata.generation !== old.metadata.generation);
    c.start();
    apps.emit('update', at('status-only', 1), at('status-only', 1));
    const resynced = at('resynced', 1);
    apps.emit('update', resynced, resynced);
    apps.emit('update', at('spec', 2), at('spec', 1));
    await waitFor('the spec change and the resync', () => seen.has('spec') && seen.has('resynced'));
    assert.equal(seen.has('status-only'), false, 'an update that changed nothing it reads is skipped');
  });

  it('enqueueAll walks the first informer it watches, and start() does it too', async () => {
    const seen = new Set<string>();
    const { c } = makeController(async (req) => {
      seen.add(req.name);
    }, { concurrency: 2 });
    const apps = new FakeInformer();
    apps.objects = [{ metadata: { namespace: 'a', name: 'one' } }, { metadata: { namespace: 'b', name: 'two' } }];
    c.watches(apps.asInformer(), (o) => [{ namespace: o.metadata.namespace, name: o.metadata.name }]);
    c.start();
    await waitFor('both objects reconciled on start', () => seen.size === 2);
    seen.clear();
    c.enqueueAll();
    await waitFor('both objects reconciled by enqueueAll', () => seen.size === 2);
  });

  it('reports the active workers while reconciles run', async () => {
    const g = gate();
    let started = 0;
    const { c, metrics } = makeController(async () => {
      started++;
      await g.opened;
    }, { concurrency: 2 });
    c.start();
    c.enqueue({ namespace: 'demo', name: 'a' });
    c.enqueue({ namespace: 'demo', name: 'b' });
    await waitFor('two reconciles running', () => started === 2);
    assert.equal(await metricValue(metrics, 'controller_runtime_active_workers', { controller: 'test' }), 2);
    assert.equal(c.isIdle(), false);
    g.open();
    await waitFor('the workers to finish', () => c.isIdle());
    assert.equal(await metricValue(metrics, 'controller_runtime_active_workers', { controller: 'test' }), 0);
  });
});

describe('keepingRequeue', () => {
  const thrown = (err: unknown, requeueAfterMs: number | undefined): unknown => {
    try {
      keepingRequeue(requeueAfterMs)(err);
    } catch (e) {
      return e;
    }
    return assert.fail('keepingRequeue always throws');
  };

  it('turns any failure into a RetryError that carries the planned requeue and the failure as its cause', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const err = thrown(cause, 5_000);
    assert.ok(err instanceof RetryError);
    assert.deepEqual([err.message, err.requeueAfterMs, err.cause], ['connect ECONNREFUSED', 5_000, cause]);
  });

  it('passes a TerminalError and a RetryError through as they are', () => {
    const terminal = new TerminalError('a user\'s mistake'), retry = new RetryError('refused', 10);
    assert.equal(thrown(terminal, 5_000), terminal);
    assert.equal(thrown(retry, 5_000), retry);
  });
});
