// `npm run bench -- --scenario noisy-neighbour`: does one namespace's load
// delay another's? A victim namespace makes ordinary canary edits (a new
// image, canaryPercent 20, 50, promote) first alone (the quiet run), then
// while a noisy namespace keeps applying worst-case apps (16 header regexes
// within the CRD's 4096-character budget, 16 windows, lists at their maximum, warmup)
// and storms of metadata-only and spec edits (the noisy run), in the same
// benchmark run on the same operator. Reported as noisy/quiet ratios (goal
// <= 1.5): the victim's edit -> traffic write (both timestamps from the API
// server's audit log: the user's write of the app, then the operator's first
// write of its Knative Service or VirtualService), /healthz latency sampled
// every 100 ms from a worker thread (bench/health-sampler.ts: the noise is
// generated on the main thread), and the operator's CPU per namespace from
// serverlessapp_reconcile_seconds_total{namespace} where the operator exports it.
// Each edit waits (unmeasured) until the app's previous edit has taken effect
// on the data plane: an edit that changes nothing the operator renders has no
// traffic write to time.
// With --tenant-fairness, each namespace writes as a tenant user of its own
// (bench/tenants.ts) instead of the admin, whom API Priority and Fairness
// exempts, and the pair of phases runs once per setting given (off: the API
// server's built-in FlowSchemas; on: bench/tenant-fairness.ts's), in order,
// on the same operator and apps.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { re2ProgramSizeBound } from '../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, validateApp } from '../src/api/v1alpha1/validation.ts';
import { parseConfig, validationPolicy } from '../src/config.ts';
import { metricValue, type OperatorProcess } from '../test/support/operator-process.ts';
import { writeLabel, type AuditWrite } from '../test/envtest/audit.ts';
import { Kinds } from '../src/util/kinds.ts';
import { findCondition } from '../src/util/conditions.ts';
import { AuditTail } from './audit-tail.ts';
import { groupCpu, machineCpu } from './proc.ts';
import { sampleHealth } from './health-sampler.ts';
import { SlimWatch } from './watch.ts';
import { BENCH_USER_AGENT, OPERATOR_USER_AGENT, type BenchEnv } from './environment.ts';
import { percentile, round, sleep } from './stats.ts';
import { editPath, summarizePaths, type EditPath } from './edit-path.ts';
import { benchApp, forEachBounded, imageOf, keyOf, type AppRef } from './workload.ts';
import { flowCounters, flowIncrease, makeTenants, setTenantFairness, type FlowCounters } from './tenants.ts';
import type { KubeClient } from '../src/runtime/client.ts';
import { bareCopy, bareEdit, bareName, operatorKsvc, routeSplits, splitReported, splitText } from './knative-floor.ts';
import { prepareStorm, type Storm, type StormName, type StormSizes } from './storms.ts';

export const VICTIM = 'victim';
export const NOISY = 'noisy';
/** The metric the fairness work adds: reconcile CPU seconds per namespace. */
const CPU_METRIC = 'serverlessapp_reconcile_seconds_total';
const RECONCILES_METRIC = 'serverlessapp_reconciles_total';
const QUEUE_WAIT_METRIC = 'serverlessapp_queue_wait_seconds_total';
/** Main-thread CPU charged to each namespace's share (runtime/namespace-share.ts). */
const SHARE_CPU_METRIC = 'serverlessapp_namespace_cpu_seconds_total';
const DEFERRALS_METRIC = 'serverlessapp_namespace_deferrals_total';
/** An edit whose traffic write does not come within this long counts as this long (and is reported as a timeout, saying what it waited for). */
const EDIT_TIMEOUT_MS = 60_000;
const HEALTH_EVERY_MS = 100;
const HEALTH_TIMEOUT_MS = 30_000;

export interface NoisyOptions {
  /** Victim apps, edited in turn. */
  victimApps: number;
  /** Edits per phase (quiet, then noisy). */
  edits: number;
  /** Worst-case apps the noisy namespace keeps applying. */
  noisyApps: number;
  /**
   * Tenant fairness for each pair of phases, in order; absent: one pair, both namespaces written by the admin
   * (as before the option existed).
   */
  fairness?: Array<'off' | 'on'>;
  /** The tenants' priority level's nominalConcurrencyShares when on (bench/tenant-fairness.ts). */
  tenantShares?: number;
  /** The noisy phases, one per storm after one quiet phase (bench/storms.ts); default the worst-case storm alone. */
  storms?: StormName[];
  /** How large the label and refused-model storms are (bench/main.ts --large-apps, --refused-models); the others edit the noisy apps. */
  stormSizes: Pick<StormSizes, 'largeApps' | 'refusedModels'>;
  log: (line: string) => void;
}

