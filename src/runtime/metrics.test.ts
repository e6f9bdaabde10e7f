import assert from 'node:assert/strict';
import { OperatorMetrics } from './metrics.ts';
import { WorkQueue } from './workqueue.ts';
import { waitFor } from '../../test/support/wait.ts';

describe('OperatorMetrics', () => {
  it('exposes controller-runtime, workqueue, leader election and REST client series under their upstream names', async () => {
    const m = new OperatorMetrics();
    const queue = new WorkQueue('serverlessapp', { hooks: m.queueHooks('serverlessapp') });
    m.watchQueue(queue);
    m.reconcileObserver('serverlessapp').maxConcurrent(4);
    m.leaderStatus('serverlessapp-operator', true);
    m.restRequest('200', 'GET', '127.0.0.1:6443');
    const text = await m.registry.metrics();
    for (const name of [
      'controller_runtime_reconcile_total{controller="serverlessapp",result="success"} 0',
      'controller_runtime_reconcile_total{controller="serverlessapp",result="requeue_after"} 0',
      'controller_runtime_reconcile_errors_total{controller="serverlessapp"} 0',
      'controller_runtime_terminal_reconcile_errors_total{controller="serverlessapp"} 0',
      '# TYPE controller_runtime_reconcile_time_seconds histogram',
      'controller_runtime_active_workers{controller="serverlessapp"} 0',
      'controller_runtime_max_concurrent_reconciles{controller="serverlessapp"} 4',
      'workqueue_depth{name="serverlessapp"} 0',
      'workqueue_adds_total{name="serverlessapp"} 0',
      'workqueue_retries_total{name="serverlessapp"} 0',
      '# TYPE workqueue_queue_duration_seconds histogram',
      '# TYPE workqueue_work_duration_seconds histogram',
      'workqueue_unfinished_work_seconds{name="serverlessapp"} 0',
      'workqueue_longest_running_processor_seconds{name="serverlessapp"} 0',
      'leader_election_master_status{name="serverlessapp-operator"} 1',
      'rest_client_requests_total{code="200",method="GET",host="127.0.0.1:6443"} 1',
      'process_cpu_seconds_total',
    ]) assert.ok(text.includes(name), `missing: ${name}`);
  });

  it('reads the process\'s CPU time, resident memory and heap when scraped', async () => {
    const m = new OperatorMetrics();
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const first = await m.registry.metrics();
    const spin = performance.now() + 30;
    while (performance.now() < spin) { /* burn CPU for the next scrape */ }
    const second = await m.registry.metrics();
    assert.ok(value(second, 'process_cpu_seconds_total') > value(first, 'process_cpu_seconds_total'));
    assert.ok(value(second, 'process_cpu_user_seconds_total') + value(second, 'process_cpu_system_seconds_total') >= value(second, 'process_cpu_seconds_total') - 1e-6);
    for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'process_start_time_seconds']) {
      assert.ok(value(second, name) > 0, `${name} is ${value(second, name)}`);
    }
  });

  it('follows a work queue: adds, depth, queue and work durations', async () => {
    const m = new OperatorMetrics({ processMetrics: false });
    const queue = new WorkQueue('q', { hooks: m.queueHooks('q') });
    m.watchQueue(queue);
    queue.add('a');
    queue.add('b');
    let text = await m.registry.metrics();
    assert.ok(text.includes('workqueue_adds_total{name="q"} 2'));
    assert.ok(text.includes('workqueue_depth{name="q"} 2'));
    const key = await queue.get();
    queue.done(key!);
    text = await m.registry.metrics();
    assert.ok(text.includes('workqueue_depth{name="q"} 1'));
    assert.ok(text.includes('workqueue_queue_duration_seconds_count{name="q"} 1'));
    assert.ok(text.includes('workqueue_work_duration_seconds_count{name="q"} 1'));
    queue.shutDown();
  });

  it('keeps each operator\'s registry separate, so several managers can share a process', async () => {
    const a = new OperatorMetrics();
    const b = new OperatorMetrics();
    a.restRequest('500', 'PATCH', 'x');
    assert.ok((await a.registry.metrics()).includes('rest_client_requests_total{code="500"'));
    assert.ok(!(await b.registry.metrics()).includes('rest_client_requests_total{code="500"'));
  });

  it('counts a reconcile by result and times it', async () => {
    const m = new OperatorMetrics({ processMetrics: false });
    const o = m.reconcileObserver('c');
    o.reconciled('success', 0.02);
    o.reconciled('error', 0.5, true);
    const text = await m.registry.metrics();
    assert.ok(text.includes('controller_runtime_reconcile_total{controller="c",result="success"} 1'));
    assert.ok(text.includes('controller_runtime_reconcile_total{controller="c",result="error"} 1'));
    assert.ok(text.includes('controller_runtime_reconcile_errors_total{controller="c"} 1'));
    assert.ok(text.includes('controller_runtime_terminal_reconcile_errors_total{controller="c"} 1'));
    assert.ok(text.includes('controller_runtime_reconcile_time_seconds_count{controller="c"} 2'));
  });

  it('sums reconcile time per namespace: each tenant\'s share of the operator', async () => {
    const m = new OperatorMetrics({ processMetrics: false });
    const o = m.reconcileObserver('c');
    o.reconciled('success', 0.25, false, 'noisy');
    o.reconciled('success', 0.5, false, 'noisy');
    o.reconciled('success', 0.125, false, 'quiet');
    const text = await m.registry.metrics();
    assert.ok(text.includes('serverlessapp_reconcile_seconds_total{controller="c",namespace="noisy"} 0.75'));
    assert.ok(text.includes('serverlessapp_reconcile_seconds_total{controller="c",namespace="quiet"} 0.125'));
    assert.ok(text.includes('serverlessapp_reconciles_total{controller="c",namespace="noisy"} 2'));
    assert.ok(text.includes('serverlessapp_reconciles_total{controller="c",namespace="quiet"} 1'));
  });

  it('sums the time each namespace\'s keys waited in the work queue', async () => {
    const m = new OperatorMetrics({ processMetrics: false });
    const hooks = m.queueHooks('q');
    hooks.onQueued?.(0.5, 'noisy/a');
    hooks.onQueued?.(0.25, 'noisy/b');
    hooks.onQueued?.(0.125, 'quiet/a');
    const text = await m.registry.metrics();
    assert.ok(text.includes('serverlessapp_queue_wait_seconds_total{name="q",namespace="noisy"} 0.75'));
    assert.ok(text.includes('serverlessapp_queue_wait_seconds_total{name="q",namespace="quiet"} 0.125'));
  });

  it('exports how late the event loop ran, since the last scrape', async () => {
    const m = new OperatorMetrics();
    const lag = async () => Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(await m.registry.metrics())?.[1]);
    // A reconcile that holds the loop 300 ms, between two scrapes. The sampler is a 100 ms libuv
    // timer that measures from one tick to the next, and a scrape restarts it: a block shows only
    // with a tick before it and one after it, so each step (scrape, block, scrape) waits 150 ms.
    let step: 'scrape' | 'block' = 'scrape';
    let stepAt = performance.now();
    await waitFor('a 300 ms block to show as lag', async () => {
      if (performance.now() - stepAt < 150) return false;
      if (step === 'block') {
        const blockedFrom = Date.now();
        while (Date.now() - blockedFrom < 300);
        step = 'scrape';
      } else if (await lag() >= 0.1) {
        return true;
      } else {
        step = 'block';
      }
      stepAt = performance.now();
      return false;
    });
    assert.ok(await lag() < 0.1, 'the next scrape starts a new interval');
  });


});
