import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createLogger } from './logging.ts';
import { OperatorMetrics } from './metrics.ts';
import { installProcessErrorHandlers, processErrorHandlers, type ProcessErrorPolicy } from './process-errors.ts';

/** The policy with its effects recorded: log lines (parsed), exits, and flushes that resolve when told. */
function recorded() {
  const lines: Array<Record<string, unknown>> = [];
  const exits: number[] = [];
  const metrics = new OperatorMetrics({ processMetrics: false });
  let release = () => {};
  const policy: ProcessErrorPolicy = {
    logger: createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
    countRejection: () => metrics.unhandledRejection(),
    flush: () => new Promise<void>((resolve) => { release = resolve; }),
    exit: (code) => exits.push(code),
  };
  const rejections = async () => (await metrics.registry.getSingleMetric('serverlessapp_unhandled_rejections_total')!.get()).values[0]?.value;
  return { lines, exits, policy, rejections, flushDone: () => release() };
}

describe('process errors no code handled', () => {
  it('logs an unhandled rejection with its stack and counts it, and keeps running', async () => {
    const r = recorded();
    const h = processErrorHandlers(r.policy);
    h.unhandledRejection(new Error('watch body ended'));
    h.unhandledRejection('a plain string');
    assert.equal(await r.rejections(), 2);
    assert.deepEqual(r.exits, []);
    assert.equal(r.lines.length, 2);
    assert.equal(r.lines[0]!['level'], 'error');
    assert.match(String(r.lines[0]!['message']), /^unhandled promise rejection .*keeps running$/);
    const error = r.lines[0]!['error'] as { message: string; stack: string };
    assert.equal(error.message, 'watch body ended');
    assert.match(error.stack, /process-errors\.test\.ts/);
    assert.equal(r.lines[1]!['error'], 'a plain string');
  });

  it('logs an uncaught exception, then exits 1 only once the log is flushed', async () => {
    const r = recorded();
    processErrorHandlers(r.policy).uncaughtException(new TypeError('x is undefined'));
    assert.match(String(r.lines[0]!['message']), /^uncaught exception .*exiting$/);
    assert.equal((r.lines[0]!['error'] as { name: string }).name, 'TypeError');
    await Promise.resolve();
    assert.deepEqual(r.exits, [], 'exited before the log was flushed');
    r.flushDone();
    await new Promise(setImmediate);
    assert.deepEqual(r.exits, [1]);
    assert.equal(await r.rejections(), 0);
  });

  it('exits at once on a second uncaught exception while flushing', () => {
    const r = recorded();
    const h = processErrorHandlers(r.policy);
    h.uncaughtException(new Error('first'));
    h.uncaughtException(new Error('second'));
    assert.deepEqual(r.exits, [1]);
  });

  it('is installed on the process events, so a rejection there is counted rather than fatal', async () => {
    const r = recorded();
    const proc = new EventEmitter();
    installProcessErrorHandlers(r.policy, proc);
    proc.emit('unhandledRejection', new Error('nobody awaited me'), Promise.resolve());
    proc.emit('uncaughtException', new Error('thrown in a callback'));
    assert.equal(await r.rejections(), 1);
    assert.deepEqual(r.lines.map((l) => (l['error'] as { message: string }).message), ['nobody awaited me', 'thrown in a callback']);
  });
});
