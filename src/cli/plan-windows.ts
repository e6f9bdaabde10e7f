// Scale windows as a plan shows them: the bounds in force now and the next
// transitions, each at an instant and on the wall clock of its window's time
// zone, with the effective min/max from then on; for an edit, the same for the
// live spec, so what the edit moves is visible. Pure: the window math is
// scaling/windows.ts, the one the operator requeues on.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { WINDOW_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { scaleOf } from '../scaling/windows.ts';

export interface Transition {
  at: string;
  /** Wall clock in the window's time zone: "2026-11-25 22:00 Europe/Berlin". */
  local: string;
  window: string;
  change: 'prewarm' | 'open' | 'close';
  minScale: number;
  /** Absent: unbounded. */
  maxScale?: number;
}

export interface WindowSchedule {
  now: { minScale: number; maxScale?: number; openWindows: string[]; prewarmingWindows: string[] };
  next: Transition[];
}

export interface WindowsPlan extends WindowSchedule {
  /** The live spec's schedule, when the edit changes it (bounds now or any of the next transitions). */
  before?: WindowSchedule;
}

/** How many transitions a plan shows. */
const SHOWN = 4;

export function windowSchedule(app: ServerlessApp, now: Date, count = SHOWN): WindowSchedule {
  const current = scaleOf(app.spec, now);
  const zones = new Map((app.spec.scaling?.windows ?? []).map((w) => [w.name, w.timeZone ?? WINDOW_DEFAULTS.timeZone]));
  const next: Transition[] = [];
  let t = current.next;
  while (t && next.length < count) {
    next.push({ at: t.at.toISOString(), local: wallClock(t.at, zones.get(t.window) ?? WINDOW_DEFAULTS.timeZone), window: t.window, change: t.change, minScale: t.minScale, ...(t.maxScale !== undefined ? { maxScale: t.maxScale } : {}) });
    // The bounds change at `at`: the state just after it has the following transition.
    t = scaleOf(app.spec, new Date(t.at.getTime() + 1)).next;
  }
  return {
    now: { minScale: current.minScale, ...(current.maxScale !== undefined ? { maxScale: current.maxScale } : {}), openWindows: current.openWindows, prewarmingWindows: current.prewarmingWindows },
    next,
  };
}

/** The edited app's schedule, with the live one beside it when they differ; undefined when neither has windows or bounds to show. */
export function planWindows(edited: ServerlessApp, live: ServerlessApp | undefined, now: Date): WindowsPlan | undefined {
  if (!edited.spec.scaling?.windows?.length && !live?.spec.scaling?.windows?.length) return undefined;
  const after = windowSchedule(edited, now);
  const before = live ? windowSchedule(live, now) : undefined;
  return { ...after, ...(before && JSON.stringify(before) !== JSON.stringify(after) ? { before } : {}) };
}

export function wallClock(at: Date, timeZone: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    .formatToParts(at).map((p) => [p.type, p.value]));
  return `${parts['year']}-${parts['month']}-${parts['day']} ${parts['hour']}:${parts['minute']} ${timeZone}`;
}
