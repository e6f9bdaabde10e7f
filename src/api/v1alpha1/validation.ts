// What admission (schema and CEL) cannot judge: cron expressions and time
// zones, regular expressions, step order, and gateways the operator allows.
// Each problem names the field and says what is allowed; the controller turns
// them into Ready=False with the problem's reason and leaves running objects as
// they were.

import { validateWindows } from '../../scaling/windows.ts';
import type { ServerlessApp } from './serverlessapp.ts';

export type ProblemReason = 'InvalidSpec' | 'InvalidSchedule' | 'GatewayNotAllowed';

export interface SpecProblem { reason: ProblemReason; field: string; message: string }

export interface ValidationPolicy {
  /** Gateways apps may attach to: "namespace/name", "namespace/*" or "*"; "{namespace}" stands for the app's own. */
  allowedGateways: string[];
}

export function gatewayAllowed(gateway: string, appNamespace: string, allowed: string[]): boolean {
  const full = gateway.includes('/') ? gateway : `${appNamespace}/${gateway}`;
  if (full === `${appNamespace}/mesh` || gateway === 'mesh') return true;
  return allowed.some((pattern) => {
    const p = pattern.replaceAll('{namespace}', appNamespace);
    if (p === '*') return true;
    if (p.endsWith('/*')) return full.startsWith(p.slice(0, -1));
    return p === full;
  });
}

export function validateApp(app: ServerlessApp, policy: ValidationPolicy): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const { spec } = app;
  const windows = spec.scaling?.windows ?? [];
  for (const p of validateWindows(windows)) {
    const index = windows.findIndex((w) => w.name === p.window);
    problems.push({ reason: 'InvalidSchedule', field: `spec.scaling.windows[${index}].${p.field}`, message: `window "${p.window}": ${p.message}` });
  }
  (spec.rollout?.match ?? []).forEach((m, i) => {
    if (m.regex === undefined) return;
    try {
      new RegExp(m.regex);
    } catch (e) {
      problems.push({ reason: 'InvalidSpec', field: `spec.rollout.match[${i}].regex`, message: `invalid regular expression ${JSON.stringify(m.regex)}: ${(e as Error).message}` });
    }
  });
  const steps = spec.rollout?.steps ?? [];
  if (steps.some((s, i) => i > 0 && s <= steps[i - 1]!)) {
    problems.push({ reason: 'InvalidSpec', field: 'spec.rollout.steps', message: `steps must increase strictly (e.g. [10, 25, 50]); got [${steps.join(', ')}]` });
  }
  for (const [i, g] of (spec.ingress?.gateways ?? []).entries()) {
    if (!gatewayAllowed(g, app.metadata.namespace, policy.allowedGateways)) {
      problems.push({
        reason: 'GatewayNotAllowed', field: `spec.ingress.gateways[${i}]`,
        message: `gateway ${JSON.stringify(g)} is not allowed for namespace ${app.metadata.namespace}; allowed: ${policy.allowedGateways.join(', ') || '(none: only the mesh)'}`,
      });
    }
  }
  return problems;
}
