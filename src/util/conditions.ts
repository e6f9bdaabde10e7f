// Kubernetes-style status conditions (meta.SetStatusCondition), pure. The
// transition time records when a condition's status last flipped, so it moves
// only on a flip; rewriting the same status with a new message keeps it, which
// keeps a converged object's status byte-for-byte stable.

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** Returns a new list with `c` set: replaced in place when its type exists, appended otherwise. */
export function setCondition(list: Condition[] | undefined, c: Omit<Condition, 'lastTransitionTime'>, now: Date): Condition[] {
  const current = list ?? [];
  const i = current.findIndex((x) => x.type === c.type);
  const previous = i >= 0 ? current[i] : undefined;
  const lastTransitionTime = previous && previous.status === c.status ? previous.lastTransitionTime : toRfc3339(now);
  const next: Condition = { ...c, lastTransitionTime };
  if (i < 0) return [...current, next];
  return current.map((x, j) => (j === i ? next : x));
}

/** The condition of `type` in a list: ours, or any object's (Knative's, KServe's) that has the same shape. */
export function findCondition<C extends { type: string }>(list: readonly C[] | undefined, type: string): C | undefined {
  return list?.find((c) => c.type === type);
}

export function isConditionTrue(list: ReadonlyArray<{ type: string; status: string }> | undefined, type: string): boolean {
  return findCondition(list, type)?.status === 'True';
}

/** metav1.Time has second precision; anything finer would be truncated by the server and read back as a change. */
function toRfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
