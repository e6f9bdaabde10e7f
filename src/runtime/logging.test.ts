import assert from 'node:assert/strict';
import { ApiError } from './client.ts';
import { createLogger } from './logging.ts';

describe('logging', () => {
  const capture = (level?: string) => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({ ...(level ? { level } : {}), write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    return { lines, logger };
  };

  it('writes one JSON object per line with level, message, ts and the child\'s keys', () => {
    const { lines, logger } = capture();
    logger.child({ controller: 'serverlessapp' }).child({ namespace: 'a', name: 'shop' }).info('reconciled', { phase: 'Stable' });
    assert.equal(lines.length, 1);
    const { ts, ...rest } = lines[0]!;
    assert.deepEqual(rest, { controller: 'serverlessapp', namespace: 'a', name: 'shop', phase: 'Stable', level: 'info', message: 'reconciled' });
    assert.ok(!Number.isNaN(Date.parse(String(ts))));
  });

  it('drops lines below its level, and silent drops all', () => {
    const { lines, logger } = capture('warn');
    logger.info('no'); logger.debug('no'); logger.warn('yes'); logger.error('yes');
    assert.deepEqual(lines.map((l) => l['level']), ['warn', 'error']);
    const silent = createLogger({ silent: true, write: () => assert.fail('silent wrote') });
    silent.error('nothing');
  });

  it('logs an error with its name, message, stack and own fields', () => {
    const { lines, logger } = capture();
    logger.error('Reconciler error', { err: new ApiError(404, 'not found', 'NotFound') });
    const err = lines[0]!['err'] as Record<string, unknown>;
    assert.deepEqual([err['name'], err['message'], err['code'], err['reason'], typeof err['stack']], ['ApiError', 'not found', 404, 'NotFound', 'string']);
  });
});
