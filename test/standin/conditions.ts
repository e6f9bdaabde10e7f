// Knative-style conditions (knative.dev/pkg apis.ConditionSet), as both Knative
// and KServe write them: a "living" set whose Ready follows its dependent
// conditions, non-dependent conditions carry severity Info, lastTransitionTime
// changes only when a condition changes, and the list is sorted by type.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  severity?: 'Info' | 'Warning';
  lastTransitionTime?: string;
}

/** What a reconciler decides about one condition; the set adds time, severity and Ready. */
export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
}

export interface ConditionSet {
  happy: string;
  dependents: string[];
}

/** Knative's VolatileTime: RFC 3339 with whole seconds. */
export function timestamp(nowMs: number): string {
  return new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Applies `updates` on top of `previous` and recomputes the happy condition the
 * way knative.dev/pkg does: the most recently changed False dependent wins, then
 * the most recently changed Unknown one; all True makes it True. Dependents never
 * set start as Unknown (InitializeConditions). Conditions not mentioned are kept.
 */
export function applyConditions(set: ConditionSet, previous: readonly Condition[] | undefined, updates: readonly ConditionUpdate[], nowMs: number): Condition[] {
  const byType = new Map<string, Condition>();
  for (const c of previous ?? []) byType.set(c.type, c);
  const severity = (type: string) => (type === set.happy || set.dependents.includes(type) ? undefined : 'Info' as const);
  const put = (u: ConditionUpdate) => {
    const next: Condition = {
      type: u.type,
      status: u.status,
      ...(u.reason ? { reason: u.reason } : {}),
      ...(u.message ? { message: u.message } : {}),
      ...(severity(u.type) ? { severity: severity(u.type) } : {}),
    };
    const old = byType.get(u.type);
    const same = old && old.status === next.status && (old.reason ?? '') === (next.reason ?? '')
      && (old.message ?? '') === (next.message ?? '') && old.severity === next.severity;
    byType.set(u.type, { ...next, lastTransitionTime: same ? old.lastTransitionTime : timestamp(nowMs) });
  };
  for (const type of set.dependents) if (!byType.has(type)) put({ type, status: 'Unknown' });
  for (const u of updates) put(u);

  const unhappy = set.dependents
    .map((type) => byType.get(type)!)
    .filter((c) => c.status !== 'True')
    .sort((a, b) => (b.lastTransitionTime ?? '').localeCompare(a.lastTransitionTime ?? ''));
  const worst = unhappy.find((c) => c.status === 'False') ?? unhappy.find((c) => c.status === 'Unknown');
  put(worst ? { type: set.happy, status: worst.status, reason: worst.reason, message: worst.message } : { type: set.happy, status: 'True' });

  return [...byType.values()].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}
