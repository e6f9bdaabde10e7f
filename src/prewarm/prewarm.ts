// Whether a version is warm: its revision reports at least prewarm.replicas
// ready replicas, and its warmup requests succeeded. Pure: the warmup runner's
// progress and the clock come in, the Prewarmed condition and status go out.
// Warmth is recorded in status (warmedAt), so a restart does not warm twice.

import type { PrewarmSpec, ServerlessAppStatus } from '../api/v1alpha1/serverlessapp.ts';
import type { ObservedRevision } from '../rollout/canary.ts';
import type { WarmupProgress } from './warmup-progress.ts';
import { WARMUP_DEFAULTS } from '../api/v1alpha1/defaults.ts';

export type PrewarmStatus = NonNullable<ServerlessAppStatus['prewarm']>;

export interface PrewarmEvaluation {
  warm: boolean;
  /** Replicas are ready and warmup requests should be running now. */
  startWarmup: boolean;
  condition: { status: 'True' | 'False'; reason: string; message: string };
  status?: PrewarmStatus;
}

/** The Prewarmed reason once warmup did not succeed before its deadline (also the rollout's failure reason): no traffic until a retry. */
export const WARMUP_FAILED = 'WarmupFailed';

/** Whether a Prewarmed condition, an evaluation's or the one status recorded, says warmup gave up. */
export function warmupGaveUp(condition: { reason?: string } | undefined): boolean {
  return condition?.reason === WARMUP_FAILED;
}

export function prewarmConfigured(p: PrewarmSpec | undefined): boolean {
  return bufferReplicas(p) > 0;
}

/** Replicas a version is held at until warm: warmup needs at least one running pod to talk to. */
export function bufferReplicas(p: PrewarmSpec | undefined): number {
  return Math.max(p?.replicas ?? 0, p?.warmup ? 1 : 0);
}

export function evaluatePrewarm(
  spec: PrewarmSpec | undefined, version: string, revision: ObservedRevision | undefined,
  previous: PrewarmStatus | undefined, progress: WarmupProgress | undefined, now: Date,
): PrewarmEvaluation {
  const ready = !!revision?.ready;
  if (!prewarmConfigured(spec)) {
    return { warm: ready, startWarmup: false, condition: { status: 'True', reason: 'NotConfigured', message: 'no prewarm configured: a version is warm once ready' } };
  }
  const prev = previous?.version === version ? previous : undefined;
  if (prev?.warmedAt) {
    return { warm: true, startWarmup: false, status: prev, condition: { status: 'True', reason: 'Warm', message: `version ${version} is warm since ${prev.warmedAt}` } };
  }
  const want = bufferReplicas(spec);
  const have = revision?.replicas ?? 0;
  if (!ready || have < Math.max(want, 1)) {
    return {
      warm: false, startWarmup: false, status: { version },
      condition: { status: 'False', reason: 'WaitingForReplicas', message: `version ${version}: ${have}/${Math.max(want, 1)} replicas ready${revision ? ` on ${revision.name}` : ''}` },
    };
  }
  const startedAt = progress?.startedAt.toISOString() ?? prev?.startedAt ?? now.toISOString();
  if (!spec!.warmup) {
    return { warm: true, startWarmup: false, status: { version, startedAt, warmedAt: now.toISOString() }, condition: { status: 'True', reason: 'Warm', message: `version ${version}: ${have} replicas ready` } };
  }
  const counts = {
    requestsSent: progress?.sent ?? prev?.requestsSent ?? 0,
    succeeded: progress?.succeeded ?? prev?.succeeded ?? 0,
    ...(progress?.lastError ?? prev?.lastError ? { lastError: progress?.lastError ?? prev?.lastError } : {}),
  };
  if (progress?.phase === 'succeeded') {
    return {
      warm: true, startWarmup: false, status: { version, startedAt, warmedAt: progress.finishedAt.toISOString(), ...counts },
      condition: { status: 'True', reason: 'Warm', message: `version ${version}: ${counts.succeeded} warmup requests answered` },
    };
  }
  if (progress?.phase === 'failed') {
    return {
      warm: false, startWarmup: false, status: { version, startedAt, ...counts },
      condition: { status: 'False', reason: WARMUP_FAILED, message: `version ${version}: warmup did not succeed before its deadline: ${progress.lastError ?? 'unknown error'}` },
    };
  }
  return {
    warm: false, startWarmup: true, status: { version, startedAt, ...counts },
    condition: { status: 'False', reason: 'WarmingUp', message: `version ${version}: ${counts.succeeded}/${spec!.warmup.count ?? WARMUP_DEFAULTS.count} warmup requests answered${counts.lastError ? `; last error: ${counts.lastError}` : ''}` },
  };
}
