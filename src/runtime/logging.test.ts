import assert from 'node:assert/strict';
import { ApiError } from './client.ts';
import { createLogger } from './logging.ts';

describe('logging', () => {
  const capture = (level?: string) => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ ...(level ? { level } : {}), write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    return { lines, logger };
  };

  it('writes one JSON object per line with level, message, ts and the child\'s keys', async () => {
    const { lines, logger } = capture();
    logger.child({ controller: 'serverlessapp' }).child({ namespace: 'a', name: 'shop' }).info('reconciled', { phase: 'Stable' });
    await logger.flush();
    assert.equal(lines.length, 1);
    const { ts, ...rest } = lines[0]!;
    assert.deepEqual(rest, { controller: 'serverlessapp', namespace: 'a', name: 'shop', phase: 'Stable', level: 'info', message: 'reconciled' });
    assert.ok(!Number.isNaN(Date.parse(String(ts))));
  });

  it('drops lines below its level, and silent drops all', async () => {
    const { lines, logger } = capture('warn');
    logger.info('no'); logger.debug('no'); logger.warn('yes'); logger.error('yes');
    await logger.flush();
    assert.deepEqual(lines.map((l) => l['level']), ['warn', 'error']);
    const silent = createLogger({ silent: true, write: () => assert.fail('silent wrote') });
    silent.error('nothing');
    await silent.flush();
  });

  it('logs an error with its name, message, stack and own fields', async () => {
    const { lines, logger } = capture();
    logger.error('Reconciler error', { err: new ApiError(404, 'not found', 'NotFound') });
    await logger.flush();
    const err = lines[0]!['err'] as Record<string, unknown>;
    assert.deepEqual([err['name'], err['message'], err['code'], err['reason'], typeof err['stack']], ['ApiError', 'not found', 404, 'NotFound', 'string']);
  });

  it('hands each line to the destination before log returns, in order, so a flush only waits for the destination', async () => {
    const reached: number[] = [];
    const logger = createLogger({ write: (line) => reached.push((JSON.parse(line) as { i: number }).i) });
    const child = logger.child({ controller: 'c' });
    for (let i = 0; i < 50; i++) {
      child.info('line', { i });
      assert.equal(reached.at(-1), i, `line ${i} was still inside winston when log returned`);
    }
    await logger.flush();
    assert.deepEqual(reached, [...Array(50).keys()]);
  });
});
