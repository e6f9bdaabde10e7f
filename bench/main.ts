// `npm run bench [-- --apps N --json FILE]`: builds the operator (`npm run
// build`) and measures the built `node dist/main.js` (a child process) on its
// own control plane: convergence against the API server's ceiling,
// steady-state writes and CPU, edit latency, memory, restart, and
// scale-window precision. Below 1,000 apps the data plane is the rig's real
// Knative Serving and KServe on KWOK nodes; from 1,000 apps the SIMULATED
// stand-in, because thousands of real Deployments and KWOK pods would measure
// the rig rather than the operator (--data-plane overrides). Prints a table;
// --json writes the record (see docs/benchmarks.md for what each figure means).
// `--peer kserve` instead runs only the side-by-side comparison with the real
// KServe controller (bench/peer.ts).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { measureCeiling, measureConvergence, watchApps } from './convergence.ts';
import { measureEditLatency } from './edits.ts';
import { chartMemoryLimitBytes, measureMemory, MEMORY_NAMESPACES, memoryTable } from './memory.ts';
import { NOISY, VICTIM, measureNoisyNeighbour, noisyRecord, noisyTable } from './noisy-neighbour.ts';
import { runPeerKServe } from './peer.ts';
import { measurePlan, planTable } from './plan.ts';
import { peerRecord, peerTable } from './peer-report.ts';
import { buildDist, DATA_PLANE_LABEL, operatorCommand, sourceRevision, startBenchEnv, type BenchEnv, type DataPlaneKind } from './environment.ts';
import { logSummary, waitIdle } from './operator-metrics.ts';
import { table, toRecord, type Results } from './report.ts';
import { measureRefusedRestart, measureRestart, refusedRestartTable } from './restart.ts';
import { analysisTable, measureAnalysisCost } from './analysis.ts';
import { STORMS, type StormName } from './storms.ts';
import { secondsSince } from './stats.ts';
import { measureSteady } from './steady.ts';
import { NO_STARTUP_READS, clockCreatedBy, measureWindowLag, windowAt } from './windows.ts';
import { appRefs } from './workload.ts';

/** From this many apps the default data plane is the stand-in: the real one would be thousands of Deployments and KWOK pods. */
const REAL_DATA_PLANE_BELOW = 1000;