export interface PhaseFigures {
  editsMs: number[];
  editTimeouts: number;
  healthMs: number[];
  healthFailures: number;
  seconds: number;
  /** Operator CPU seconds in the phase (process_cpu_seconds_total). */
  cpuSeconds: number;
  /**
   * Where the machine's CPU went in the phase: seconds per process group (API server, etcd, the data
   * plane's processes, the operator, this benchmark), and the machine's busy cores (of `cores`), all processes.
   */
  processCpu: Record<string, number>;
  machineBusyCores: number;
  cores: number;
  /** Reconcile CPU seconds per namespace in the phase, or undefined when the operator does not export it. */
  cpuByNamespace?: Record<string, number>;
  /** Per namespace: reconciles, and seconds its keys waited in the work queue (where the operator exports them). */
  reconcilesByNamespace?: Record<string, number>;
  queueWaitByNamespace?: Record<string, number>;
  /** Each edit's time split between the API server, the app's own earlier writes and the rest (bench/edit-path.ts). */
  editPaths: EditPath[];
  noisyWrites: number;
  /** Each edit to the moment Knative reported its split in the route's status, in parts, beside the same edit on a bare Knative Service. */
  floor: FloorEdit[];
  /** Main-thread CPU charged per namespace (the share's accounting), and keys deferred per namespace. */
  shareCpuByNamespace?: Record<string, number>;
  deferralsByNamespace?: Record<string, number>;
  /** The API server's Priority and Fairness counters per FlowSchema over the phase (with tenant users). */
  flowControl?: FlowCounters;
}

/** One victim edit to the moment Knative's route reports its split: sent -> stored (API server) -> the operator's write -> reported; and the bare Knative Service's. */
export interface FloorEdit {
  wholeMs: number;
  apiServerMs: number;
  /** Watch, queue, reconcile up to the operator's write of the Knative Service. */
  operatorMs: number;
  /** The operator's write -> the route reports the split (Knative's part). */
  knativeMs: number;
  /** The same edit straight to a bare Knative Service: sent -> the route reports the split. */
  bareMs: number;
}

export interface NoisyResult {
  /** The tenant fairness setting of this pair of phases, when tenants wrote. */
  fairness?: 'off' | 'on';
  /** The storm of the noisy phase (bench/storms.ts). */
  storm?: { name: StormName; describe: string };
  quiet: PhaseFigures;
  noisy: PhaseFigures;
}

/**
 * 16 header regexes that compile slowly (the issue's `\pL{1000}`: a Unicode class and a counted repetition), as
 * large as the operator admits: the regexes of one app compile to at most MAX_REGEX_PROGRAM_SIZE RE2 instructions
 * in all, as re2ProgramSizeBound counts them (a Unicode class costs its table, so `\pL{n}` is far over for any
 * large n). Each is its 1/16: one `\pL`, then the longest counted repetition that fits. An app over the budget
 * never reaches the hot paths (no Knative Service, no window math), so a noisy namespace made of it would
 * measure only the refusal path; the run checks the operator admits it (below).
 */
const heavyRegex = (i: number) => {
  const regex = (n: number) => `\\pL[a-z]{${n}}`;
  let n = 1;
  while (re2ProgramSizeBound(regex(n + 1)) <= MAX_REGEX_PROGRAM_SIZE / 16 - (i % 3)) n++;
  return regex(n);
};

/** The worst case the schema admits on the hot paths: regexes, windows, long lists, warmup. */
export function worstCaseApp(ref: AppRef, round: number): ServerlessApp {
  const app = benchApp(ref, imageOf(ref, 1 + (round % 3)), {
    ingress: { hosts: [`${ref.name}.${ref.namespace}.example.com`], timeout: '30s' },
    rollout: {
      canaryPercent: 10 + (round % 5) * 10,
      match: Array.from({ length: 16 }, (_, i) => ({ header: `x-noisy-${i}`, regex: heavyRegex(i) })),
    },
    scaling: {
      minScale: 0, maxScale: 10, target: 100,
      windows: Array.from({ length: 16 }, (_, i) => ({
        name: `w-${i}`, schedule: `${i * 3} ${i % 24} * * ${i % 7}`, duration: `${1 + i}h`, minScale: 1, maxScale: 10,
        timeZone: ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo'][i % 4]!,
      })),
    },
    prewarm: { replicas: 1, leadTime: '10m', warmup: { path: '/warm', method: 'POST', body: 'x'.repeat(4096), count: 5, headers: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`x-h-${i}`, 'v'.repeat(256)])) } },
  });
  app.spec.container!.args = Array.from({ length: 256 }, (_, i) => `--flag-${i}=${'a'.repeat(64)}`);
  return app;
}

/** Steps per victim edit cycle: a new image at canaryPercent 10, then 20, 50, then promote (100). */
const CYCLE = 4;

/** One victim edit cycle: a new image at canaryPercent 10, then 20, 50, then promote (100). */
function victimEdit(ref: AppRef, step: number): ServerlessApp {
  return benchApp(ref, imageOf(ref, 2 + Math.floor(step / CYCLE)), {
    ingress: { hosts: [`${ref.name}.${ref.namespace}.example.com`], timeout: '30s' },
    rollout: { canaryPercent: [10, 20, 50, 100][step % CYCLE]! },
  });
}

