// Where a victim edit's time goes, from the API server's audit log alone (its
// clock for every timestamp). The bench's edit -> traffic figure runs from the
// API server receiving the edit to it receiving the operator's first write of
// the app's Knative Service or VirtualService. It splits into:
//   - the edit in the API server: received -> response (admission, storage);
//   - behind the app's own writes: the operator's earlier writes of that app
//     (a status patch, typically) still in flight when the edit was stored. A
//     key is reconciled by one worker at a time, so the edit's reconcile starts
//     only once that reconcile has ended, and it ends only with its writes;
//   - the rest: the watch event's delivery, the queue, the reconcile up to its
//     write and the request's way to the API server (the operator's own time,
//     with the API server's watch fan-out).
import type { AuditWrite } from '../test/envtest/audit.ts';
import { percentile, round } from './stats.ts';

export interface EditPath {
  /** The edit -> traffic figure, as the bench measures it. */
  totalMs: number;
  editInApiServerMs: number;
  behindOwnWritesMs: number;
  restMs: number;
  /** Labels of the app's writes it waited behind, e.g. "patch serverlessapps/status". */
  waitedBehind: string[];
}

const label = (w: AuditWrite) => `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''}`;
const ms = (d: Date) => d.getTime();

/**
 * The split of one edit of `app` (the user's write `edit`), given the operator's writes of the app's own objects
 * after it and `traffic`, the first of them that writes its Knative Service or VirtualService.
 */
export function editPath(edit: AuditWrite, traffic: AuditWrite, appWrites: AuditWrite[]): EditPath {
  const stored = ms(edit.completed ?? edit.timestamp);
  const before = appWrites.filter((w) => w !== traffic && w.timestamp < traffic.timestamp && ms(w.completed ?? w.timestamp) > stored);
  const busyUntil = Math.max(stored, ...before.map((w) => ms(w.completed ?? w.timestamp)));
  return {
    totalMs: ms(traffic.timestamp) - ms(edit.timestamp),
    editInApiServerMs: stored - ms(edit.timestamp),
    behindOwnWritesMs: Math.min(busyUntil, ms(traffic.timestamp)) - stored,
    restMs: ms(traffic.timestamp) - Math.min(busyUntil, ms(traffic.timestamp)),
    waitedBehind: before.map(label),
  };
}

/** Medians and p90s of each part over a phase's edits, and how many edits waited behind their app's own writes. */
export function summarizePaths(paths: EditPath[]) {
  const part = (k: 'totalMs' | 'editInApiServerMs' | 'behindOwnWritesMs' | 'restMs') => {
    const v = paths.map((p) => p[k]);
    return { p50: round(percentile(v, 50)), p90: round(percentile(v, 90)) };
  };
  return {
    edits: paths.length, total: part('totalMs'), editInApiServer: part('editInApiServerMs'), behindOwnWrites: part('behindOwnWritesMs'), rest: part('restMs'),
    waitedBehindOwnWrites: paths.filter((p) => p.waitedBehind.length).length,
  };
}
