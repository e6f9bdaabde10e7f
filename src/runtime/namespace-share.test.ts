import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { callbacksRun, ManualClock } from '../../test/support/manual-clock.ts';
import { waitFor } from '../../test/support/wait.ts';
import { Controller, type Request } from './controller.ts';
import type { Informer } from './informer.ts';
import { createLogger } from './logging.ts';
import { OperatorMetrics } from './metrics.ts';
import { NamespaceShare } from './namespace-share.ts';
import { WorkQueue } from './workqueue.ts';

/** A CPU meter the test moves: work "costs" what the test says it does. */
function fakeCpu() {
  const cpu = { ms: 0, read: () => cpu.ms };
  return cpu;
}

const settings = { cpuMsPerSecond: 100, burstMs: 1_000 };

describe('NamespaceShare', () => {
  it('lets a namespace spend its burst at once, then defers it until its debt is paid back at its rate', () => {
    const clock = new ManualClock();
    const share = new NamespaceShare(settings, clock);
    share.charge('noisy', 900);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 0, 'within the burst');
    share.charge('noisy', 400);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 3_000, '300 ms of debt at 100 ms/s');
    clock.advance(2_999);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 1);
    clock.advance(1);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 0, 'paid back, its burst still spent');
    clock.advance(4_999);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 0);
    clock.advance(1);
    assert.equal(share.waitMs('noisy/a', 'noisy'), -1, 'half its burst in hand again: it owes nothing');
  });

  it('charges one namespace only: another namespace never waits for it', () => {
    const share = new NamespaceShare(settings, new ManualClock());
    share.charge('noisy', 60_000);
    assert.equal(share.waitMs('victim/a', 'victim'), -1, 'never waits, and owes nothing');
    assert.deepEqual(share.overShare(), ['noisy']);
  });

  it('measures the CPU of the work it runs, and only up to an async function\'s first await', async () => {
    const cpu = fakeCpu();
    const share = new NamespaceShare(settings, new ManualClock(), { cpuMs: cpu.read });
    const resumed = Promise.withResolvers<void>();
    const pending = share.measure('noisy', async () => {
      cpu.ms += 1_500;
      await resumed.promise;
      cpu.ms += 10_000; // after the await: not this measure's
    });
    assert.equal(share.waitMs('noisy/a', 'noisy'), 5_000);
    resumed.resolve();
    await pending;
    assert.equal(share.waitMs('noisy/a', 'noisy'), 5_000);
  });

  it('charges the work even when it throws', () => {
    const cpu = fakeCpu();
    const share = new NamespaceShare(settings, new ManualClock(), { cpuMs: cpu.read });
    assert.throws(() => share.measure('noisy', () => {
      cpu.ms += 1_100;
      throw new Error('bad spec');
    }), /bad spec/);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 1_000);
  });

  it('reports going past the share once per episode, and each deferred key', () => {
    const clock = new ManualClock();
    const over: string[] = [];
    const deferred: string[] = [];
    const charged: number[] = [];
    const share = new NamespaceShare(settings, clock, {
      hooks: { onOverShare: (ns, key) => over.push(`${ns} ${key}`), onDeferred: (_ns, key) => deferred.push(key), onCharge: (_ns, ms) => charged.push(ms) },
    });
    share.charge('noisy', 1_200);
    share.waitMs('noisy/a', 'noisy');
    share.waitMs('noisy/b', 'noisy');
    assert.deepEqual(over, ['noisy noisy/a']);
    assert.deepEqual(deferred, ['noisy/a', 'noisy/b']);
    clock.advance(2_000);
    assert.equal(share.waitMs('noisy/a', 'noisy'), 0, 'paid back');
    share.charge('noisy', 1_500);
    share.waitMs('noisy/c', 'noisy');
    assert.deepEqual(over, ['noisy noisy/a', 'noisy noisy/c'], 'a second episode is reported again');
    assert.deepEqual(charged, [1_200, 1_500]);
  });
});