/** What the bench reads of a victim to know its last edit has taken effect. */
interface VictimState { generation?: number; observed?: number; ready?: string; candidate: boolean; candidateReady: boolean; trafficPercent?: number; canaryPercent?: number }

function victimState(o: unknown): VictimState {
  const app = o as ServerlessApp;
  const candidate = app.status?.versions?.candidate;
  return {
    generation: app.metadata.generation, observed: app.status?.observedGeneration,
    ready: findCondition(app.status?.conditions, 'Ready')?.status,
    candidate: !!candidate, candidateReady: !!candidate?.ready, trafficPercent: app.status?.canary?.trafficPercent,
    canaryPercent: app.spec.rollout?.canaryPercent,
  };
}

/**
 * The app's last edit has taken effect: the status is of its generation, it serves, and a
 * candidate is ready and at the spec's weight as the data plane reports it (or was promoted).
 * Only then does the next edit change what the operator renders: a weight edit of a candidate
 * that is not ready yet changes nothing (a candidate gets traffic only once ready), so there
 * would be no traffic write to wait for.
 */
const settled = (v: VictimState) => v.observed === v.generation && v.ready === 'True' && (!v.candidate || (v.candidateReady && v.trafficPercent === v.canaryPercent));
/** How long an edit's effect may take on the data plane (a new revision on KWOK) before the next edit of the app goes ahead anyway. */
const SETTLE_TIMEOUT_MS = 180_000;

type PerNamespace = Record<string, number>;

/** A counter's series summed per namespace (one series per controller and namespace), or undefined when not exported. */
function perNamespace(samples: Awaited<ReturnType<OperatorProcess['metrics']>>, metric: string): PerNamespace | undefined {
  const per = samples.filter((s) => s.name === metric && s.labels.namespace !== undefined);
  if (!per.length) return undefined;
  const sums: PerNamespace = {};
  for (const s of per) sums[s.labels.namespace!] = (sums[s.labels.namespace!] ?? 0) + s.value;
  return sums;
}

async function cpu(op: OperatorProcess): Promise<{ total: number; byNamespace?: PerNamespace; reconciles?: PerNamespace; queueWait?: PerNamespace; share?: PerNamespace; deferrals?: PerNamespace }> {
  const samples = await op.metrics();
  const byNamespace = perNamespace(samples, CPU_METRIC), reconciles = perNamespace(samples, RECONCILES_METRIC), queueWait = perNamespace(samples, QUEUE_WAIT_METRIC);
  const share = perNamespace(samples, SHARE_CPU_METRIC), deferrals = perNamespace(samples, DEFERRALS_METRIC);
  return {
    total: metricValue(samples, 'process_cpu_seconds_total'), ...(byNamespace ? { byNamespace } : {}), ...(reconciles ? { reconciles } : {}), ...(queueWait ? { queueWait } : {}),
    ...(share ? { share } : {}), ...(deferrals ? { deferrals } : {}),
  };
}

/** after - before, per namespace. */
function increase(after: PerNamespace | undefined, before: PerNamespace | undefined): PerNamespace | undefined {
  return after ? Object.fromEntries(Object.entries(after).map(([ns, v]) => [ns, round(v - (before?.[ns] ?? 0), 3)])) : undefined;
}

/** The operator's writes of the app's own objects (Knative Service, VirtualService, status, ...) after `since`. */
function operatorWritesOf(audit: AuditTail, ref: AppRef, since: Date): AuditWrite[] {
  const names = new Set([ref.name, `${ref.name}-routes`]);
  return audit.writes().filter((x) => x.userAgent.startsWith(OPERATOR_USER_AGENT) && x.namespace === ref.namespace && names.has(x.name ?? '') && x.timestamp > since);
}

/** A write of the app's Knative Service or VirtualService itself (not a subresource) that the API server took. */
const isTrafficWrite = (x: AuditWrite) => (x.resource === 'services' && x.apiGroup === 'serving.knative.dev' || x.resource === 'virtualservices') && !x.subresource && (x.code ?? 200) < 400;

/** The operator's first write of the app's Knative Service or VirtualService after `since` (the audit log's record). */
async function trafficWriteAfter(audit: AuditTail, ref: AppRef, since: Date, deadline: number): Promise<AuditWrite | undefined> {
  while (performance.now() < deadline) {
    const w = operatorWritesOf(audit, ref, since).find(isTrafficWrite);
    if (w) return w;
    await sleep(50);
  }
  return undefined;
}

/** The API server's record of the bench's write of the app sent at `sent` (the edit as the API server saw it). */
async function editAccepted(audit: AuditTail, ref: AppRef, sent: Date): Promise<AuditWrite> {
  for (;;) {
    // The audit line can land just after the response: wait for this write's own line, never take an older one.
    const w = audit.writes().find((x) => x.userAgent.startsWith(BENCH_USER_AGENT) && x.resource === 'serverlessapps' && x.namespace === ref.namespace && x.name === ref.name && !x.subresource && x.timestamp >= sent);
    if (w) return w;
    await sleep(20);
  }
}

