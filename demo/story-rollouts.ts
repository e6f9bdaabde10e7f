// The story's rollouts beyond a plain canary, steps e) to g): a bad version
// rolled back with canaryPercent 0; a good one moved through automated steps,
// each gated by a check against the SIMULATED Prometheus, the demo clock moved
// past each step's interval; and a model version whose warmup fails against
// the SIMULATED model server (answering 503), then promoted by a retry once the
// server answers again. Same pattern as every step: edit the spec, wait for the
// real status and Events, show them.

import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../src/api/v1alpha1/duration.ts';
import { condition } from './observe.ts';
import { ANALYSIS_PROVIDER, SIMULATED_SUCCESS_RATE } from './simulated-servers.ts';
import type { Scene } from './scene.ts';
import { berlinTime } from './table.ts';

const BAD_IMAGE = 'ghcr.io/acme/shop:1.6.0';
const GOOD_IMAGE = 'ghcr.io/acme/shop:1.6.1';
const NEW_MODEL = 'gs://acme-models/fraud/v8';
const STEPS = [20, 50];
const INTERVAL = '1m';
/** Knative's queue-proxy request metric: the share of the candidate's requests that were not 5xx. */
const SUCCESS_RATE = {
  name: 'success-rate',
  query: 'sum(rate(revision_request_count{namespace_name="{{namespace}}",revision_name="{{revision}}",response_code_class!="5xx"}[1m]))'
    + ' / sum(rate(revision_request_count{namespace_name="{{namespace}}",revision_name="{{revision}}"}[1m]))',
  min: 0.99,
};

export async function rollBack({ env, see, shop, apply, heading, show }: Scene): Promise<void> {
  heading('e) a bad version at 20%, rolled back: canaryPercent 0');
  shop.spec.container!.image = BAD_IMAGE;
  shop.spec.rollout = { canaryPercent: 20 };
  await apply(shop);
  env.print(`edited shop: container.image ${BAD_IMAGE}, rollout.canaryPercent 20`);
  const at20 = await see.until(`${BAD_IMAGE} serving 20%`, ['shop'], (apps) => {
    const s = apps.get('shop')!;
    return s.status?.phase === 'Canary' && s.status.versions?.candidate?.image === BAD_IMAGE && s.status.canary?.trafficPercent === 20 ? s : undefined;
  });
  await show([at20], [`the candidate ${at20.status?.versions?.candidate?.summary} serves 20% (WEIGHT); suppose its error rate is too high: roll it back`]);

  shop.spec.rollout = { canaryPercent: 0 };
  await apply(shop);
  env.print('edited shop: rollout.canaryPercent 0');
  const rolledBack = await see.until('shop rolled back: all traffic on stable, the candidate at 0% with min-scale 0', ['shop'], async (apps) => {
    const s = apps.get('shop')!;
    const revisions = await see.revisions(s);
    const stable = revisions.find((r) => r.name === s.status?.versions?.stable?.revision);
    const candidate = revisions.find((r) => r.name === s.status?.versions?.candidate?.revision);
    return s.status?.phase === 'RolledBack' && s.status.canary?.trafficPercent === 0 && stable?.percent === 100
      && candidate?.percent === 0 && candidate.minScale === '0' && await see.hasEvent('shop', 'RolledBack') ? s : undefined;
  });
  const progressing = condition(rolledBack, 'CanaryProgressing')!;
  await show([rolledBack], [
    `phase RolledBack: stable ${rolledBack.status?.versions?.stable?.summary} serves all traffic again`,
    `the candidate ${rolledBack.status?.versions?.candidate?.summary} (${rolledBack.status?.versions?.candidate?.revision}) is kept at 0% (still tagged "candidate", so its tag URL answers) with min-scale 0: `
      + `nothing holds its replicas, and Knative scales it to zero once it has seen no requests for ${shop.spec.scaling?.scaleToZeroAfter} (scaleToZeroAfter), or as soon as it leaves the route (step f)`,
    `CanaryProgressing=${progressing.status} (${progressing.reason}): ${progressing.message}`,
    'canaryPercent above 0 would try it again; another image replaces it (next step)',
  ], 'e');
}

