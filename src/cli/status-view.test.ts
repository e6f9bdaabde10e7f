import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { assertGolden } from '../../test/support/golden.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { humanDuration, relativeTime, renderStatus } from './status-view.ts';

const dir = new URL('testdata/status/', import.meta.url);
const NOW = new Date('2026-11-22T12:00:00Z');
const load = (file: string) => parse(readFileSync(new URL(file, dir), 'utf8')) as ServerlessApp;

describe('kubectl sapp status view', () => {
  describe('golden renderings (testdata/status/*.txt; UPDATE_GOLDEN=1 rewrites them)', () => {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
      it(`${file}: drawn as in its golden file`, () => {
        const text = renderStatus(load(file), { now: NOW, color: false });
        assertGolden(new URL(file.replace(/\.yaml$/, '.txt'), dir), text);
      });
    }
  });

  it('has no escape codes without colour, and colours the phase symbol on a terminal', () => {
    const app = load('failed.yaml');
    assert.doesNotMatch(renderStatus(app, { now: NOW, color: false }), /\x1b/);
    const colored = renderStatus(app, { now: NOW, color: true });
    assert.match(colored, /Phase: +\x1b\[31m✖ Failed\x1b\[0m/);
    assert.equal(colored.replace(/\x1b\[\d+m/g, ''), renderStatus(app, { now: NOW, color: false }));
  });

  it('shows the traffic of each version as the data plane reports it, matched by version hash before revision', () => {
    const app = load('canary-steps.yaml');
    app.status!.traffic = [
      { revision: 'shop-00001', percent: 60 },
      { revision: 'shop-00002', version: 'b2b2b2b2b2', percent: 30, tag: 'candidate' },
      { revision: 'shop-00001', version: 'b2b2b2b2b2', percent: 10 },
    ];
    const traffic = [...renderStatus(app, { now: NOW, color: false }).matchAll(/Traffic: +(\d+%)/g)].map((m) => m[1]);
    assert.deepEqual(traffic, ['60%', '40%']);
  });

  const durations: Array<[number, string]> = [
    [0, '0s'], [59_000, '59s'], [60_000, '1m'], [200_000, '3m20s'], [30 * 60_000, '30m'],
    [2 * 3600_000 + 13 * 60_000, '2h13m'], [5 * 3600_000, '5h'], [50 * 3600_000, '2d2h'], [72 * 3600_000, '3d'],
  ];
  for (const [ms, text] of durations) it(`writes ${ms} ms as ${text}`, () => assert.equal(humanDuration(ms), text));

  it('says "in" for the future and "ago" for the past', () => {
    assert.equal(relativeTime(new Date('2026-11-22T14:13:00Z'), NOW), 'in 2h13m');
    assert.equal(relativeTime(new Date('2026-11-22T11:56:40Z'), NOW), '3m20s ago');
  });
});