const USAGE = `Usage: npm run bench -- [--apps 1000] [--data-plane auto|real|standin] [--json FILE] [--concurrency 8] [--edits 50]
                       [--window-apps 50] [--steady-seconds 30] [--no-real-clock] [--cpu-prof DIR]
       npm run bench -- --peer kserve [--apps 1000] [--idle-seconds 60] [--concurrency 8] [--json FILE]
       npm run bench -- --scenario plan [--apps 10000] [--plan-runs 20] [--plan-rounds 1] [--plan-baseline DIR] [--json FILE]
       npm run bench -- --scenario noisy-neighbour [--victim-apps 4] [--noisy-apps 4] [--noisy-edits 40] [--data-plane real|standin] [--json FILE] [--cpu-prof DIR]
                        [--tenant-fairness off|on|off,on|on,off] [--tenant-shares 1]
                        [--storms worst-case,expensive-edits,label-storm,refused-models] [--large-apps 40] [--refused-models 500]
                        [--operator-arg=--namespace-cpu-share=30m ...]
       npm run bench -- --scenario memory [--memory-counts 0,50,200,500,1000] [--memory-refused-counts 0,50,230] [--json FILE]
       npm run bench -- --scenario restart-refused [--refused-apps 5000] [--json FILE] [--cpu-prof DIR]
       npm run bench -- --scenario analysis [--analysis-apps 1000] [--analysis-seconds 60] [--json FILE]
  --data-plane auto: the real Knative and KServe below ${REAL_DATA_PLANE_BELOW} apps, the SIMULATED stand-in from there on
  --peer kserve: only the side-by-side run, the operator (model apps -> InferenceServices) then the real KServe
                 controller (InferenceServices -> Knative Services) on one API server, no data plane
  --scenario noisy-neighbour: only the isolation run: the victim namespace's canary edits alone, then while another
                 namespace applies worst-case apps and edit storms; noisy/quiet ratios (bench/noisy-neighbour.ts)
  --storms: the noisy phases, one per storm after one quiet phase (bench/storms.ts): worst-case apps and label
                 edits (the default), expensive edits (new regexes and windows in new zones each edit), a label
                 storm on --large-apps large apps, --refused-models refused model apps re-applied; per storm the
                 victim's edit to the route's status in parts (API server, operator, Knative) beside the same edit
                 on a bare Knative Service, and the operator's CPU on the noisy namespace against the API server's
  --scenario restart-refused: the operator restarted with --refused-apps refused model apps in one namespace,
                 against an empty namespace's restart plus a bare LIST of the apps (bench/restart.ts)
  --scenario analysis: --analysis-apps apps in a canary step gated on an SLO at a 10 s cadence: the queries per
                 second sent to a loopback Prometheus and the operator's CPU, with the per-namespace query
                 budget and without it (bench/analysis.ts)
  --operator-arg: a flag for the operator beside the ones the benchmark sets (repeat for more), e.g. a namespace share
  --tenant-fairness: each namespace writes as a tenant user of its own instead of the admin, and the pair of
                 phases runs once per setting, in order: off (the API server's built-in FlowSchemas) or on (a
                 FlowSchema per-namespace fair for ServerlessApp writes, bench/tenant-fairness.ts, with
                 --tenant-shares nominal concurrency shares for the tenants' priority level)
  --scenario plan: only the latency of kubectl sapp plan (the built CLI) with --apps ServerlessApps in the
                 cluster and no operator (bench/plan.ts); --apps defaults to 10000 here; --plan-rounds N repeats the
                 measurement N times on the same apps (medians over the rounds); --plan-baseline DIR times
                 DIR/dist/cli/kubectl-sapp.js too, interleaved run by run (a before/after in one session)
  --scenario memory: only the operator's RSS against the number of the largest apps (bench/memory.ts): a fresh
                 operator per count, with the heap V8 gives it under the chart's memory limit; --memory-counts for the
                 largest app it reads (a spec just under MAX_APP_SPEC_BYTES), --memory-refused-counts for the largest
                 the CRD admits (about 1.3 MiB, refused for its size)`;

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '1000' },
    'data-plane': { type: 'string', default: 'auto' },
    json: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
    edits: { type: 'string', default: '50' },
    'window-apps': { type: 'string', default: '50' },
    'steady-seconds': { type: 'string', default: '30' },
    'no-real-clock': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    'operator-arg': { type: 'string', multiple: true },
    peer: { type: 'string' },
    'idle-seconds': { type: 'string', default: '60' },
    scenario: { type: 'string' },
    'victim-apps': { type: 'string', default: '4' },
    'noisy-apps': { type: 'string', default: '4' },
    'noisy-edits': { type: 'string', default: '40' },
    'tenant-fairness': { type: 'string' },
    'tenant-shares': { type: 'string', default: '1' },
    storms: { type: 'string' },
    'large-apps': { type: 'string', default: '40' },
    'refused-models': { type: 'string', default: '500' },
    'refused-apps': { type: 'string', default: '5000' },
    'plan-runs': { type: 'string', default: '20' },
    'plan-rounds': { type: 'string', default: '1' },
    'plan-baseline': { type: 'string' },
    'memory-counts': { type: 'string', default: '0,50,200,500,1000' },
    'memory-refused-counts': { type: 'string', default: '0,50,230' },
    'analysis-apps': { type: 'string', default: '1000' },
    'analysis-seconds': { type: 'string', default: '60' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const int = (name: keyof typeof values, min: number) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) {
    console.error(`--${name} must be an integer >= ${min}\n${USAGE}`);
    process.exit(2);
  }
  return n;
};
const apps = int('apps', 10);
const concurrency = int('concurrency', 1);
const editCount = Math.min(int('edits', 1), apps);
const windowApps = int('window-apps', 1);
const steadyMs = int('steady-seconds', 1) * 1000;
const idleMs = int('idle-seconds', 1) * 1000;
if (values.scenario !== undefined && !['noisy-neighbour', 'plan', 'memory', 'restart-refused', 'analysis'].includes(values.scenario)) {
  console.error(`--scenario must be noisy-neighbour, plan, memory, restart-refused or analysis\n${USAGE}`);
  process.exit(2);
}
const stormNames = values.storms?.split(',');
if (stormNames && (!stormNames.length || stormNames.some((s) => !(STORMS as readonly string[]).includes(s)))) {
  console.error(`--storms must be a comma-separated list of ${STORMS.join(', ')}\n${USAGE}`);
  process.exit(2);
}
if (values.peer !== undefined && values.peer !== 'kserve') {
  console.error(`--peer must be kserve\n${USAGE}`);
  process.exit(2);
}
const fairnessSettings = values['tenant-fairness']?.split(',');
if (fairnessSettings && (!fairnessSettings.length || fairnessSettings.some((f) => f !== 'off' && f !== 'on'))) {
  console.error(`--tenant-fairness must be off, on, or both in the order to run them (off,on or on,off)\n${USAGE}`);
  process.exit(2);
}
const dataPlaneFlag = values['data-plane'];
if (!['auto', 'real', 'standin'].includes(dataPlaneFlag!)) {
  console.error(`--data-plane must be auto, real or standin\n${USAGE}`);
  process.exit(2);
}
const dataPlane: DataPlaneKind = dataPlaneFlag === 'auto' ? (apps < REAL_DATA_PLANE_BELOW ? 'real' : 'standin') : dataPlaneFlag as DataPlaneKind;
const dataPlaneReason = dataPlaneFlag !== 'auto' ? '--data-plane'
  : dataPlane === 'real' ? `the default below ${REAL_DATA_PLANE_BELOW} apps`
  : `the default from ${REAL_DATA_PLANE_BELOW} apps: the real Knative would create ${apps} Deployments and KWOK pods and measure the rig, not the operator`;

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
const APP_NAMESPACES = Array.from({ length: 10 }, (_, i) => `bench-${i}`);
const WINDOWS = 'bench-windows';
const REAL_WINDOWS = 'bench-windows-real';
const CEILING = 'bench-ceiling';
/** A Monday morning far from any daylight-saving change: the controlled clock's window opens here. */
const CONTROLLED_OPENING = new Date('2030-01-07T08:00:00Z');
const REAL_CLOCK_APPS = 10;