export async function automatedSteps({ env, see, shop, apply, heading, show, jump }: Scene): Promise<void> {
  heading('f) automated steps, each gated by a Prometheus check');
  const badRevision = (await see.app('shop')).status?.versions?.candidate?.revision;
  shop.spec.container!.image = GOOD_IMAGE;
  shop.spec.rollout = { steps: STEPS, interval: INTERVAL, analysis: { prometheus: { provider: ANALYSIS_PROVIDER }, checks: [SUCCESS_RATE] } };
  await apply(shop);
  env.print(`edited shop: container.image ${GOOD_IMAGE}, rollout {steps: [${STEPS.join(', ')}], interval: ${INTERVAL}, `
    + `analysis: {prometheus: {provider: ${ANALYSIS_PROVIDER}}, checks: [${SUCCESS_RATE.name} >= ${SUCCESS_RATE.min}]}} (canaryPercent removed)`);
  env.print(`SIMULATED Prometheus: the operator's analysis provider "${ANALYSIS_PROVIDER}" is a loopback server in this process answering ${SIMULATED_SUCCESS_RATE} to every query`);

  const atStep = (step: number) => see.until(`step ${step + 1}: ${GOOD_IMAGE} serving ${STEPS[step]}%`, ['shop'], (apps) => {
    const s = apps.get('shop')!;
    return s.status?.phase === 'Canary' && s.status.versions?.candidate?.image === GOOD_IMAGE && s.status.canary?.step === step
      && s.status.canary.trafficPercent === STEPS[step] ? s : undefined;
  });
  /** The step's interval has passed on the demo clock: its check round is due. */
  const passInterval = (s: ServerlessApp) => {
    const startedAt = Date.parse(s.status!.canary!.stepStartedAt!);
    jump(new Date(startedAt + parseDuration(INTERVAL) + 1_000), `past the step's ${INTERVAL} interval, which began at ${berlinTime(new Date(startedAt))}`);
  };
  const stepNote = (s: ServerlessApp) => `step ${s.status!.canary!.step! + 1} of ${STEPS.length}: the candidate ${s.status?.versions?.candidate?.summary} `
    + `serves ${s.status!.canary!.trafficPercent}% for ${INTERVAL} on the demo clock (status.canary.stepStartedAt ${berlinTime(new Date(s.status!.canary!.stepStartedAt!))}), then the check decides`;

  const step1 = await atStep(0);
  await show([step1], [stepNote(step1), `no query yet: the SIMULATED Prometheus has been asked ${env.analysisQueries().length} times`]);
  passInterval(step1);
  const step2 = await atStep(1);
  const queries = env.analysisQueries();
  await show([step2], [
    `check round at ${STEPS[0]}%: ${step2.status?.canary?.message} (status.canary.message)`,
    `the operator asked the SIMULATED Prometheus (${queries.length} query): ${queries.at(-1)}`,
    stepNote(step2),
  ]);
  passInterval(step2);
  const promoted = await see.until(`the last check passed, ${GOOD_IMAGE} promoted, the rolled-back revision at 0 replicas`, ['shop'], async (apps) => {
    const s = apps.get('shop')!;
    const rolledBack = (await see.revisions(s)).find((r) => r.name === badRevision);
    return s.status?.phase === 'Stable' && s.status.versions?.stable?.image === GOOD_IMAGE && !s.status.versions.candidate
      && condition(s, 'Promoted')?.status === 'True' && rolledBack?.replicas === 0 ? s : undefined;
  });
  await show([promoted], [
    `after the last step's check (${env.analysisQueries().length} queries in all, one round per step) ${promoted.status?.versions?.stable?.summary} was promoted: all traffic on it`,
    `the rolled-back ${badRevision} (${BAD_IMAGE}) left the route when ${GOOD_IMAGE} replaced it as candidate, and Knative scaled it to zero`,
  ], 'f');
}

export async function failedWarmup({ env, see, fraud, apply, heading, show }: Scene): Promise<void> {
  heading('g) a model version whose warmup fails, then a retry');
  const stableModel = fraud.spec.model!.storageUri;
  const warmup = fraud.spec.prewarm!.warmup!;
  env.failWarmups(true);
  fraud.spec.model!.storageUri = NEW_MODEL;
  fraud.spec.prewarm!.warmup = { ...warmup, timeout: '2s', deadline: '5s' };
  await apply(fraud);
  env.print('SIMULATED model server: the loopback server now answers 503 to every warmup request (a model that does not load)');
  env.print(`edited fraud: model.storageUri ${NEW_MODEL}, prewarm.warmup.deadline 5s (timeout 2s)`);
  const failed = await see.until('fraud v8 failed its warmup while v7 keeps serving', ['fraud'], async (apps) => {
    const f = apps.get('fraud')!;
    const progressing = condition(f, 'CanaryProgressing');
    return f.status?.phase === 'Failed' && progressing?.status === 'False' && progressing.reason === 'WarmupFailed'
      && f.status.canary?.failure?.reason === 'WarmupFailed' && f.status.versions?.stable?.storageUri === stableModel
      && f.status.canary.trafficPercent === 0 && await see.hasEvent('fraud', 'WarmupFailed') ? f : undefined;
  });
  const candidate = failed.status!.versions!.candidate!;
  const refused = env.warmupRequests().filter((r) => r.url.includes(`/${candidate.revision}/`)).length;
  await show([failed], [
    `phase Failed, CanaryProgressing=False (WarmupFailed); status.canary.failure: ${failed.status?.canary?.failure?.message}`,
    `stable ${failed.status?.versions?.stable?.summary} keeps all traffic; the candidate ${candidate.summary} gets none, its min-scale drops to 0 so nothing holds its replicas, `
      + 'and it stays failed until rollout.retry changes (or the model does)',
    `SIMULATED model server: ${refused} warmup requests to ${candidate.revision}, each answered 503; the operator retried them with backoff until the deadline`,
  ]);

  env.failWarmups(false);
  fraud.spec.rollout = { retry: 1 };
  await apply(fraud);
  env.print('SIMULATED model server answers again; edited fraud: rollout.retry 1');
  const promoted = await see.until('fraud v8 warmed and promoted after the retry', ['fraud'], (apps) => {
    const f = apps.get('fraud')!;
    return f.status?.phase === 'Stable' && f.status.versions?.stable?.storageUri === NEW_MODEL && !f.status.canary
      && condition(f, 'Prewarmed')?.status === 'True' && condition(f, 'Ready')?.status === 'True' ? f : undefined;
  });
  const p = promoted.status?.prewarm;
  await show([promoted], [
    `rollout.retry 1 started ${candidate.summary} again from scratch: warmup ${p?.succeeded ?? 0}/${warmup.count} succeeded at ${p?.warmedAt ? berlinTime(new Date(p.warmedAt)) : '?'}, then it was promoted with all traffic`,
    'retry may stay in the spec: a later failure is remembered with retry 1, and 2 retries it',
  ], 'g');
}
