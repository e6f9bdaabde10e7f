// The noisy namespace must load the operator's hot paths, not its refusal path:
// its worst-case app is admitted by the default policy and fills the regex budget.
import assert from 'node:assert/strict';
import { re2ProgramSizeBound } from '../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, validateApp } from '../src/api/v1alpha1/validation.ts';
import { parseConfig, validationPolicy } from '../src/config.ts';
import { noisyRecord, noisyTable, worstCaseApp, type FloorEdit } from './noisy-neighbour.ts';

describe('noisy-neighbour benchmark: the worst-case app', () => {
  const policy = validationPolicy(parseConfig([], {}));
  for (const round of [0, 1, 2, 3, 4]) {
    it(`round ${round}: the operator admits it, and its 16 regexes use at least 90% of the RE2 budget`, () => {
      const app = worstCaseApp({ namespace: 'noisy', name: 'n-0' } as Parameters<typeof worstCaseApp>[0], round);
      assert.deepEqual(validateApp(app, policy), []);
      const regexes = (app.spec.rollout?.match ?? []).map((m) => m.regex).filter((r): r is string => !!r);
      assert.equal(regexes.length, 16);
      const cost = regexes.reduce((sum, r) => sum + re2ProgramSizeBound(r), 0);
      assert.ok(cost >= 0.9 * MAX_REGEX_PROGRAM_SIZE && cost <= MAX_REGEX_PROGRAM_SIZE, `RE2 cost ${cost} of ${MAX_REGEX_PROGRAM_SIZE}`);
    });
  }
});

describe('noisy-neighbour benchmark: the record of a tenant fairness run', () => {
  const phase = (flowControl?: Parameters<typeof noisyRecord>[0]['quiet']['flowControl']): Parameters<typeof noisyRecord>[0]['quiet'] => ({
    editsMs: [10, 20], editTimeouts: 0, healthMs: [1], healthFailures: 0, seconds: 10, cpuSeconds: 1, processCpu: { apiServer: 1 }, machineBusyCores: 1, cores: 2,
    editPaths: [], floor: [], noisyWrites: 0, ...(flowControl ? { flowControl } : {}),
  });

  it('names the setting and gives each FlowSchema its mean time queued and executing per request', () => {
    const rec = noisyRecord({ fairness: 'on', quiet: phase(), noisy: phase({ 'serverlessapp-tenant-writes': { requests: 4, waitSeconds: 0.4, executionSeconds: 2, rejected: 1 } }) });
    assert.equal(rec.tenantFairness, 'on');
    assert.deepEqual(rec.noisy.flowControl, { 'serverlessapp-tenant-writes': { requests: 4, rejected: 1, meanWaitMs: 100, meanExecutionMs: 500 } });
    assert.match(noisyTable(rec), /^tenant fairness on/);
    assert.match(noisyTable(rec), /API Priority and Fairness, noisy: serverlessapp-tenant-writes 4 requests \(1 rejected\), 100 ms queued, 500 ms executing/);
  });

  it('keeps the record as it was when the admin wrote (no setting, no APF figures)', () => {
    const rec = noisyRecord({ quiet: phase(), noisy: phase() });
    assert.equal('tenantFairness' in rec, false);
    assert.equal('flowControl' in rec.noisy, false);
    assert.doesNotMatch(noisyTable(rec), /tenant fairness|Priority and Fairness/);
  });
});

describe('noisy-neighbour benchmark: the way to the route\'s status', () => {
  const phase = (floor: FloorEdit[], shareCpuByNamespace: Record<string, number>): Parameters<typeof noisyRecord>[0]['quiet'] => ({
    editsMs: [10], editTimeouts: 0, healthMs: [1], healthFailures: 0, seconds: 10, cpuSeconds: 2, processCpu: { apiServer: 20 }, machineBusyCores: 1, cores: 2,
    editPaths: [], floor, noisyWrites: 0, shareCpuByNamespace,
  });
  const edit = (operatorMs: number, bareMs: number): FloorEdit => ({ wholeMs: 100 + operatorMs + 200, apiServerMs: 100, operatorMs, knativeMs: 200, bareMs });

  it('splits each storm\'s edits into the API server\'s, the operator\'s and Knative\'s parts, beside the bare Knative Service, with the goals\' ratios', () => {
    const rec = noisyRecord({ storm: { name: 'expensive-edits', describe: '4 apps' }, quiet: phase([edit(10, 300)], {}), noisy: phase([edit(40, 300), edit(60, 320)], { noisy: 0.5, victim: 0.01 }) });
    assert.deepEqual(rec.noisy.toRouteStatus.operator, { p50: 40, p90: 60 });
    assert.equal(rec.floorRatios.noisyCpuVsApiServer, 0.025);
    assert.equal(rec.floorRatios.wholeVsBareP50, 1.13);
    const table = noisyTable(rec);
    assert.match(table, /^storm expensive-edits: 4 apps/);
    assert.match(table, /to the route's status, noisy \(p50 \/ p90 ms, 2 edits\): whole 340 \/ 360 = API server 100 \/ 100 \+ operator \(watch, queue, reconcile to its write\) 40 \/ 60 \+ Knative 200 \/ 200; bare Knative Service 300 \/ 320/);
    assert.match(table, /operator CPU on noisy \/ API server CPU, noisy: 0.025 \(goal <= 0.05\)/);
  });
});