/** Why an edit got no traffic write: what the operator wrote for the app meanwhile, and what the app and its Knative Service say now. */
async function whyNoTrafficWrite(env: BenchEnv, audit: AuditTail, ref: AppRef, edit: ServerlessApp, accepted: Date): Promise<string> {
  const wrote = operatorWritesOf(audit, ref, accepted).map((w) => `${writeLabel(w)} ${w.name} ${w.code ?? ''}`.trim());
  const app = await env.client.get<ServerlessApp>(Kinds.ServerlessApp, ref.namespace, ref.name);
  const ksvc = await env.client.get<{ spec?: { template?: { metadata?: { name?: string }; spec?: { containers?: Array<{ image?: string }> } }; traffic?: unknown } }>(Kinds.KnativeService, ref.namespace, ref.name);
  const cond = (type: string) => { const c = findCondition(app?.status?.conditions, type); return c ? `${type}=${c.status} ${c.reason}: ${c.message}` : `${type} absent`; };
  return [
    `edit (image ${edit.spec.container?.image}, canaryPercent ${edit.spec.rollout?.canaryPercent}) accepted ${accepted.toISOString()}`,
    `operator wrote meanwhile: ${wrote.length ? wrote.join(', ') : 'nothing'}`,
    `app generation ${app?.metadata.generation}, observedGeneration ${app?.status?.observedGeneration}, phase ${app?.status?.phase}; ${cond('Ready')}; ${cond('CanaryProgressing')}; ${cond('Promoted')}`,
    `versions ${JSON.stringify(app?.status?.versions ?? {})}`,
    `Knative Service template ${ksvc?.spec?.template?.metadata?.name} image ${ksvc?.spec?.template?.spec?.containers?.[0]?.image}, traffic ${JSON.stringify(ksvc?.spec?.traffic)}`,
  ].join('\n    ');
}

async function phase(env: BenchEnv, op: OperatorProcess, writer: KubeClient, refs: AppRef[], audit: AuditTail, victims: SlimWatch<VictimState>, routes: SlimWatch<string>, edits: number, firstStep: number, noise: (() => Promise<number>) | undefined, tenants: boolean, log: (line: string) => void): Promise<PhaseFigures> {
  const started = performance.now();
  const before = await cpu(op);
  const flowsBefore = tenants ? await flowCounters(env) : undefined;
  const groups = { apiServer: [env.pids.apiServer], etcd: [env.pids.etcd], dataPlane: env.pids.dataPlane, operator: [op.pid], bench: [process.pid] };
  const groupsBefore = groupCpu(groups), machineBefore = machineCpu();
  const health = sampleHealth({ url: `http://127.0.0.1:${op.probePort}/healthz`, everyMs: HEALTH_EVERY_MS, timeoutMs: HEALTH_TIMEOUT_MS });
  await health.sampling;
  let stopNoise = false;
  let noisyWrites = 0;
  let noiseFailed: unknown;
  // A refused noisy write ends the phase with its error (not an unhandled rejection).
  const noisy = noise ? (async () => { while (!stopNoise) noisyWrites += await noise(); })().catch((err: unknown) => { noiseFailed = err; }) : undefined;
  const editsMs: number[] = [];
  const editPaths: EditPath[] = [];
  const floor: FloorEdit[] = [];
  let editTimeouts = 0;
  try {
    for (let k = 0; k < edits && noiseFailed === undefined; k++) {
      const ref = refs[k % refs.length]!;
      const step = firstStep + Math.floor(k / refs.length);
      const edit = victimEdit(ref, step);
      // Not measured: the data plane's pace (a new revision on KWOK), which the next edit of this app depends on.
      await victims.until(keyOf(ref), settled, SETTLE_TIMEOUT_MS)
        .catch((err: Error) => log(`edit ${k + 1} of ${keyOf(ref)} goes ahead unsettled: ${err.message}`));
      // Milliseconds (JS) against the audit log's microseconds, same clock: one before the request is received.
      const sent = new Date(Date.now() - 1);
      await writer.apply(edit);
      const acceptedWrite = await editAccepted(audit, ref, sent);
      const accepted = acceptedWrite.timestamp;
      const written = await trafficWriteAfter(audit, ref, accepted, performance.now() + EDIT_TIMEOUT_MS);
      if (!written) {
        editTimeouts++;
        log(`edit ${k + 1} of ${keyOf(ref)}: no write of its Knative Service or VirtualService by the operator within ${EDIT_TIMEOUT_MS / 1000} s\n    ${await whyNoTrafficWrite(env, audit, ref, edit, accepted)}`);
      } else {
        editPaths.push(editPath(acceptedWrite, written, operatorWritesOf(audit, ref, accepted)));
        const f = await toRouteStatus(env.client, routes, ref, sent, acceptedWrite, written, log);
        if (f) floor.push(f);
      }
      editsMs.push(written ? Math.max(0, written.timestamp.getTime() - accepted.getTime()) : EDIT_TIMEOUT_MS);
    }
  } finally {
    stopNoise = true;
    await noisy;
  }
  const h = await health.stop();
  if (noiseFailed !== undefined) throw new Error(`the noisy namespace's writes failed: ${(noiseFailed as Error).message ?? String(noiseFailed)}`);
  const after = await cpu(op);
  const flows = flowsBefore ? flowIncrease(await flowCounters(env), flowsBefore) : undefined;
  const groupsAfter = groupCpu(groups), machineAfter = machineCpu();
  const seconds = (performance.now() - started) / 1000;
  const byNamespace = increase(after.byNamespace, before.byNamespace);
  const reconciles = increase(after.reconciles, before.reconciles), queueWait = increase(after.queueWait, before.queueWait);
  return {
    editsMs, editPaths, editTimeouts, healthMs: h.ms, healthFailures: h.failures, seconds,
    processCpu: Object.fromEntries(Object.keys(groups).map((k) => [k, round(groupsAfter[k]! - groupsBefore[k]!, 2)])),
    machineBusyCores: round((machineAfter.busySeconds - machineBefore.busySeconds) / seconds, 2), cores: availableParallelism(),
    cpuSeconds: round(after.total - before.total, 3), ...(byNamespace ? { cpuByNamespace: byNamespace } : {}), noisyWrites, floor,
    ...(after.share ? { shareCpuByNamespace: increase(after.share, before.share)! } : {}),
    ...(after.deferrals ? { deferralsByNamespace: increase(after.deferrals, before.deferrals)! } : {}),
    ...(reconciles ? { reconcilesByNamespace: reconciles } : {}), ...(queueWait ? { queueWaitByNamespace: queueWait } : {}),
    ...(flows ? { flowControl: flows } : {}),
  };
}