const started = performance.now();
const startedAt = new Date();
log('building the operator (npm run build): the benchmark runs node dist/main.js, what ships');
const buildSeconds = await buildDist();
const builtFrom = await sourceRevision();
log(`  built in ${buildSeconds.toFixed(1)} s from ${builtFrom}`);
if (values.peer) process.exit(await peerKServe());
if (values.scenario === 'noisy-neighbour') process.exit(await noisyNeighbour());
if (values.scenario === 'plan') process.exit(await planScenario());
if (values.scenario === 'memory') process.exit(await memoryScenario());
if (values.scenario === 'restart-refused') process.exit(await restartRefused());
if (values.scenario === 'analysis') process.exit(await analysisScenario());
log(`${apps} apps, operator --concurrency ${concurrency}; data plane: ${DATA_PLANE_LABEL[dataPlane]} (${dataPlaneReason}); starting the control plane`);
const env = await startBenchEnv({
  dataPlane, namespaces: [...APP_NAMESPACES, WINDOWS, REAL_WINDOWS], otherNamespaces: [CEILING],
  operatorConcurrency: concurrency, readyDelayMs: 100, log,
});
let exitCode = 0;
const watch = watchApps(env);
try {
  const refs = appRefs(apps, APP_NAMESPACES);
  log('ceiling: a bare client applies the rendered Knative Services');
  const ceiling = await measureCeiling(env, refs, CEILING);
  log(`  ${ceiling.perSecond.toFixed(1)} objects/s`);
  const ceilingDrainSeconds = await env.drained(CEILING);
  if (dataPlane === 'real') log(`  Knative and the garbage collector cleared what they made for the ceiling's Services in ${ceilingDrainSeconds.toFixed(1)} s`);

  const nodeArgs = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`] : [];
  let op = await env.startOperator({ nodeArgs });
  await watch.start();
  log('convergence');
  const convergence = await measureConvergence(env, op, refs, watch, log);
  log(`  ${convergence.seconds.toFixed(1)} s, ${convergence.perSecond.toFixed(1)} apps/s; the operator wrote ${convergence.operatorWrites}`);

  log(`steady state: ${steadyMs / 1000} s with nothing to do`);
  const steady = await measureSteady(env, op, steadyMs);
  log(`  ${steady.writes} writes${steady.written ? ` (${steady.written})` : ''}, ${steady.cpuSeconds.toFixed(2)} s CPU`);
  log(`edit latency: ${editCount} canaryPercent edits`);
  const edits = await measureEditLatency(env, refs, editCount);

  const operatorWarnings = logSummary(op);
  if (operatorWarnings) log(`the operator warned: ${operatorWarnings}`);
  log(`restart: ${values['cpu-prof'] ? 'SIGTERM (to write the profile)' : 'SIGKILL'}, then a new operator`);
  const restart = await measureRestart(env, op, apps, { signal: values['cpu-prof'] ? 'SIGTERM' : 'SIGKILL' });
  op = restart.operator;
  log(`  ready ${restart.readySeconds.toFixed(1)} s, drained ${restart.syncSeconds.toFixed(1)} s, ${restart.writes} writes${restart.written ? ` (${restart.written})` : ''}`);

  let realClockWindowLag: Results['realClockWindowLag'];
  if (!values['no-real-clock']) {
    // The next minute at least 20 s away: time to create the apps and see them serve first.
    const opening = new Date(Math.ceil((Date.now() + 20_000) / 60_000) * 60_000);
    log(`window precision on the real clock: ${REAL_CLOCK_APPS} apps, window opens at ${opening.toISOString()}`);
    realClockWindowLag = await measureWindowLag(env, appRefs(REAL_CLOCK_APPS, [REAL_WINDOWS]), windowAt(opening, 1), opening.getTime());
  }

  // The new operator must sync every app and serve the window's apps before its clock reaches the opening;
  // the real Knative needs longer to make their revisions on a busy machine (25 s was too short under load 7).
  const leadMs = Math.round(restart.syncSeconds * 1000 * 1.5) + (env.dataPlane === 'real' ? 60_000 : 25_000);
  await op.stop();
  const clockStart = new Date(CONTROLLED_OPENING.getTime() - leadMs);
  log(`window precision on a controlled clock: ${windowApps} apps, --clock-start ${clockStart.toISOString()} (${leadMs / 1000} s before the opening)`);
  op = await env.startOperator({ clockStart: clockStart.toISOString(), logLevel: 'info', args: NO_STARTUP_READS });
  await waitIdle(op, { minReconciles: apps });
  const windowLag = await measureWindowLag(env, appRefs(windowApps, [WINDOWS]), windowAt(CONTROLLED_OPENING, 2), clockCreatedBy(op) + leadMs);

  const record = toRecord({
    apps, dataPlane, dataPlaneReason, operator: { command: operatorCommand(), builtFrom, buildSeconds },
    operatorConcurrency: concurrency, ceiling, ceilingDrainSeconds, convergence, steady, edits, restart, operatorWarnings,
    windowLag, ...(realClockWindowLag ? { realClockWindowLag } : {}),
    startedAt, seconds: secondsSince(started),
  });
  console.log(table(record));
  writeRecord(record);
} catch (err) {
  log(`failed: ${(err as Error).stack ?? String(err)}`);
  exitCode = 1;
} finally {
  watch.stop();
  await env.stop();
}
process.exit(exitCode);

async function planScenario(): Promise<number> {
  const count = process.argv.includes('--apps') || process.argv.some((a) => a.startsWith('--apps=')) ? apps : 10_000;
  log(`plan scenario: ${count} apps, no operator; starting the control plane`);
  return onControlPlaneOfItsOwn('standin', APP_NAMESPACES, async (penv) => {
    const result = await measurePlan(penv, count, APP_NAMESPACES, int('plan-runs', 1), log, {
      rounds: int('plan-rounds', 1), ...(values['plan-baseline'] ? { baseline: values['plan-baseline'] } : {}),
    });
    console.log(planTable(result));
    writeRecord({ scenario: 'plan', operator: { command: 'node dist/cli/kubectl-sapp.js plan -f', builtFrom }, startedAt, seconds: secondsSince(started), ...result });
  });
}

async function memoryScenario(): Promise<number> {
  const counts = (name: 'memory-counts' | 'memory-refused-counts') => {
    const list = values[name]!.split(',').map(Number);
    if (list.some((n) => !Number.isInteger(n) || n < 0)) {
      console.error(`--${name} must be counts, e.g. 0,50,200\n${USAGE}`);
      process.exit(2);
    }
    return list;
  };
  const wanted = { read: counts('memory-counts'), refused: counts('memory-refused-counts') };
  log('memory scenario; data plane: the stand-in; starting the control plane');
  return onControlPlaneOfItsOwn('standin', Object.values(MEMORY_NAMESPACES), async (menv) => {
    const points = await measureMemory(menv, { counts: wanted, log });
    console.log(memoryTable(points));
    writeRecord({ scenario: 'memory', operator: { command: operatorCommand(), builtFrom }, chartMemoryLimitBytes: chartMemoryLimitBytes(), startedAt, seconds: secondsSince(started), points });
  });
}

async function noisyNeighbour(): Promise<number> {
  // Few apps: the real data plane unless asked otherwise (auto would pick it too below ${REAL_DATA_PLANE_BELOW} apps).
  const plane: DataPlaneKind = dataPlaneFlag === 'standin' ? 'standin' : 'real';
  log(`noisy neighbour; data plane: ${DATA_PLANE_LABEL[plane]}; starting the control plane`);
  return onControlPlaneOfItsOwn(plane, [VICTIM, NOISY], async (nenv) => {
    const op = await nenv.startOperator({
      ...(values['cpu-prof'] ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`] } : {}),
      ...(values['operator-arg']?.length ? { args: values['operator-arg'] } : {}),
    });
    const results = await measureNoisyNeighbour(nenv, op, {
      victimApps: int('victim-apps', 1), noisyApps: int('noisy-apps', 1), edits: int('noisy-edits', 4), log,
      ...(stormNames ? { storms: stormNames as StormName[] } : {}),
      stormSizes: { largeApps: int('large-apps', 1), refusedModels: int('refused-models', 1) },
      ...(fairnessSettings ? { fairness: fairnessSettings as Array<'off' | 'on'>, tenantShares: int('tenant-shares', 1) } : {}),
    });
    const head = { scenario: 'noisy-neighbour', dataPlane: plane, operator: { command: operatorCommand(), builtFrom, ...(values['operator-arg']?.length ? { args: values['operator-arg'] } : {}) }, operatorConcurrency: concurrency, startedAt, seconds: secondsSince(started) };
    const records = results.map(noisyRecord);
    // One pair of phases: the record as it always was; one per tenant fairness setting or per storm: each under `runs`.
    const record = fairnessSettings ? { ...head, tenantShares: int('tenant-shares', 1), runs: records }
      : records.length > 1 ? { ...head, runs: records } : { ...head, ...records[0]! };
    console.log(records.map(noisyTable).join('\n\n'));
    const warnings = logSummary(op);
    if (warnings) log(`the operator warned: ${warnings}`);
    writeRecord(record);
    // SIGTERM, so that node writes the profile.
    if (values['cpu-prof']) await op.stop();
  });
}

