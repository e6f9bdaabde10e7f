// Per-app rollout metrics, as Flagger exposes them: the candidate's weight and
// the rollout status (0 progressing, 1 stable/promoted, 2 rolled back), plus a
// counter of outcomes. Per-app labels are deliberate here: these are the
// numbers a dashboard plots for one app's rollout.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { RolloutPlan } from '../rollout/canary.ts';

/** Phases in which the candidate was stopped: the rollout status gauge reads 2 (as Flagger's "failed"). */
const ENDED = new Set<string>(['RolledBack', 'Aborted', 'Failed']);

/** Rollout events that end (or, for header testing, start) a rollout, by the result label they count under. */
const OUTCOMES: Record<string, string> = {
  Promoted: 'promoted', RolledBack: 'rolled_back', Aborted: 'aborted', Testing: 'header_testing',
  RevisionFailed: 'failed', ProgressDeadlineExceeded: 'failed', WarmupFailed: 'failed', AnalysisFailed: 'failed',
};

export class RolloutMetrics {
  private readonly weight: Gauge<'namespace' | 'name'>;
  private readonly status: Gauge<'namespace' | 'name'>;
  private readonly outcomes: Counter<'result'>;
  private readonly rejections: Counter<'kind'>;

  constructor(registry: Registry) {
    this.weight = new Gauge({ name: 'serverlessapp_canary_weight', help: 'Traffic percentage of the candidate version.', labelNames: ['namespace', 'name'], registers: [registry] });
    this.status = new Gauge({ name: 'serverlessapp_rollout_status', help: 'Rollout status: 0 progressing, 1 stable, 2 stopped (rolled back, aborted or failed).', labelNames: ['namespace', 'name'], registers: [registry] });
    this.rejections = new Counter({ name: 'serverlessapp_write_rejections_total', help: 'Writes of children the API server refused (admission webhook, schema, ownership), by kind; each is shown as Ready=False ApplyRejected.', labelNames: ['kind'], registers: [registry] });
    this.outcomes = new Counter({ name: 'serverlessapp_rollouts_total', help: 'Rollouts by result: promoted, rolled_back (canaryPercent 0), aborted (rollout.abort), failed (revision, progress deadline, warmup or checks), header_testing (started).', labelNames: ['result'], registers: [registry] });
  }

  /** `transitioned`: the status recording this plan was just written (count outcomes once). */
  observe(app: ServerlessApp, plan: RolloutPlan, transitioned: boolean): void {
    const labels = { namespace: app.metadata.namespace, name: app.metadata.name };
    this.weight.set(labels, plan.candidate?.percent ?? 0);
    this.status.set(labels, ENDED.has(plan.phase) ? 2 : plan.candidate || plan.phase === 'Pending' ? 0 : 1);
    for (const e of transitioned ? plan.events : []) {
      const result = OUTCOMES[e.reason];
      if (result) this.outcomes.inc({ result });
    }
  }

  rejected(kind: string): void {
    this.rejections.inc({ kind });
  }

  forget(namespace: string, name: string): void {
    this.weight.remove({ namespace, name });
    this.status.remove({ namespace, name });
  }
}
