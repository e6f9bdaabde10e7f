// Knative autoscaling annotations from spec.scaling. Class, metric, target and
// retention are baked into a revision's template; the bounds (min/max scale)
// either go into the template too (legacy Knative: a bounds change makes a new
// revision) or are set on the live Revision in place (Knative >= 1.21).

import { SCALING_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import type { ScalingSpec } from '../api/v1alpha1/serverlessapp.ts';
import type { ScaleBounds } from '../scaling/windows.ts';

export const AUTOSCALING = 'autoscaling.knative.dev';
export const MIN_SCALE = `${AUTOSCALING}/min-scale`;
export const MAX_SCALE = `${AUTOSCALING}/max-scale`;
export const INITIAL_SCALE = `${AUTOSCALING}/initial-scale`;
export const SCALE_TO_ZERO_RETENTION = `${AUTOSCALING}/scale-to-zero-pod-retention-period`;

/** Annotations fixed per revision template (not the bounds). */
export function templateAutoscaling(scaling: ScalingSpec | undefined): Record<string, string> {
  const s = scaling ?? {};
  const out: Record<string, string> = {
    [`${AUTOSCALING}/class`]: 'kpa.autoscaling.knative.dev',
    [`${AUTOSCALING}/metric`]: s.metric ?? SCALING_DEFAULTS.metric,
  };
  if (s.target !== undefined) out[`${AUTOSCALING}/target`] = String(s.target);
  if (s.scaleToZeroAfter) out[SCALE_TO_ZERO_RETENTION] = s.scaleToZeroAfter;
  return out;
}

/** The bounds as annotations; max 0 means unbounded to Knative. */
export function boundsAnnotations(b: ScaleBounds): Record<string, string> {
  return { [MIN_SCALE]: String(b.minScale), [MAX_SCALE]: String(b.maxScale ?? 0) };
}
