// Cron schedules in a time zone, mapped to real instants: parsing and stepping
// through wall-clock time (cron-parser, always in UTC where it is exact), the
// zone's offsets from Intl, and the openings of a schedule before or after an
// instant. The daylight-saving rules these implement are described in
// scaling/windows.ts, which builds the window math on top; it sits in util so the
// API's validation (below scaling) can judge a schedule without the window math.

import type { CronExpression } from 'cron-parser';
import { lazyRequire } from './lazy-require.ts';
import { Lru } from './lru.ts';

const cronParser = lazyRequire<typeof import('cron-parser')>('cron-parser');

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
/** How far ahead an opening is looked for: a little over 8 years, the longest gap between two Feb 29s (2096 to 2104). */
export const SEARCH_HORIZON_MS = 2930 * DAY;
/** Steps (one opening, or a whole day of close-packed ones) followed to find where an open window closes; past them, `next` stops short of the close. */
export const CHAIN_LIMIT = 256;
const MACROS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@hourly', '@weekdays', '@weekends'];
export const ALLOWED_CRON = `a 5-field cron expression "minute hour day-of-month month day-of-week" (e.g. "0 8 * * 1-5" or "30 22 * * *") using * , - / ? L # and the names JAN-DEC and SUN-SAT, or one of ${MACROS.join(' ')}`;
const ALLOWED_ZONE = 'an IANA time zone such as "UTC", "Europe/Berlin" or "America/New_York"';

// ---- Wall clock <-> instants ----

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** UTC offset of `tz` at instant `t`, in ms. */
export function offsetAt(tz: string, t: number): number {
  if (tz === 'UTC') return 0;
  let format = offsetFormats.get(tz);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
    offsetFormats.set(tz, format);
  }
  const name = format.formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /GMT([+-])(\d\d):(\d\d)(?::(\d\d))?/.exec(name);
  if (!m) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * HOUR + Number(m[3]) * MINUTE + Number(m[4] ?? 0) * 1000);
}

/**
 * The instants whose wall clock reads `wall` (wall time written as if it were UTC):
 * none in a gap, two in a repeated hour. `shift` is the size of a change within
 * a day of it (0 when none), which bounds how far out of order wall times and
 * instants can be there.
 */
function instantsAt(tz: string, wall: number): { instants: number[]; gapEnd?: number; shift: number } {
  const before = offsetAt(tz, wall - DAY);
  const after = offsetAt(tz, wall + DAY);
  const instants = [...new Set([wall - before, wall - after])].filter((t) => offsetAt(tz, t) === wall - t).sort((a, b) => a - b);
  const shift = Math.abs(after - before);
  if (instants.length > 0 || after <= before) return { instants, shift };
  // In a spring-forward gap: find the first instant on the later offset.
  let lo = wall - after;
  let hi = wall - before;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(tz, mid) === before) lo = mid; else hi = mid;
  }
  return { instants, gapEnd: hi, shift };
}

/** The largest change of offset over the year from `t` (DST amount), cached per zone. */
const zoneShifts = new Map<string, number>();
export function zoneShift(tz: string, t: number): number {
  let shift = zoneShifts.get(tz);
  if (shift === undefined) {
    const offsets = Array.from({ length: 13 }, (_, k) => offsetAt(tz, t + k * 30 * DAY));
    shift = Math.max(...offsets) - Math.min(...offsets);
    zoneShifts.set(tz, shift);
  }
  return shift;
}

// ---- Schedules ----

export interface Schedule {
  /** Parsed in UTC and used on wall time only. Stateful: reset before each use. */
  cron: CronExpression;
  /** The hour field is `*`: fires in both passes of a repeated hour. */
  everyHour: boolean;
  /** Every matching day has the same times (hour x minute): the last one and the longest gap between two of them, in minutes. */
  lastMinute: number;
  sameDayGap: number;
  /** The longest gap including the one across midnight, when every day matches (day-of-month, month and day-of-week all `*`). */
  dailyGap?: number;
}

const schedules = new Lru<Schedule>(1000);

export function scheduleOf(expression: string): Schedule {
  const cached = schedules.get(expression);
  if (cached) return cached;
  const problem = scheduleProblem(expression);
  if (problem) throw new Error(`invalid schedule ${JSON.stringify(expression)}: ${problem}`);
  const cron = cronParser().CronExpressionParser.parse(expression.trim(), { tz: 'UTC' });
  const { minute, hour, dayOfMonth, month, dayOfWeek } = cron.fields;
  const times = hour.values.flatMap((h) => minute.values.map((m) => Number(h) * 60 + Number(m))).sort((a, b) => a - b);
  const first = times[0]!;
  const lastMinute = times[times.length - 1]!;
  const sameDayGap = times.reduce((gap, m, i) => Math.max(gap, m - (times[i - 1] ?? m)), 0);
  const daily = dayOfMonth.isWildcard && dayOfWeek.isWildcard && month.values.length === 12;
  const schedule: Schedule = {
    cron, everyHour: hour.values.length === 24, lastMinute, sameDayGap,
    ...(daily ? { dailyGap: Math.max(sameDayGap, first + 1440 - lastMinute) } : {}),
  };
  schedules.set(expression, schedule);
  return schedule;
}

