// A scale window's fields judged on their own: the cron schedule, the time
// zone, the duration and the bounds. The API's validation needs this, and it
// needs no window math (scaling/windows.ts, above the API, evaluates windows
// against the clock), only the schedule parser below both (util/schedule.ts).

import { WINDOW_DEFAULTS } from './defaults.ts';
import { parseDuration } from './duration.ts';
import { ALLOWED_CRON, opensEveryYear, scheduleOf, scheduleProblem, zoneProblem } from '../../util/schedule.ts';
import { CACHED_NAMESPACES, NamespacedLru } from '../../util/lru.ts';

export interface ScaleWindow { name: string; schedule: string; duration: string; timeZone?: string; minScale: number; maxScale?: number }
export interface WindowProblem { window: string; field: 'schedule' | 'timeZone' | 'duration' | 'minScale' | 'maxScale' | 'name'; message: string }

/**
 * Stepping a rare schedule through four years costs tens of milliseconds: once per schedule and zone, per
 * namespace (an app has at most 16 windows), so a tenant's new zones evict only its own answers.
 */
const everyYear = new NamespacedLru<boolean>(64, CACHED_NAMESPACES);
function opensEveryYearCached(expression: string, tz: string, namespace: string): boolean {
  const key = `${expression}\u0000${tz}`;
  let answer = everyYear.get(namespace, key);
  if (answer === undefined) {
    answer = opensEveryYear(scheduleOf(expression), tz);
    everyYear.set(namespace, key, answer);
  }
  return answer;
}

/** `namespace`: whose cache the yearly checks go to (the app's). */
export function validateWindows(windows: ScaleWindow[], namespace = ''): WindowProblem[] {
  const problems: WindowProblem[] = [];
  const seen = new Set<string>();
  for (const w of windows) {
    const problem = (field: WindowProblem['field'], message: string) => problems.push({ window: w.name, field, message });
    if (!w.name) problem('name', 'a window needs a name');
    else if (seen.has(w.name)) problem('name', `duplicate window name ${JSON.stringify(w.name)}: names must be unique within the app`);
    seen.add(w.name);
    const scheduleWhy = typeof w.schedule === 'string' ? scheduleProblem(w.schedule) : ALLOWED_CRON;
    if (scheduleWhy) problem('schedule', `invalid schedule ${JSON.stringify(w.schedule)}: ${scheduleWhy}`);
    const zoneWhy = w.timeZone !== undefined ? zoneProblem(w.timeZone) : undefined;
    if (zoneWhy) problem('timeZone', zoneWhy);
    if (!scheduleWhy && !zoneWhy && !opensEveryYearCached(w.schedule, w.timeZone ?? WINDOW_DEFAULTS.timeZone, namespace)) {
      problem('schedule', `schedule ${JSON.stringify(w.schedule)} does not open in every year (e.g. only on Feb 29): a window must open at least once a year`);
    }
    try {
      if (parseDuration(w.duration) === 0) problem('duration', `duration must be longer than zero, e.g. "8h" or "90m"`);
    } catch (e) {
      problem('duration', (e as Error).message);
    }
    if (!Number.isInteger(w.minScale) || w.minScale < 0) problem('minScale', `minScale must be a whole number >= 0, got ${w.minScale}`);
    if (w.maxScale !== undefined && (!Number.isInteger(w.maxScale) || w.maxScale < 1)) problem('maxScale', `maxScale must be a whole number >= 1, got ${w.maxScale}`);
    else if (w.maxScale !== undefined && w.minScale > w.maxScale) problem('minScale', `minScale (${w.minScale}) must be <= maxScale (${w.maxScale}) within a window`);
  }
  return problems;
}
