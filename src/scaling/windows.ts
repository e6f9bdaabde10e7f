// Scheduled scale windows: a pure function from the spec and the clock to the
// bounds in force now and the next instant they change, so the controller keeps
// no timers and simply requeues at `next.at` (KEDA's cron scaler works the same
// way: whether a window is open depends only on its latest opening before now).
//
// Time zones. A schedule is matched against the wall clock of its timeZone, and
// each matching wall time opens the window once, at an instant chosen like this:
//  - a wall time that does not exist (skipped by a spring-forward change, e.g.
//    02:30 Europe/Berlin on 2026-03-29) opens at the first instant after the gap
//    (03:00 local, 01:00 UTC): it is moved, never skipped;
//  - a wall time that happens twice (the repeated hour of an autumn change, e.g.
//    02:30 Europe/Berlin on 2026-10-25) opens once, at its first occurrence
//    (00:30 UTC). Schedules whose hour field is `*` are the exception: they fire
//    in both passes, because for them the clock only spells out a period, and
//    skipping the second pass would leave an hour-long hole in, say, `*/10`;
//  - duration is elapsed time: 22:00 + 8h closes at 07:00 local after a
//    spring-forward night and at 05:00 after a fall-back night.
// cron-parser 5.10 is used to parse and to step through wall-clock time, always
// in UTC, where it is exact; its own zone handling is not used because it fires
// a skipped 02:30 at 03:30, and its next() and prev() disagree around changes
// (prev() skips the spring-forward day and returns the repeated 02:30 twice).
// Wall time is mapped to instants in util/schedule.ts, with offsets from Intl.