/** How long the route may take to report a split (a new revision on the data plane) before the edit counts as not reported. */
const REPORT_TIMEOUT_MS = 120_000;

/**
 * The edit taken to Knative's report: the split the operator wrote (its Knative Service now), the moment the app's
 * route reports it, and then the same edit on the bare Knative Service. Undefined (and logged) when either route
 * did not report within REPORT_TIMEOUT_MS.
 */
async function toRouteStatus(client: KubeClient, routes: SlimWatch<string>, ref: AppRef, sent: Date, edit: AuditWrite, written: AuditWrite, log: (line: string) => void): Promise<FloorEdit | undefined> {
  const ksvc = await operatorKsvc(client, ref);
  if (!ksvc) return undefined;
  const split = splitText(ksvc.spec.traffic);
  const reported = await splitReported(routes, ref, ref.name, split, REPORT_TIMEOUT_MS);
  if (reported === undefined) {
    log(`${keyOf(ref)}: its route did not report the split ${split} within ${REPORT_TIMEOUT_MS / 1000} s (reports ${routes.values.get(keyOf(ref))})`);
    return undefined;
  }
  const bareMs = await bareEdit(client, routes, ksvc, ref, REPORT_TIMEOUT_MS);
  if (bareMs === undefined) {
    log(`${ref.namespace}/${bareName(ref)}: its route did not report the copied split within ${REPORT_TIMEOUT_MS / 1000} s (reports ${routes.values.get(`${ref.namespace}/${bareName(ref)}`)})`);
    return undefined;
  }
  const stored = (edit.completed ?? edit.timestamp).getTime();
  return {
    wholeMs: reported - sent.getTime(), apiServerMs: stored - sent.getTime(),
    operatorMs: written.timestamp.getTime() - stored, knativeMs: reported - written.timestamp.getTime(), bareMs,
  };
}

/**
 * Until the API server has drained the last phase's cascade (the data plane's work on the noisy apps'
 * revisions): under 0.3 of a core over 2 s, or 120 s. A pair of phases after the first starts there.
 */
async function apiServerQuiet(env: BenchEnv, log: (line: string) => void): Promise<void> {
  const pid = [env.pids.apiServer];
  const deadline = performance.now() + 120_000;
  while (performance.now() < deadline) {
    const before = groupCpu({ apiServer: pid }).apiServer!;
    await sleep(2_000);
    const cores = (groupCpu({ apiServer: pid }).apiServer! - before) / 2;
    if (cores < 0.3) return;
  }
  log('the API server was still busy after 120 s; the next pair of phases starts anyway');
}