describe('WorkQueue with a namespace share', () => {
  it('defers the keys of a namespace past its share behind no one, hands out the others at once, and releases them once paid back, one at a time', async () => {
    const clock = new ManualClock();
    const share = new NamespaceShare(settings, clock);
    const waited: Array<[string, number]> = [];
    const q = new WorkQueue('t', { clock, gate: (key) => share.waitMs(key, key.split('/')[0]!), hooks: { onQueued: (s, key) => waited.push([key, s]) } });
    share.charge('noisy', 1_500); // 500 ms in debt: 5 s to pay back
    for (const key of ['noisy/a', 'noisy/b', 'victim/x', 'noisy/c']) q.add(key);
    assert.equal(await q.get(), 'victim/x', 'the victim is not behind the noisy keys');
    const next = q.get();
    clock.advance(4_999);
    await callbacksRun();
    clock.advance(1);
    assert.equal(await next, 'noisy/a', 'in their order, once the debt is paid');
    const b = q.get();
    let handed: string | undefined;
    void b.then((k) => (handed = k));
    await callbacksRun();
    assert.equal(handed, undefined, 'one key at a time while it owes: noisy/b waits for noisy/a');
    q.done('noisy/a');
    assert.equal(await b, 'noisy/b');
    assert.deepEqual(waited.find(([k]) => k === 'noisy/a'), ['noisy/a', 5], 'the deferral counts as time in the queue');
  });
});

describe('Controller with a namespace share', () => {
  const logger = createLogger({ silent: true });

  class FakeInformer extends EventEmitter {
    list(): unknown[] {
      return [];
    }
  }

  it('spaces out a namespace that storms expensive reconciles while another namespace\'s keys run at once', async () => {
    const clock = new ManualClock();
    const cpu = fakeCpu();
    const share = new NamespaceShare(settings, clock, { cpuMs: cpu.read });
    const ran: string[] = [];
    const reconcile = async (req: Request) => {
      ran.push(`${req.namespace}/${req.name}`);
      cpu.ms += req.namespace === 'noisy' ? 400 : 1; // validation of new regexes and windows vs an ordinary edit
    };
    const controller = new Controller({ name: 'share', reconcile, concurrency: 1, logger, metrics: new OperatorMetrics({ processMetrics: false }), clock, share });
    const informer = new FakeInformer();
    controller.watches(informer as unknown as Informer<{ metadata: { namespace: string; name: string } }>, (o) => [o.metadata]);
    controller.start();
    try {
      for (let i = 0; i < 10; i++) informer.emit('add', { metadata: { namespace: 'noisy', name: `n${i}` } });
      await waitFor('the burst and the first deferral', () => ran.length >= 3 && clock.pending > 0);
      informer.emit('add', { metadata: { namespace: 'victim', name: 'v' } });
      await waitFor('the victim\'s reconcile', () => ran.includes('victim/v'));
      assert.deepEqual(ran.slice(0, 3), ['noisy/n0', 'noisy/n1', 'noisy/n2'], 'the burst (1 s of CPU) runs at once');
      assert.ok(ran.length <= 5, `the noisy namespace was deferred past its burst, then the victim ran: ${ran.join(' ')}`);
      const noisyBefore = ran.filter((k) => k.startsWith('noisy/')).length;
      // 400 ms of debt per reconcile at 100 ms/s: one more noisy reconcile per 4 s, not ten at once.
      clock.advance(4_000);
      await waitFor('the next noisy reconcile', () => ran.filter((k) => k.startsWith('noisy/')).length > noisyBefore);
      await callbacksRun();
      assert.equal(ran.filter((k) => k.startsWith('noisy/')).length, noisyBefore + 1);
    } finally {
      await controller.stop();
    }
  });
});

describe('NamespaceShare memory', () => {
  it('forgets the namespaces whose buckets have refilled once many were charged', () => {
    const clock = new ManualClock();
    const share = new NamespaceShare(settings, clock);
    for (let i = 0; i < 1_024; i++) share.charge(`ns-${i}`, 10);
    share.charge('busy', 2_000);
    clock.advance(1_000); // 100 ms refilled: the ns-* buckets are full again, busy's is not
    share.charge('late', 10);
    assert.equal(share.tracked, 2, 'the refilled ns-* buckets were swept; busy (in debt) and late are kept');
    assert.deepEqual(share.overShare(), ['busy']);
    assert.equal(share.waitMs('busy/a', 'busy'), 9_000);
  });
});