import { LLM_DEFAULT_REPLICAS, WINDOW_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { servesLlm } from '../api/v1alpha1/serving.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import type { ServerlessAppSpec } from '../api/v1alpha1/serverlessapp.ts';
import type { ScaleWindow } from '../api/v1alpha1/window-validation.ts';
import {
  CHAIN_LIMIT, DAY, HOUR, MINUTE, SEARCH_HORIZON_MS, lastOpening, nextOpening, offsetAt, opensAt, scheduleOf, zoneShift, type Schedule,
} from '../util/schedule.ts';
import { Lru } from '../util/lru.ts';

/** maxScale undefined = unbounded. */
export interface ScaleBounds { minScale: number; maxScale?: number }
export interface WindowTransition {
  at: Date; window: string; change: 'prewarm' | 'open' | 'close';
  /** The effective bounds from `at` on. */
  minScale: number; maxScale?: number;
}
export interface EffectiveScale extends ScaleBounds {
  /** Names, sorted. */
  openWindows: string[];
  /** In their lead time, not open yet. */
  prewarmingWindows: string[];
  /** The earliest instant after now at which the bounds or either set change; undefined if none within the search horizon. */
  next?: WindowTransition;
}

// ---- Windows ----

interface Compiled { window: ScaleWindow; schedule: Schedule; tz: string; key: string; durationMs: number }
interface State { open: boolean; prewarming: boolean; last?: number; next?: number }
/** The openings around an instant; any instant in [from, to) has the same ones. */
interface Bracket { from: number; to: number; last?: number; next?: number }

const brackets = new Lru<Bracket[]>(2000);
const closings = new Lru<{ at?: number; knownOpenUntil?: number }>(2000);

function compile(w: ScaleWindow): Compiled {
  const tz = w.timeZone ?? WINDOW_DEFAULTS.timeZone;
  return { window: w, schedule: scheduleOf(w.schedule), tz, key: `${w.schedule}\u0000${tz}`, durationMs: parseDuration(w.duration) };
}

function bracketAt(c: Compiled, t: number): Bracket {
  const cached = brackets.get(c.key) ?? [];
  const hit = cached.find((b) => b.from <= t && t < b.to);
  if (hit) return hit;
  const last = lastOpening(c.schedule, c.tz, t, -Infinity);
  const next = nextOpening(c.schedule, c.tz, t, t + SEARCH_HORIZON_MS);
  const b: Bracket = { from: last ?? t, to: next ?? t + 1, ...(last !== undefined ? { last } : {}), ...(next !== undefined ? { next } : {}) };
  // A few per schedule: effectiveScale looks at now and at the next transition.
  brackets.set(c.key, [b, ...cached.slice(0, 3)]);
  return b;
}

/** How much longer than on the wall clock a gap between openings can be in elapsed time (the second pass of a repeated hour has none). */
function dstSlack(c: Compiled, now: number): number {
  const shift = zoneShift(c.tz, now);
  return c.schedule.everyHour && shift % HOUR === 0 ? 0 : shift;
}

/** Open at every instant: every day alike and no gap between openings longer than the duration. */
function alwaysOpen(c: Compiled, now: number): boolean {
  return c.schedule.dailyGap !== undefined && c.durationMs >= c.schedule.dailyGap * MINUTE + dstSlack(c, now);
}

function stateAt(c: Compiled, leadTimeMs: number, t: number): State {
  if (alwaysOpen(c, t)) return { open: true, prewarming: false };
  const { last, next } = bracketAt(c, t);
  if (last !== undefined && t < last + c.durationMs) return { open: true, prewarming: false, last };
  const prewarming = leadTimeMs > 0 && next !== undefined && next - leadTimeMs <= t;
  return { open: false, prewarming, ...(next !== undefined ? { next } : {}) };
}

/** When a window open since `last` closes: an opening before it would close keeps it open. */
function closing(c: Compiled, last: number): { at?: number; knownOpenUntil?: number } {
  const key = `${c.key}\u0000${c.durationMs}\u0000${last}`;
  const cached = closings.get(key);
  if (cached) return cached;
  // When no two openings on a day are further apart than the duration, the window stays open to the day's last one.
  const wholeDays = c.durationMs >= c.schedule.sameDayGap * MINUTE + dstSlack(c, last);
  let current = last;
  let result: { at?: number; knownOpenUntil?: number } | undefined;
  // Open past the search horizon of any instant the window is open at (each is before last + duration):
  // where it closes then changes nothing effectiveScale reports, and a window as long as the gap between
  // its openings (16 yearly ones open 8783h) would otherwise step CHAIN_LIMIT years each.
  const far = last + SEARCH_HORIZON_MS;
  for (let i = 0; i < CHAIN_LIMIT && !result && current <= far; i++) {
    if (wholeDays) {
      const wall = current + offsetAt(c.tz, current);
      const dayLast = opensAt(c.schedule, c.tz, Math.floor(wall / DAY) * DAY + c.schedule.lastMinute * MINUTE).instants.at(-1);
      if (dayLast !== undefined && dayLast > current) current = dayLast;
    }
    const end = current + c.durationMs;
    const latest = lastOpening(c.schedule, c.tz, end, current);
    if (latest === undefined || latest <= current) result = { at: end };
    else current = latest;
  }
  result ??= { knownOpenUntil: current + c.durationMs };
  closings.set(key, result);
  return result;
}

function boundsOf(base: ScaleBounds, compiled: Compiled[], states: State[]): ScaleBounds {
  const open = compiled.filter((_, i) => states[i]!.open).map((c) => c.window);
  let minScale = open.length > 0 ? Math.max(...open.map((w) => w.minScale)) : base.minScale;
  // A lead only brings capacity forward: a prewarming window never lowers the minimum early.
  for (const [i, c] of compiled.entries()) if (states[i]!.prewarming) minScale = Math.max(minScale, c.window.minScale);
  const maxes = open.flatMap((w) => (w.maxScale !== undefined ? [w.maxScale] : []));
  const maxScale = maxes.length > 0 ? Math.min(...maxes) : base.maxScale;
  // Overlapping windows (or a window above the base maximum) can ask for min > max: the maximum wins.
  if (maxScale !== undefined && minScale > maxScale) minScale = maxScale;
  return maxScale !== undefined ? { minScale, maxScale } : { minScale };
}

function evaluate(base: ScaleBounds, compiled: Compiled[], leadTimeMs: number, t: number) {
  const states = compiled.map((c) => stateAt(c, leadTimeMs, t));
  return { states, bounds: boundsOf(base, compiled, states) };
}

export function effectiveScale(base: ScaleBounds, windows: ScaleWindow[], leadTimeMs: number, now: Date): EffectiveScale {
  const t = now.getTime();
  const compiled = windows.map(compile).sort((a, b) => (a.window.name < b.window.name ? -1 : a.window.name > b.window.name ? 1 : 0));
  const { states, bounds } = evaluate(base, compiled, leadTimeMs, t);
  let horizon = t + SEARCH_HORIZON_MS;
  let next: { at: number; window: string; change: WindowTransition['change'] } | undefined;
  const consider = (at: number, window: string, change: WindowTransition['change']) => {
    if (at > t && (next === undefined || at < next.at)) next = { at, window, change };
  };
  for (const [i, c] of compiled.entries()) {
    const s = states[i]!;
    const name = c.window.name;
    if (s.open && s.last !== undefined) {
      const close = closing(c, s.last);
      if (close.at !== undefined) consider(close.at, name, 'close');
      else horizon = Math.min(horizon, close.knownOpenUntil!);
    } else if (!s.open && s.next !== undefined) {
      if (s.prewarming || leadTimeMs <= 0) consider(s.next, name, 'open');
      else consider(s.next - leadTimeMs, name, 'prewarm');
    }
  }
  const result: EffectiveScale = {
    ...bounds,
    openWindows: compiled.filter((_, i) => states[i]!.open).map((c) => c.window.name),
    prewarmingWindows: compiled.filter((_, i) => states[i]!.prewarming).map((c) => c.window.name),
  };
  if (next !== undefined && next.at < horizon) {
    const after = evaluate(base, compiled, leadTimeMs, next.at).bounds;
    result.next = { at: new Date(next.at), window: next.window, change: next.change, ...after };
  }
  return result;
}

/**
 * An app's bounds at `now`: its spec's base bounds, windows and prewarm lead time
 * read in one place, so the operator and a plan's schedule agree on them.
 */
export function scaleOf(spec: Pick<ServerlessAppSpec, 'scaling' | 'prewarm' | 'model'>, now: Date): EffectiveScale {
  const scaling = spec.scaling ?? {};
  // An LLM has no activator to wake it from zero: its versions run a replica unless told otherwise.
  const base = { minScale: scaling.minScale ?? (servesLlm(spec) ? LLM_DEFAULT_REPLICAS : 0), ...(scaling.maxScale !== undefined ? { maxScale: scaling.maxScale } : {}) };
  const leadTimeMs = spec.prewarm?.leadTime ? parseDuration(spec.prewarm.leadTime) : 0;
  return effectiveScale(base, scaling.windows ?? [], leadTimeMs, now);
}