async function analysisScenario(): Promise<number> {
  const count = int('analysis-apps', 10);
  log(`continuous analysis at ${count} apps; starting the control plane (the stand-in data plane)`);
  return onControlPlaneOfItsOwn('standin', APP_NAMESPACES, async (aenv) => {
    const result = await measureAnalysisCost(aenv, APP_NAMESPACES, count, int('analysis-seconds', 10) * 1000, log);
    console.log(analysisTable(result));
    writeRecord({ scenario: 'analysis', operator: { command: operatorCommand(), builtFrom }, operatorConcurrency: concurrency, startedAt, seconds: secondsSince(started), ...result });
  });
}

async function restartRefused(): Promise<number> {
  const namespace = 'refused';
  log(`restart with refused apps; starting the control plane (the stand-in data plane: refused apps have no children)`);
  return onControlPlaneOfItsOwn('standin', [namespace], async (renv) => {
    const op = await renv.startOperator();
    // With --cpu-prof, the restarted operator is profiled (its profile is written when it stops, below).
    const nodeArgs = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`] : undefined;
    const result = await measureRefusedRestart(renv, op, namespace, int('refused-apps', 1), log, nodeArgs);
    console.log(refusedRestartTable(result));
    const { operator, ...figures } = result;
    writeRecord({ scenario: 'restart-refused', operator: { command: operatorCommand(), builtFrom }, operatorConcurrency: concurrency, startedAt, seconds: secondsSince(started), ...figures });
    await operator.stop();
  });
}

/**
 * Runs a scenario on a control plane of its own (a stand-in data plane's revisions Ready after 100 ms), stopped
 * whatever happens: 0 when the scenario ran, 1 with its error logged when it failed.
 */
async function onControlPlaneOfItsOwn(dataPlane: DataPlaneKind, namespaces: string[], scenario: (env: BenchEnv) => Promise<void>): Promise<number> {
  const env = await startBenchEnv({ dataPlane, namespaces, otherNamespaces: [], operatorConcurrency: concurrency, readyDelayMs: 100, log });
  try {
    await scenario(env);
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).stack ?? String(err)}`);
    return 1;
  } finally {
    await env.stop();
  }
}

async function peerKServe(): Promise<number> {
  try {
    const record = peerRecord(await runPeerKServe({ apps, operatorConcurrency: concurrency, idleMs, builtFrom, log }));
    console.log(peerTable(record));
    writeRecord(record);
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).stack ?? String(err)}`);
    return 1;
  }
}

/** The run's record as JSON, when --json names a file. */
function writeRecord(record: unknown): void {
  if (!values.json) return;
  writeFileSync(values.json, `${JSON.stringify(record, null, 2)}\n`);
  log(`wrote ${values.json}`);
}