/** Runs the quiet phase, then the noisy one, on a running operator: once, or once per tenant fairness setting. */
export async function measureNoisyNeighbour(env: BenchEnv, op: OperatorProcess, o: NoisyOptions): Promise<NoisyResult[]> {
  const audit = new AuditTail(join(env.cp.dir, 'audit.log'));
  const state = new SlimWatch(env.kc, Kinds.ServerlessApp, victimState, { namespaces: [VICTIM] });
  const routes = routeSplits(env.kc, [VICTIM]);
  await state.start();
  await routes.start();
  try {
    const victims = Array.from({ length: o.victimApps }, (_, i) => ({ namespace: VICTIM, name: `app-${i}` }));
    const noisyRefs = Array.from({ length: o.noisyApps }, (_, i) => ({ namespace: NOISY, name: `heavy-${i}` }));
    const tenants = o.fairness ? await makeTenants(env, [VICTIM, NOISY]) : undefined;
    const victimClient = tenants?.[VICTIM]!.client ?? env.client, noisyClient = tenants?.[NOISY]!.client ?? env.client;
    if (tenants) o.log(`each namespace writes as its tenant: ${Object.values(tenants).map((t) => `${t.namespace} as ${t.user}`).join(', ')}`);
    o.log(`victim: ${victims.length} apps; waiting for their first traffic write and for them to serve`);
    const created = new Date(Date.now() - 1000);
    await forEachBounded(victims, 8, (r) => victimClient.apply(victimEdit(r, CYCLE - 1)));
    for (const r of victims) if (!await trafficWriteAfter(audit, r, created, performance.now() + 300_000)) throw new Error(`victim ${r.name} got no Knative Service in 300 s`);
    // An edit before the first version serves replaces that version (no canary): the phases measure canary edits.
    await Promise.all(victims.map((r) => state.until(keyOf(r), settled, 300_000)));
    // The floor: a bare Knative Service per victim app, a copy of what the operator made for it, serving before the phases.
    for (const r of victims) {
      const ksvc = await operatorKsvc(env.client, r);
      if (!ksvc) throw new Error(`victim ${r.name} has no Knative Service`);
      if (await bareEdit(env.client, routes, ksvc, r, 300_000) === undefined) throw new Error(`the bare Knative Service ${bareName(r)}'s route reported no split in 300 s`);
    }

    // The worst case must be admitted (a dry run), or the noisy run would only measure refusals.
    for (let round = 0; round < 3; round++) await forEachBounded(noisyRefs, 4, (r) => noisyClient.apply(worstCaseApp(r, round), { dryRun: true }));
    // ... and by the operator (its default policy, as the bench runs it): a refused app never reaches the hot paths.
    const policy = validationPolicy(parseConfig([], {}));
    for (let round = 0; round < 3; round++) {
      const problems = validateApp(worstCaseApp(noisyRefs[0]!, round), policy);
      if (problems.length) throw new Error(`the operator refuses the worst-case app (round ${round}): ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
    }

    // Every phase starts at a new image and makes the same mix of edits (new images, weight changes, promotions).
    const steps = Math.ceil(Math.ceil(o.edits / victims.length) / CYCLE) * CYCLE;
    const sizes: StormSizes = { noisyApps: o.noisyApps, ...o.stormSizes };
    const storms: Storm[] = [];
    for (const name of o.storms ?? ['worst-case']) storms.push(await prepareStorm(name, noisyClient, NOISY, sizes, worstCaseApp, o.log));
    const results: NoisyResult[] = [];
    let phases = 0;
    for (const fairness of o.fairness ?? [undefined]) {
      const label = fairness ? ` (tenant fairness ${fairness})` : '';
      if (fairness) {
        await setTenantFairness(env, fairness === 'on', tenants![VICTIM]!, { nominalConcurrencyShares: o.tenantShares ?? 1 });
        o.log(`tenant fairness ${fairness}: the API server classifies ${tenants![VICTIM]!.user}'s writes ${fairness === 'on' ? 'by' : 'without'} the tenants' FlowSchema`);
      }
      if (results.length) await apiServerQuiet(env, o.log);
      o.log(`quiet run${label}: ${o.edits} victim edits alone`);
      const quiet = await phase(env, op, victimClient, victims, audit, state, routes, o.edits, CYCLE + phases++ * steps, undefined, !!tenants, o.log);
      for (const storm of storms) {
        if (storms.length > 1) await apiServerQuiet(env, o.log);
        o.log(`noisy run${label}, storm ${storm.name}: ${o.edits} victim edits while ${NOISY} writes without pause: ${storm.describe}`);
        const noisy = await phase(env, op, victimClient, victims, audit, state, routes, o.edits, CYCLE + phases++ * steps, () => storm.round(), !!tenants, o.log);
        results.push({ ...(fairness ? { fairness } : {}), storm: { name: storm.name, describe: storm.describe }, quiet, noisy });
      }
    }
    return results;
  } finally {
    state.stop();
    routes.stop();
    audit.close();
  }
}

/** The figures and the ratios the issue asks for. */
export function noisyRecord(r: NoisyResult) {
  const fig = (p: PhaseFigures) => ({
    editP50Ms: round(percentile(p.editsMs, 50)), editP99Ms: round(percentile(p.editsMs, 99)), editTimeouts: p.editTimeouts, edits: p.editsMs.length,
    healthP50Ms: round(percentile(p.healthMs, 50)), healthP99Ms: round(percentile(p.healthMs, 99)), healthSamples: p.healthMs.length, healthFailures: p.healthFailures,
    seconds: round(p.seconds, 1), cpuSeconds: p.cpuSeconds, processCpu: p.processCpu, machineBusyCores: p.machineBusyCores, cores: p.cores, cpuByNamespace: p.cpuByNamespace ?? 'unavailable (the operator does not export serverlessapp_reconcile_seconds_total)',
    noisyWrites: p.noisyWrites,
    editPath: summarizePaths(p.editPaths),
    toRouteStatus: summarizeFloor(p.floor),
    shareCpuByNamespace: p.shareCpuByNamespace ?? {}, deferralsByNamespace: p.deferralsByNamespace ?? {},
    /** The operator's CPU charged to the noisy namespace, and the whole operator's, against the API server's in the same phase. */
    noisyShareOfApiServerCpu: round((p.shareCpuByNamespace?.[NOISY] ?? 0) / Math.max(p.processCpu.apiServer ?? 0, 1e-9), 3),
    operatorOfApiServerCpu: round(p.cpuSeconds / Math.max(p.processCpu.apiServer ?? 0, 1e-9), 3),
    // Per FlowSchema: requests, and mean milliseconds queued in APF and executing (the API server's own counters).
    ...(p.flowControl ? { flowControl: Object.fromEntries(Object.entries(p.flowControl).map(([fs, f]) => [fs, {
      requests: f.requests, rejected: f.rejected, meanWaitMs: round((f.waitSeconds / Math.max(f.requests, 1)) * 1000, 2), meanExecutionMs: round((f.executionSeconds / Math.max(f.requests, 1)) * 1000, 1),
    }])) } : {}),
    // Mean per reconcile, per namespace: the time in the reconcile (waits on the API server included) and before it, in the queue.
    perReconcileMs: Object.fromEntries(Object.entries(p.reconcilesByNamespace ?? {}).map(([ns, n]) => [ns, {
      reconciles: n, reconcileMs: round(((p.cpuByNamespace?.[ns] ?? 0) / Math.max(n, 1)) * 1000, 1), queueWaitMs: round(((p.queueWaitByNamespace?.[ns] ?? 0) / Math.max(n, 1)) * 1000, 1),
    }])),
  });
  const quiet = fig(r.quiet), noisy = fig(r.noisy);
  const ratio = (a: number, b: number) => round(a / Math.max(b, 1), 2);
  return {
    ...(r.fairness ? { tenantFairness: r.fairness } : {}),
    ...(r.storm ? { storm: r.storm } : {}),
    quiet, noisy,
    ratios: {
      editP50: ratio(noisy.editP50Ms, quiet.editP50Ms), editP99: ratio(noisy.editP99Ms, quiet.editP99Ms),
      healthP50: ratio(noisy.healthP50Ms, quiet.healthP50Ms), healthP99: ratio(noisy.healthP99Ms, quiet.healthP99Ms),
      goal: 1.5,
    },
    // Issue 34's goals, each a ratio within the noisy phase: the whole path against the bare Knative Service's, and
    // the operator's CPU on the noisy namespace against the API server's.
    floorRatios: {
      wholeVsBareP50: round(noisy.toRouteStatus.whole.p50 / Math.max(noisy.toRouteStatus.bare.p50, 1), 2),
      quietWholeVsBareP50: round(quiet.toRouteStatus.whole.p50 / Math.max(quiet.toRouteStatus.bare.p50, 1), 2),
      wholeGoal: 1.2,
      noisyCpuVsApiServer: noisy.noisyShareOfApiServerCpu, cpuGoal: 0.05,
    },
  };
}

/** Medians and p90s of each part of the edits' way to Knative's report, and of the bare Knative Service's. */
export function summarizeFloor(edits: FloorEdit[]) {
  const part = (k: keyof FloorEdit) => {
    const v = edits.map((e) => e[k]);
    return { p50: round(percentile(v, 50)), p90: round(percentile(v, 90)) };
  };
  return { edits: edits.length, whole: part('wholeMs'), apiServer: part('apiServerMs'), operator: part('operatorMs'), knative: part('knativeMs'), bare: part('bareMs') };
}

export function noisyTable(rec: ReturnType<typeof noisyRecord>): string {
  const row = (name: string, q: unknown, n: unknown, ratio?: number) => `${name.padEnd(34)}${String(q).padStart(14)}${String(n).padStart(14)}${ratio !== undefined ? `${ratio.toFixed(2).padStart(10)}${ratio <= rec.ratios.goal ? '' : '  > goal'}` : ''}`;
  const cpuLine = (p: typeof rec.quiet) => typeof p.cpuByNamespace === 'string' ? p.cpuByNamespace : Object.entries(p.cpuByNamespace).map(([ns, s]) => `${ns} ${s} s`).join(', ');
  return [
    ...(rec.tenantFairness ? [`tenant fairness ${rec.tenantFairness} (each namespace writes as its tenant)`] : []),
    ...(rec.storm ? [`storm ${rec.storm.name}: ${rec.storm.describe}`] : []),
    `${''.padEnd(34)}${'quiet'.padStart(14)}${'noisy'.padStart(14)}${'ratio'.padStart(10)}`,
    row('victim edit -> traffic p50 (ms)', rec.quiet.editP50Ms, rec.noisy.editP50Ms, rec.ratios.editP50),
    row('victim edit -> traffic p99 (ms)', rec.quiet.editP99Ms, rec.noisy.editP99Ms, rec.ratios.editP99),
    row('edits (timeouts)', `${rec.quiet.edits} (${rec.quiet.editTimeouts})`, `${rec.noisy.edits} (${rec.noisy.editTimeouts})`),
    row('/healthz p50 (ms)', rec.quiet.healthP50Ms, rec.noisy.healthP50Ms, rec.ratios.healthP50),
    row('/healthz p99 (ms)', rec.quiet.healthP99Ms, rec.noisy.healthP99Ms, rec.ratios.healthP99),
    row('/healthz samples (failed)', `${rec.quiet.healthSamples} (${rec.quiet.healthFailures})`, `${rec.noisy.healthSamples} (${rec.noisy.healthFailures})`),
    row('operator CPU (s)', rec.quiet.cpuSeconds, rec.noisy.cpuSeconds),
    ...Object.keys(rec.noisy.processCpu).map((k) => row(`  CPU (s): ${k}`, rec.quiet.processCpu[k], rec.noisy.processCpu[k])),
    row('machine: busy cores (all processes)', `${rec.quiet.machineBusyCores} of ${rec.quiet.cores}`, `${rec.noisy.machineBusyCores} of ${rec.noisy.cores}`),
    row('noisy writes', rec.quiet.noisyWrites, rec.noisy.noisyWrites),
    `reconcile time per namespace (s), quiet: ${cpuLine(rec.quiet)}`,
    `reconcile time per namespace (s), noisy: ${cpuLine(rec.noisy)}`,
    ...(['quiet', 'noisy'] as const).map((k) => { const e = rec[k].editPath; return `edit path, ${k} (p50 / p90 ms): edit in the API server ${e.editInApiServer.p50} / ${e.editInApiServer.p90}, behind the app's own earlier writes ${e.behindOwnWrites.p50} / ${e.behindOwnWrites.p90} (${e.waitedBehindOwnWrites} of ${e.edits} edits), the rest (watch, queue, reconcile) ${e.rest.p50} / ${e.rest.p90}`; }),
    ...(['quiet', 'noisy'] as const).map((k) => `per reconcile, ${k}: ${Object.entries(rec[k].perReconcileMs).map(([ns, f]) => `${ns} ${f.reconciles} reconciles, ${f.reconcileMs} ms in reconcile, ${f.queueWaitMs} ms queued`).join('; ') || 'unavailable'}`),
    ...(['quiet', 'noisy'] as const).flatMap((k) => { const f = rec[k].flowControl; return f ? [`API Priority and Fairness, ${k}: ${Object.entries(f).sort(([, a], [, b]) => b.requests - a.requests).map(([fs, x]) => `${fs} ${x.requests} requests${x.rejected ? ` (${x.rejected} rejected)` : ''}, ${x.meanWaitMs} ms queued, ${x.meanExecutionMs} ms executing`).join('; ')}`] : []; }),
    ...(['quiet', 'noisy'] as const).map((k) => { const f = rec[k].toRouteStatus; return `to the route's status, ${k} (p50 / p90 ms, ${f.edits} edits): whole ${f.whole.p50} / ${f.whole.p90} = API server ${f.apiServer.p50} / ${f.apiServer.p90} + operator (watch, queue, reconcile to its write) ${f.operator.p50} / ${f.operator.p90} + Knative ${f.knative.p50} / ${f.knative.p90}; bare Knative Service ${f.bare.p50} / ${f.bare.p90}`; }),
    ...(['quiet', 'noisy'] as const).map((k) => `operator CPU charged per namespace (s), ${k}: ${Object.entries(rec[k].shareCpuByNamespace).map(([ns, v]) => `${ns} ${v}`).join(', ') || 'unavailable'}; keys deferred: ${Object.entries(rec[k].deferralsByNamespace).map(([ns, v]) => `${ns} ${v}`).join(', ') || 'none'}`),
    `whole path / bare Knative Service, p50: quiet ${rec.floorRatios.quietWholeVsBareP50}, noisy ${rec.floorRatios.wholeVsBareP50}${rec.floorRatios.wholeVsBareP50 <= rec.floorRatios.wholeGoal ? '' : '  > goal'} (goal <= ${rec.floorRatios.wholeGoal})`,
    `operator CPU on ${NOISY} / API server CPU, noisy: ${rec.floorRatios.noisyCpuVsApiServer}${rec.floorRatios.noisyCpuVsApiServer <= rec.floorRatios.cpuGoal ? '' : '  > goal'} (goal <= ${rec.floorRatios.cpuGoal}); the whole operator's: ${rec.noisy.operatorOfApiServerCpu}`,
    `goal: every ratio <= ${rec.ratios.goal}`,
  ].join('\n');
}
