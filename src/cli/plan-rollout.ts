// The rollout an edit starts, explained from the planner's decision: a new
// version or not, what must hold before the candidate gets any traffic (ready,
// the prewarm buffer, warmup requests, all within the progress deadline), each
// step with its weight and when it would come, and what happens on failure.
// Pure. Times of steps are earliest times: each step waits its interval, and
// its checks (when configured) must pass before the next one.

import type { Phase, ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { summarize } from '../rollout/version.ts';
import { stableOf, type Decision } from '../planner/decide.ts';
import { prewarmConfigured } from '../prewarm/prewarm.ts';
import { ROLLOUT_DEFAULTS, SLO_DEFAULTS, WARMUP_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { burnRatePairs } from '../rollout/slo.ts';
import { sessionCookie } from '../render/session-cookie.ts';
import { stickySessions } from './sticky-sessions.ts';

export interface RolloutStep {
  /** The candidate's share of traffic; 100 is the promotion. */
  weight: number;
  /** When, in words: "once ready and warm", "1m after the previous step, if its checks pass". */
  after: string;
  /** Earliest instant, when it can be known (a step of a rollout already under way). */
  at?: string;
}

export interface RolloutExplanation {
  /** The edit starts a new version (another version hash than the stable one). */
  newVersion: boolean;
  stable?: { version: string; summary?: string };
  version: { version: string; summary: string };
  phase: { now?: Phase; next: Phase };
  /** What the rollout does with the spec as edited, in one sentence. */
  summary: string;
  /** What must hold before the candidate gets traffic. */
  beforeTraffic: string[];
  steps: RolloutStep[];
  progressDeadline: string;
  onFailure: string;
  /** With rollout.stickiness: what the weights count, the cookie rules, and how sessions move at the next step. */
  sessions?: SessionsExplanation;
  /** With rollout.analysis.slo: the burn-rate gates, when they run, and what firing does. */
  gates?: string[];
  /** With rollout.bake: what happens after the traffic is all on the candidate. */
  bake?: string;
}

export interface SessionsExplanation {
  summary: string;
  /** What the route does with the cookie, version by version. */
  rules: string[];
  /** How sessions move when the next step (or the edit's outcome) comes. */
  next?: string;
}

/** The cookie rules of the route for `stable` and the candidate `version`, and what the next step or outcome does to sessions. */
function explainSessions(app: ServerlessApp, stable: string | undefined, version: string, next: RolloutStep | undefined, returnsToStable: boolean): SessionsExplanation | undefined {
  const summary = stickySessions(app);
  const cookie = sessionCookie(app.spec.rollout?.stickiness);
  if (!summary || !cookie) return undefined;
  const rules = [`responses to requests without a valid cookie set ${cookie.setCookie('<the version reached>')}`];
  if (stable && stable !== version) {
    rules.push(
      `Cookie ${cookie.name}=${stable} → stable ${stable}`,
      `Cookie ${cookie.name}=${version} → ${version} while it has weight, else stable`,
      `Cookie ${cookie.name}=<any other version> → stable ${stable}, whose cookie replaces it`,
      `no cookie → split by weight as a new session`,
    );
  }
  const moves = returnsToStable && stable ? `the candidate's sessions return to stable ${stable} at their next request`
    : next?.weight === 100 ? `at promotion every session moves to ${version}${stable && stable !== version ? `; ${stable}'s cookie is then ignored and replaced` : ''}`
      : next ? `at ${next.weight}%: ${next.weight}% of new sessions start on ${version}; sessions under way stay on their version` : undefined;
  return { summary, rules, ...(moves ? { next: moves } : {}) };
}



export function explainRollout(app: ServerlessApp, d: Decision): RolloutExplanation {
  const rollout = app.spec.rollout ?? {};
  const stable = stableOf(app);
  const stableStatus = app.status?.versions?.stable;
  const newVersion = !!stable && stable.version !== d.version;
  const first = !stable;
  const deadline = rollout.progressDeadline ?? ROLLOUT_DEFAULTS.progressDeadline;
  const interval = rollout.interval ?? ROLLOUT_DEFAULTS.interval;
  const checks = rollout.analysis?.checks ?? [];
  const slo = rollout.analysis?.slo;
  const gated = [...(checks.length ? [`${checks.length === 1 ? 'its check passes' : `its ${checks.length} checks pass`} (${checks.map((c) => c.name).join(', ')})`] : []), ...(slo ? ['its burn rate stays under the gates'] : [])];
  const analysis = gated.length ? gated.join(' and ') : undefined;
  const cadence = rollout.analysis?.cadence ?? ROLLOUT_DEFAULTS.cadence;

  const beforeTraffic: string[] = [];
  if (newVersion || first) {
    beforeTraffic.push(`revision ready${first ? '' : ' (Knative or KServe starts it beside the stable one)'}`);
    const buffer = d.prewarmReplicas;
    if (buffer) beforeTraffic.push(`prewarm: ${buffer} ready replica${buffer === 1 ? '' : 's'} before any traffic`);
    const w = app.spec.prewarm?.warmup;
    if (w) beforeTraffic.push(`warmup: ${w.count ?? WARMUP_DEFAULTS.count} successful ${w.method ?? WARMUP_DEFAULTS.method} ${w.path} within ${w.deadline ?? WARMUP_DEFAULTS.deadline} of the replicas being ready`);
    if (!first) beforeTraffic.push(`all of it within the progress deadline (${deadline}), counted from the start${rollout.paused ? ' (not while paused)' : ''}`);
  }

  const steps: RolloutStep[] = [];
  let summary: string;
  const canary = app.status?.canary;
  const underWay = canary?.version === d.version && canary.stepStartedAt !== undefined && canary.step !== undefined;
  if (first) {
    const once = `once ready${prewarmConfigured(app.spec.prewarm) ? ' and warm' : ''}`;
    summary = `first version ${d.version}: it gets all traffic ${once}`;
    steps.push({ weight: 100, after: once });
  } else if (!newVersion) {
    summary = d.plan.phase === 'Stable' ? `no new version: ${d.version} stays stable with all traffic` : `no new version: ${d.plan.progressing.message}`;
  } else if (d.plan.phase === 'Frozen' || (frozenBefore(app) && rollout.releaseOverride?.version !== d.version && !rollout.abort)) {
    // The operator's last reading (it knows the platform's floor): a new version waits the same way until the budget recovers.
    summary = `the edit will wait: ${d.plan.phase === 'Frozen' ? d.plan.progressing.message : app.status!.release!.message ?? 'release frozen'}`;
  } else if (rollout.abort) {
    summary = `aborted (rollout.abort): candidate ${d.version} kept at 0% and scaled to zero; stable ${stable!.version} keeps all traffic`;
  } else if (d.plan.phase === 'Failed') {
    summary = d.plan.progressing.message;
  } else if (d.plan.phase === 'Paused') {
    // The operator's verdict, not rollout.paused read again: promote of this version overrides a pause, canaryPercent 100 does not.
    summary = `paused (rollout.paused) at ${canary?.weight ?? 0}%: no step advances, no checks run and the deadline does not count until it is removed`;
  } else if (rollout.promote === d.version || rollout.canaryPercent === 100) {
    summary = `promotion of ${d.version} without steps or checks`;
    steps.push({ weight: 100, after: 'once ready and warm' });
  } else if (rollout.canaryPercent !== undefined) {
    summary = rollout.canaryPercent === 0 && rollout.match?.length
      ? `header testing: requests matching rollout.match reach ${d.version}; all other traffic stays on ${stable!.version}`
      : `manual canary: ${d.version} gets ${rollout.canaryPercent}% once ready and warm, until canaryPercent changes (100 promotes, 0 rolls back)`;
    if (rollout.canaryPercent > 0) steps.push({ weight: rollout.canaryPercent, after: 'once ready and warm; held until spec.rollout.canaryPercent changes' });
  } else if (rollout.steps?.length) {
    const ms = parseDuration(interval);
    const gate = analysis ? `, if ${analysis}` : '';
    summary = `canary in ${rollout.steps.length} step${rollout.steps.length === 1 ? '' : 's'} (${rollout.steps.join('% → ')}%), every ${interval}${analysis ? ` if ${analysis}` : ''}, then promotion`;
    const from = underWay ? canary.step! : 0;
    const startedAt = underWay ? Date.parse(canary.stepStartedAt!) : undefined;
    [...rollout.steps, 100].forEach((weight, i) => {
      const at = startedAt !== undefined && i >= from ? new Date(startedAt + (i - from) * ms).toISOString() : undefined;
      steps.push({ weight, after: i === 0 ? 'once ready and warm' : `${interval} after ${rollout.steps![i - 1]}%${gate}${analysis ? ` (read every ${cadence})` : ''}`, ...(at ? { at } : {}) });
    });
  } else {
    summary = `promotion of ${d.version} as soon as it is ready and warm (no spec.rollout.steps)`;
    steps.push({ weight: 100, after: 'once ready and warm' });
  }

  const bake = newVersion && rollout.bake && rollout.promote !== d.version
    ? `after promotion, a bake of ${rollout.bake}: ${d.version} serves all traffic while ${stable!.version} is held warm at 0%${analysis ? ` and the analysis keeps running every ${cadence}` : ''}; a failure in it moves all traffic back to ${stable!.version} at once; its end retires ${stable!.version}`
    : undefined;
  const gates = slo ? [
    `objective ${slo.objective}% over ${slo.window ?? SLO_DEFAULTS.window}; the candidate's burn rate is read every ${cadence} during each step${rollout.bake ? ' and the bake' : ''}`,
    ...burnRatePairs(slo).map((p) => `fails at once (BurnRateExceeded) when it burns faster than ${p.factor}x over both ${p.long} and ${p.short}`),
    ...(slo.freezeBelow !== undefined || app.status?.release ? [`release freeze: a new version waits while less than ${app.status?.release?.freezeBelow ?? slo.freezeBelow}% of the error budget remains (rollout.releaseOverride lets one version through)`] : []),
  ] : undefined;
  const causes = ['the revision fails', `it is not ready and warm within ${deadline}`, ...(app.spec.prewarm?.warmup ? ['warmup gives up'] : []), ...(checks.length ? ['a check fails'] : []), ...(slo ? ['a burn-rate gate fires'] : [])];
  const onFailure = first
    ? `if the revision fails${app.spec.prewarm?.warmup ? ' or warmup gives up' : ''}: phase Failed, nothing else serves; fix the spec or kubectl sapp retry`
    : `if ${causes.slice(0, -1).join(', ')} or ${causes.at(-1)}: all traffic back on stable ${stable!.version}, the candidate kept at 0% and scaled to zero (phase Failed); kubectl sapp retry starts it again`;
  const current = underWay ? canary.weight ?? 0 : 0;
  const returnsToStable = newVersion && (!!rollout.abort || d.plan.phase === 'Failed' || (rollout.canaryPercent === 0 && !rollout.match?.length));
  const sessions = explainSessions(app, stable?.version, d.version, steps.find((s) => s.weight > current), returnsToStable);
  return {
    newVersion,
    ...(sessions ? { sessions } : {}),
    ...(stable ? { stable: { version: stable.version, ...(stableStatus?.summary ? { summary: stableStatus.summary } : {}) } } : {}),
    version: { version: d.version, summary: summarize(app.spec) },
    phase: { ...(app.status?.phase ? { now: app.status.phase } : {}), next: d.plan.phase },
    summary, beforeTraffic, steps, progressDeadline: deadline, onFailure,
    ...(gates ? { gates } : {}), ...(bake ? { bake } : {}),
  };
}

/** The operator's last reading froze the release of an earlier candidate. */
function frozenBefore(app: ServerlessApp): boolean {
  return !!app.status?.release?.frozen;
}