export function scheduleProblem(expression: string): string | undefined {
  const text = expression.trim();
  if (/^(CRON_TZ|TZ)=/.test(text)) return `set the time zone in timeZone, not in the schedule; expected ${ALLOWED_CRON}`;
  if (text.startsWith('@')) return MACROS.includes(text) ? undefined : `unknown macro ${JSON.stringify(text)}; expected ${ALLOWED_CRON}`;
  const fields = text === '' ? [] : text.split(/\s+/);
  if (fields.length === 6) return `6 fields given, but seconds are not supported; expected ${ALLOWED_CRON}`;
  if (fields.length !== 5) return `${fields.length} fields given; expected ${ALLOWED_CRON}`;
  if (fields.some((f) => /(^|[^A-Za-z])H($|[^A-Za-z])/.test(f))) return `H (hashed values) is not supported; expected ${ALLOWED_CRON}`;
  try {
    cronParser().CronExpressionParser.parse(text, { tz: 'UTC', currentDate: 0 }).next();
  } catch (e) {
    return `${(e as Error).message}; expected ${ALLOWED_CRON}`;
  }
  return undefined;
}

export function zoneProblem(tz: string): string | undefined {
  if (!/^[A-Za-z]/.test(tz)) return `${JSON.stringify(tz)} is not ${ALLOWED_ZONE}`;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return undefined;
  } catch {
    return `unknown time zone ${JSON.stringify(tz)}; expected ${ALLOWED_ZONE}`;
  }
}

/** Wall time of the first match after `wall`, or of the last match at or before it. */
function stepWall(s: Schedule, wall: number, direction: 'next' | 'prev'): number | undefined {
  s.cron.reset(new Date(direction === 'next' ? wall : wall + 1));
  try {
    return s.cron[direction]().getTime();
  } catch {
    return undefined; // no match within cron-parser's search limit
  }
}

/** The instants a matching wall time opens the window at (see the module comment). */
export function opensAt(s: Schedule, tz: string, wall: number): { instants: number[]; shift: number } {
  const { instants, gapEnd, shift } = instantsAt(tz, wall);
  if (gapEnd !== undefined) return { instants: [gapEnd], shift };
  return { instants: s.everyHour ? instants : instants.slice(0, 1), shift };
}

/** The first opening after `t`, looked for until `until`. */
export function nextOpening(s: Schedule, tz: string, t: number, until: number): number | undefined {
  let wall = t + Math.min(offsetAt(tz, t), offsetAt(tz, t + DAY)) - 1;
  let best: number | undefined;
  let stopAt = Infinity;
  for (;;) {
    const w = stepWall(s, wall, 'next');
    if (w === undefined || w >= stopAt || w - 14 * HOUR > until) return best !== undefined && best <= until ? best : undefined;
    const { instants, shift } = opensAt(s, tz, w);
    for (const i of instants) {
      if (i > t && (best === undefined || i < best)) {
        best = i;
        // Only a repeated hour puts a later wall time at an earlier instant, by less than its size.
        stopAt = Math.min(stopAt, w + shift);
      }
    }
    if (best !== undefined && shift === 0) return best <= until ? best : undefined;
    wall = w;
  }
}

/**
 * Whether the schedule opens in every year-long stretch. Starting from each New
 * Year of a four-year cycle (2025 to 2028) catches a schedule that opens only
 * on Feb 29 or on a weekday a date rarely falls on; a fixed cycle, not the
 * clock, so the same spec gets the same answer on any day.
 */
export function opensEveryYear(s: Schedule, tz: string): boolean {
  return [2025, 2026, 2027, 2028].every((year) => {
    const t = Date.UTC(year, 0, 1);
    return nextOpening(s, tz, t, t + 366 * DAY) !== undefined;
  });
}

/** The last opening at or before `t`, not looked for before `since`. */
export function lastOpening(s: Schedule, tz: string, t: number, since: number): number | undefined {
  let wall = t + Math.max(offsetAt(tz, t), offsetAt(tz, t - DAY));
  let best: number | undefined;
  let stopAt = -Infinity;
  for (;;) {
    const w = stepWall(s, wall, 'prev');
    if (w === undefined || w <= stopAt || w + 14 * HOUR < since) return best;
    const { instants, shift } = opensAt(s, tz, w);
    for (const i of instants) {
      if (i <= t && (best === undefined || i > best)) {
        best = i;
        stopAt = Math.max(stopAt, w - shift);
      }
    }
    if (best !== undefined && shift === 0) return best;
    wall = w - 1;
  }
}
