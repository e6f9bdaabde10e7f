// Per-app rollout metrics, as Flagger exposes them: the candidate's weight and
// the rollout status (0 progressing, 1 stable/promoted, 2 rolled back), plus a
// counter of outcomes. Per-app labels are deliberate here: these are the
// numbers a dashboard plots for one app's rollout.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import type { RolloutPlan } from '../rollout/canary.ts';

export class RolloutMetrics {
  private readonly weight: Gauge<'namespace' | 'name'>;
  private readonly status: Gauge<'namespace' | 'name'>;
  private readonly outcomes: Counter<'result'>;
  private readonly rejections: Counter<'kind'>;

  constructor(registry: Registry) {
    this.weight = new Gauge({ name: 'serverlessapp_canary_weight', help: 'Traffic percentage of the candidate version.', labelNames: ['namespace', 'name'], registers: [registry] });
    this.status = new Gauge({ name: 'serverlessapp_rollout_status', help: 'Rollout status: 0 progressing, 1 stable, 2 rolled back.', labelNames: ['namespace', 'name'], registers: [registry] });
    this.rejections = new Counter({ name: 'serverlessapp_write_rejections_total', help: 'Writes of children the API server refused (admission webhook, schema, ownership), by kind; each is shown as Ready=False ApplyRejected.', labelNames: ['kind'], registers: [registry] });
    this.outcomes = new Counter({ name: 'serverlessapp_rollouts_total', help: 'Rollouts finished, by result (promoted, rolled_back, rolled_back_automatically).', labelNames: ['result'], registers: [registry] });
  }

  /** `transitioned`: the status recording this plan was just written (count outcomes once). */
  observe(app: ServerlessApp, plan: RolloutPlan, transitioned: boolean): void {
    const labels = { namespace: app.metadata.namespace, name: app.metadata.name };
    this.weight.set(labels, plan.candidate?.percent ?? 0);
    this.status.set(labels, plan.phase === 'RolledBack' ? 2 : plan.candidate || plan.phase === 'Pending' ? 0 : 1);
    for (const e of transitioned ? plan.events : []) {
      if (e.reason === 'Promoted') this.outcomes.inc({ result: 'promoted' });
      if (e.reason === 'RolledBack') this.outcomes.inc({ result: 'rolled_back' });
      if (e.reason === 'RollbackAutomatic') this.outcomes.inc({ result: 'rolled_back_automatically' });
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
