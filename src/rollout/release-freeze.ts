// The release freeze: a new version gets no traffic while the error budget the
// version serving all traffic left over the SLO's window is below the floor in
// force (the higher of the app's slo.freezeBelow and the platform's floor for
// its namespace), unless rollout.releaseOverride names it. The budget is read
// once per candidate (a budget round, run like a check round) and, while the
// freeze holds or the reading has no data, again every analysis cadence. Once
// a candidate is let through it is not read again: burn-rate gates watch it
// from there. Pure: the reading is effects/analysis-checks.ts readBudget's.

import type { AnalysisOutcome, CanaryProgress, ReleaseStatus, RolloutEvent, RolloutInput } from './canary.ts';
import { SLO_DEFAULTS } from '../api/v1alpha1/defaults.ts';

export type ReleaseGate =
  /** Let through (`now`: in this pass, so its progress deadline starts now). */
  | { state: 'open'; now: boolean; release?: ReleaseStatus }
  /** A budget round is due: `round` names it; its reading comes back as input.budget. */
  | { state: 'reading'; round: string; release?: ReleaseStatus }
  /** Held back: frozen, or the budget could not be read (no data is not a pass). */
  | { state: 'frozen' | 'nodata'; release: ReleaseStatus; message: string; wakeAfterMs: number };

export function releaseGate(input: RolloutInput, progress: CanaryProgress, cadenceMs: number, events: RolloutEvent[]): ReleaseGate {
  const { version } = input.desired;
  const floor = input.freezeFloor ?? 0;
  const last = input.previous.release?.version === version ? input.previous.release : undefined;
  if (progress.released || floor <= 0) return { state: 'open', now: false, ...(last ? { release: last } : {}) };
  const now = input.now;
  const slo = input.rollout?.analysis?.slo;
  const window = slo?.window ?? SLO_DEFAULTS.window;
  const base: ReleaseStatus = { version, freezeBelow: floor };

  const override = input.rollout?.releaseOverride;
  if (override?.version === version) {
    const { by, reason } = override;
    events.push({ type: 'Warning', reason: 'ReleaseFreezeOverridden', message: `release freeze overridden for version ${version} by ${JSON.stringify(by)}: ${reason}` });
    return { state: 'open', now: true, release: { ...base, frozen: false, checkedAt: now.toISOString(), message: 'let through by rollout.releaseOverride', override: { version, by, reason, at: now.toISOString() } } };
  }

  const reading = input.budget;
  if (reading) return judged(reading, base, floor, window, last, cadenceMs, now, events);
  const checkedAt = last?.checkedAt ? Date.parse(last.checkedAt) : undefined;
  const dueAt = checkedAt === undefined ? now.getTime() : checkedAt + cadenceMs;
  if (last && now.getTime() < dueAt && last.frozen !== false) {
    return { state: last.frozen ? 'frozen' : 'nodata', release: last, message: last.message ?? 'release freeze', wakeAfterMs: dueAt - now.getTime() };
  }
  return { state: 'reading', round: `budget/${version}/${last?.checkedAt ?? ''}`, ...(last ? { release: last } : {}) };
}

function judged(reading: AnalysisOutcome, base: ReleaseStatus, floor: number, window: string, last: ReleaseStatus | undefined, cadenceMs: number, now: Date, events: RolloutEvent[]): ReleaseGate {
  const checkedAt = now.toISOString();
  const every = `read again every ${Math.round(cadenceMs / 1000)}s`;
  if (reading.result !== 'pass' || !reading.budget) {
    // A freeze in force holds until a reading says otherwise.
    const message = `release waits: the error budget could not be read (${reading.message}); no data is not a pass; ${every}`;
    if (last?.frozen) return { state: 'frozen', release: { ...last, checkedAt }, message: last.message ?? message, wakeAfterMs: cadenceMs };
    return { state: 'nodata', release: { ...base, checkedAt, message }, message, wakeAfterMs: cadenceMs };
  }
  const { remaining, shown } = reading.budget;
  const figure = shown ? { budgetRemaining: Math.round(remaining * 100) / 100 } : {};
  const said = shown ? `${figure.budgetRemaining}% of the error budget remains` : 'the error budget that remains';
  if (remaining < floor) {
    const message = `release frozen: ${shown ? said : `less of the error budget remains than the freeze policy's ${floor}%`} over ${window}${shown ? `, below the freeze policy of ${floor}%` : ''}; candidate ${base.version} waits at 0% (${every}); to let an urgent fix through, set rollout.releaseOverride with version ${base.version}, by and reason`;
    if (!last?.frozen) events.push({ type: 'Warning', reason: 'ReleaseFrozen', message });
    return { state: 'frozen', release: { ...base, ...figure, frozen: true, checkedAt, message }, message, wakeAfterMs: cadenceMs };
  }
  const message = `${said} over ${window} is at least the freeze policy of ${floor}%: candidate ${base.version} released`;
  if (last?.frozen) events.push({ type: 'Normal', reason: 'ReleaseFreezeLifted', message });
  return { state: 'open', now: true, release: { ...base, ...figure, frozen: false, checkedAt, message } };
}
