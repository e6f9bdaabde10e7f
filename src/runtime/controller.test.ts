import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Controller, RetryError, TerminalError, type Reconcile, type Request } from './controller.ts';
import type { Informer } from './informer.ts';
import { createLogger } from './logging.ts';
import { OperatorMetrics } from './metrics.ts';

const logger = createLogger({ silent: true });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(2);
  }
}

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

function makeController(reconcile: Reconcile, opts: { concurrency?: number; baseDelayMs?: number } = {}) {
  const metrics = new OperatorMetrics({ processMetrics: false });
  metricsList.push(metrics);
  const c = new Controller({ name: 'test', reconcile, logger, metrics, concurrency: opts.concurrency ?? 1, queue: { baseDelayMs: opts.baseDelayMs ?? 5 } });
  controllers.push(c);
  return { c, metrics };
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
    const { c, metrics } = makeController(async () => {
      times.push(performance.now());
      return times.length === 1 ? { requeueAfterMs: 60 } : undefined;
    });
    c.start();
    c.enqueue(web);
    await until(() => times.length === 2);
    assert.ok(times[1]! - times[0]! >= 55, `requeued after ${times[1]! - times[0]!}ms`);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'requeue_after' }), 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'success' }), 1);
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 0);
  });

  it('does not retry a TerminalError, but counts it', async () => {
    let calls = 0;
    const { c, metrics } = makeController(async () => {
      calls++;
      throw new TerminalError('spec.container.image: must be set');
    });
    c.start();
    c.enqueue(web);
    await until(() => calls === 1);
    await sleep(100);
    assert.equal(calls, 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'test' }), 1);
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_errors_total', { controller: 'test' }), 1);
  });

  it('retries other errors with a growing backoff until the reconcile succeeds', async () => {
    const times: number[] = [];
    const { c, metrics } = makeController(async () => {
      times.push(performance.now());
      if (times.length <= 3) throw new Error('apiserver unavailable');
    }, { baseDelayMs: 20 });
    c.start();
    c.enqueue(web);
    await until(() => times.length === 4);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    assert.ok(gaps[0]! >= 18 && gaps[1]! >= 38 && gaps[2]! >= 78, `gaps ${gaps.map(Math.round).join(', ')} should double from 20ms`);
    await sleep(200);
    assert.equal(times.length, 4, 'a success ends the retries');
    assert.equal(await metricValue(metrics, 'controller_runtime_reconcile_total', { result: 'error' }), 3);
    assert.equal(await metricValue(metrics, 'workqueue_retries_total', { name: 'test' }), 3);
  });

  it('keeps the requeue a retried failure carries: the earlier of it and the backoff runs the key', async () => {
    const times: number[] = [];
    const { c } = makeController(async () => {
      times.push(performance.now());
      if (times.length === 1) throw new RetryError('the API server refused a write', 30);
    }, { baseDelayMs: 60_000 });
    c.start();
    c.enqueue(web);
    await until(() => times.length === 2);
    assert.ok(times[1]! - times[0]! >= 25, `requeued after ${times[1]! - times[0]!}ms`);
  });

  it('never runs more reconciles at once than its concurrency', async () => {
    let running = 0;
    let peak = 0;
    let finished = 0;
    const { c, metrics } = makeController(async () => {
      running++;
      peak = Math.max(peak, running);
      await sleep(20);
      running--;
      finished++;
    }, { concurrency: 3 });
    c.start();
    for (let i = 0; i < 10; i++) c.enqueue({ namespace: 'demo', name: `app-${i}` });
    await until(() => finished === 10);
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
    await until(() => calls === 1);
    c.enqueue(web);
    c.enqueue(web);
    await sleep(20);
    assert.equal(calls, 1);
    g.open();
    await until(() => calls === 2);
    await sleep(20);
    assert.equal(calls, 2);
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
    await until(() => seen.includes('good'));
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
    await until(() => seen.length === 1);
    let stopped = false;
    const stopping = c.stop().then(() => (stopped = true));
    c.enqueue({ namespace: 'demo', name: 'late' });
    await sleep(30);
    assert.equal(stopped, false, 'stop() returned while a reconcile was running');
    g.open();
    await stopping;
    assert.equal(finished, true);
    await sleep(30);
    assert.deepEqual(seen, ['slow'], 'nothing runs while stopped');
    c.start();
    await until(() => seen.includes('late'));
    assert.deepEqual(seen, ['slow', 'late'], 'the key enqueued while draining waited for the next start');
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
    await until(() => seen.length === 1);
    children.emit('update', { metadata: { namespace: 'demo', name: 'svc', owner: 'api' } }, { metadata: { namespace: 'demo', name: 'svc', owner: 'old' } });
    children.emit('delete', { metadata: { namespace: 'demo', name: 'orphan' } });
    await until(() => seen.length === 3);
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
    await until(() => seen.has('spec') && seen.has('resynced'));
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
    await until(() => seen.size === 2);
    seen.clear();
    c.enqueueAll();
    await until(() => seen.size === 2);
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
    await until(() => started === 2);
    assert.equal(await metricValue(metrics, 'controller_runtime_active_workers', { controller: 'test' }), 2);
    assert.equal(c.isIdle(), false);
    g.open();
    await until(() => c.isIdle());
    assert.equal(await metricValue(metrics, 'controller_runtime_active_workers', { controller: 'test' }), 0);
  });
});
