// Scale windows as a plan shows them: the bounds in force now and the next
// transitions, each at an instant and on the wall clock of its window's time
// zone, with the effective min/max from then on; for an edit, the same for the
// live spec, so what the edit moves is visible, and for each window the edit
// adds, changes or removes its own next transitions beside those they replace
// (another window's may fill the next few). A spec whose windows the operator
// refuses (a zone or cron that does not parse) has no schedule: the plan's
// refusal says why. Pure: the window math is scaling/windows.ts, the one the
// operator requeues on, and validity is its validateWindows.

import type { ServerlessApp } from '../api/v1alpha1/serverlessapp.ts';
import { WINDOW_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { validateWindows } from '../api/v1alpha1/window-validation.ts';
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

/** A window the edit adds, changes or removes: its own next transitions, and the live window's they replace. */
export interface EditedWindow {
  window: string;
  change: 'added' | 'changed' | 'removed';
  /** Up to its next close, with the effective bounds of the whole edited spec from then on. */
  next: Transition[];
  replaces: Transition[];
}

export interface WindowsPlan extends WindowSchedule {
  /** The live spec's schedule, when the edit changes it (bounds now or any of the next transitions). */
  before?: WindowSchedule;
  /** Each window the edit adds, changes or removes (absent when none). */
  edited?: EditedWindow[];
}

/** How many transitions a plan shows. */
const SHOWN = 4;
/** How many of one window's own transitions a plan shows at most: prewarm, open, close. */
const SHOWN_PER_WINDOW = 3;

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

/**
 * The edited app's schedule, with the live one beside it when they differ and each edited window's own
 * transitions; undefined when neither has windows, or the edited windows are refused (the refusal says why).
 */
export function planWindows(edited: ServerlessApp, live: ServerlessApp | undefined, now: Date): WindowsPlan | undefined {
  if (!edited.spec.scaling?.windows?.length && !live?.spec.scaling?.windows?.length) return undefined;
  if (!schedulable(edited)) return undefined;
  const after = windowSchedule(edited, now);
  const before = live && schedulable(live) ? windowSchedule(live, now) : undefined;
  const windows = live && schedulable(live) ? editedWindows(edited, live, now) : [];
  return { ...after, ...(before && JSON.stringify(before) !== JSON.stringify(after) ? { before } : {}), ...(windows.length ? { edited: windows } : {}) };
}

/** Whether the operator would compute the app's windows at all (validateWindows finds nothing). */
function schedulable(app: ServerlessApp): boolean {
  return validateWindows(app.spec.scaling?.windows ?? []).length === 0;
}

function editedWindows(edited: ServerlessApp, live: ServerlessApp, now: Date): EditedWindow[] {
  const byName = (app: ServerlessApp) => new Map((app.spec.scaling?.windows ?? []).map((w) => [w.name, w]));
  const after = byName(edited);
  const before = byName(live);
  const out: EditedWindow[] = [];
  for (const name of new Set([...after.keys(), ...before.keys()])) {
    const a = after.get(name);
    const b = before.get(name);
    if (a && b && JSON.stringify(a) === JSON.stringify(b)) continue;
    out.push({
      window: name, change: !b ? 'added' : !a ? 'removed' : 'changed',
      next: a ? ownTransitions(edited, name, now) : [], replaces: b ? ownTransitions(live, name, now) : [],
    });
  }
  return out;
}

/** `window`'s own next transitions up to its next close: found with that window alone, bounded as the whole spec is then. */
function ownTransitions(app: ServerlessApp, window: string, now: Date): Transition[] {
  const scaling = app.spec.scaling!;
  const alone = { ...app.spec, scaling: { ...scaling, windows: (scaling.windows ?? []).filter((w) => w.name === window) } };
  const out: Transition[] = [];
  for (const t of windowSchedule({ ...app, spec: alone }, now, SHOWN_PER_WINDOW).next) {
    const { maxScale: _alone, ...own } = t;
    const bounds = scaleOf(app.spec, new Date(new Date(t.at).getTime() + 1));
    out.push({ ...own, minScale: bounds.minScale, ...(bounds.maxScale !== undefined ? { maxScale: bounds.maxScale } : {}) });
    if (t.change === 'close') break;
  }
  return out;
}

export function wallClock(at: Date, timeZone: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    .formatToParts(at).map((p) => [p.type, p.value]));
  return `${parts['year']}-${parts['month']}-${parts['day']} ${parts['hour']}:${parts['minute']} ${timeZone}`;
}
