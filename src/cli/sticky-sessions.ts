// What rollout.stickiness does to the weights a user reads, in one sentence for
// kubectl sapp plan and status. A module of its own, so status loads no planner.

import { STICKINESS_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';

/** What sticky sessions do to the weights a user reads: one sentence for plan and status. */
export function stickySessions(app: ServerlessApp): string | undefined {
  const s = app.spec.rollout?.stickiness;
  if (!s) return undefined;
  return `sticky (cookie ${s.cookieName ?? STICKINESS_DEFAULTS.cookieName}, kept ${s.maxAge ?? STICKINESS_DEFAULTS.maxAge}): weights count new sessions; a session stays on the version it started on while that version has weight; promotion moves every session to the new stable, rollback or failure moves the candidate's sessions back to stable at their next request`;
}
