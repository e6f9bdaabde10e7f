import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { CronExpressionParser } from 'cron-parser';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import { assertGolden } from '../../test/support/golden.ts';
import type { ScaleWindow } from '../api/v1alpha1/window-validation.ts';
import { effectiveScale, scaleOf, type EffectiveScale, type ScaleBounds } from './windows.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const state = (r: EffectiveScale) => ({ minScale: r.minScale, maxScale: r.maxScale, open: r.openWindows, prewarming: r.prewarmingWindows });
const scaleAt = (base: ScaleBounds, windows: ScaleWindow[], iso: string, lead = '0s') => effectiveScale(base, windows, parseDuration(lead), new Date(iso));

// 2026-06-10 is a Wednesday.
const day: ScaleWindow = { name: 'day', schedule: '0 8 * * *', duration: '10h', minScale: 3 };
const night: ScaleWindow = { name: 'night', schedule: '0 22 * * *', duration: '8h', minScale: 0 };

describe('scale windows', () => {
  describe('effective bounds', () => {
    const cases: { it: string; base: ScaleBounds; windows: ScaleWindow[]; now: string; lead?: string; expect: ReturnType<typeof state> }[] = [
      { it: 'applies the base bounds when there are no windows', base: { minScale: 1, maxScale: 5 }, windows: [], now: '2026-06-10T12:00:00Z',
        expect: { minScale: 1, maxScale: 5, open: [], prewarming: [] } },
      { it: 'applies the base bounds outside every window', base: { minScale: 1 }, windows: [day], now: '2026-06-10T07:59:59.999Z',
        expect: { minScale: 1, maxScale: undefined, open: [], prewarming: [] } },
      { it: 'applies the window minScale from the opening instant', base: { minScale: 1 }, windows: [day], now: '2026-06-10T08:00:00Z',
        expect: { minScale: 3, maxScale: undefined, open: ['day'], prewarming: [] } },
      { it: 'keeps the window open until just before opening + duration', base: { minScale: 1 }, windows: [day], now: '2026-06-10T17:59:59.999Z',
        expect: { minScale: 3, maxScale: undefined, open: ['day'], prewarming: [] } },
      { it: 'closes the window at exactly opening + duration', base: { minScale: 1 }, windows: [day], now: '2026-06-10T18:00:00Z',
        expect: { minScale: 1, maxScale: undefined, open: [], prewarming: [] } },
      { it: 'uses the base maxScale when no open window gives one', base: { minScale: 1, maxScale: 7 }, windows: [day], now: '2026-06-10T09:00:00Z',
        expect: { minScale: 3, maxScale: 7, open: ['day'], prewarming: [] } },
      {
        it: 'takes the largest minScale and the smallest maxScale of overlapping windows', base: { minScale: 1, maxScale: 50 },
        windows: [{ ...day, maxScale: 20 }, { name: 'lunch', schedule: '0 12 * * *', duration: '2h', minScale: 6, maxScale: 30 }, { name: 'cap', schedule: '0 11 * * *', duration: '4h', minScale: 2, maxScale: 25 }],
        now: '2026-06-10T12:30:00Z', expect: { minScale: 6, maxScale: 20, open: ['cap', 'day', 'lunch'], prewarming: [] },
      },
      { it: 'lets a night window lower the minimum, so the app can scale to zero at night (across midnight)', base: { minScale: 2 }, windows: [night], now: '2026-06-11T03:00:00Z',
        expect: { minScale: 0, maxScale: undefined, open: ['night'], prewarming: [] } },
      {
        it: 'clamps the minimum to the maximum when open windows ask for min > max', base: { minScale: 1, maxScale: 10 },
        windows: [day, { name: 'quiet', schedule: '0 9 * * *', duration: '1h', minScale: 0, maxScale: 2 }],
        now: '2026-06-10T09:30:00Z', expect: { minScale: 2, maxScale: 2, open: ['day', 'quiet'], prewarming: [] },
      },
      { it: 'clamps a window minimum above the base maximum', base: { minScale: 0, maxScale: 3 }, windows: [{ ...day, minScale: 5 }], now: '2026-06-10T09:00:00Z',
        expect: { minScale: 3, maxScale: 3, open: ['day'], prewarming: [] } },
      { it: 'does not prewarm before the lead time begins', base: { minScale: 1, maxScale: 10 }, windows: [{ ...day, maxScale: 20 }], lead: '30m', now: '2026-06-10T07:29:59.999Z',
        expect: { minScale: 1, maxScale: 10, open: [], prewarming: [] } },
      { it: 'raises the minimum lead time before the opening, keeping the base maximum (prewarming)', base: { minScale: 1, maxScale: 10 }, windows: [{ ...day, maxScale: 20 }], lead: '30m', now: '2026-06-10T07:30:00Z',
        expect: { minScale: 3, maxScale: 10, open: [], prewarming: ['day'] } },
      { it: 'applies the window maxScale from the real opening', base: { minScale: 1, maxScale: 10 }, windows: [{ ...day, maxScale: 20 }], lead: '30m', now: '2026-06-10T08:00:00Z',
        expect: { minScale: 3, maxScale: 20, open: ['day'], prewarming: [] } },
      { it: 'never lowers the minimum early: a prewarming window below the base minimum changes nothing yet', base: { minScale: 2 }, windows: [night], lead: '30m', now: '2026-06-10T21:45:00Z',
        expect: { minScale: 2, maxScale: undefined, open: [], prewarming: ['night'] } },
      {
        it: 'prewarms above a night window that is still open', base: { minScale: 2 }, windows: [{ ...night, duration: '10h' }, { ...day, minScale: 4 }], lead: '30m',
        now: '2026-06-11T07:45:00Z', expect: { minScale: 4, maxScale: undefined, open: ['night'], prewarming: ['day'] },
      },
      { it: 'keeps a window open for good when its duration is longer than the period', base: { minScale: 0 }, windows: [{ name: 'busy', schedule: '*/10 * * * *', duration: '15m', minScale: 1 }], now: '2026-06-10T12:34:56Z',
        expect: { minScale: 1, maxScale: undefined, open: ['busy'], prewarming: [] } },
      { it: 'opens a day-of-week window on weekdays', base: { minScale: 0 }, windows: [{ name: 'office', schedule: '0 9 * * MON-FRI', duration: '8h', minScale: 2 }], now: '2026-06-12T10:00:00Z',
        expect: { minScale: 2, maxScale: undefined, open: ['office'], prewarming: [] } },
      { it: 'keeps a day-of-week window closed at the weekend', base: { minScale: 0 }, windows: [{ name: 'office', schedule: '0 9 * * 1-5', duration: '8h', minScale: 2 }], now: '2026-06-13T10:00:00Z',
        expect: { minScale: 0, maxScale: undefined, open: [], prewarming: [] } },
      { it: 'opens a day-of-month window on that day', base: { minScale: 0 }, windows: [{ name: 'billing', schedule: '0 0 1 * *', duration: '24h', minScale: 4 }], now: '2026-07-01T23:00:00Z',
        expect: { minScale: 4, maxScale: undefined, open: ['billing'], prewarming: [] } },
      { it: 'opens a last-day-of-month (L) window', base: { minScale: 0 }, windows: [{ name: 'close', schedule: '0 18 L * *', duration: '6h', minScale: 4 }], now: '2026-06-30T20:00:00Z',
        expect: { minScale: 4, maxScale: undefined, open: ['close'], prewarming: [] } },
      { it: 'accepts @daily as a schedule', base: { minScale: 0 }, windows: [{ name: 'midnight', schedule: '@daily', duration: '1h', minScale: 1 }], now: '2026-06-10T00:30:00Z',
        expect: { minScale: 1, maxScale: undefined, open: ['midnight'], prewarming: [] } },
      { it: 'evaluates a window in its own time zone', base: { minScale: 0 }, windows: [{ ...day, timeZone: 'Asia/Tokyo' }], now: '2026-06-10T00:00:00Z',
        expect: { minScale: 3, maxScale: undefined, open: ['day'], prewarming: [] } },
    ];
    for (const c of cases) {
      it(c.it, () => {
        assert.deepEqual(state(scaleAt(c.base, c.windows, c.now, c.lead)), c.expect);
      });
    }
  });

  describe('next transition', () => {
    it('reports a window that outlasts the gaps between its openings as open, and still finds the other windows\' transitions', () => {
      // Open a whole year from each March: it never closes. Past the horizon (8 years) where it would
      // close changes nothing; following it further took 256 yearly steps (seconds for 16 such windows).
      const yearly: ScaleWindow = { name: 'year', schedule: '30 2 1-7 3 0', duration: '8783h', timeZone: 'Europe/Berlin', minScale: 2 };
      const other: ScaleWindow = { name: 'other', schedule: '0 8 1 6 *', duration: '1h', minScale: 1 };
      const r = effectiveScale({ minScale: 0 }, [yearly, other], 0, new Date('2026-11-25T12:00:00Z'));
      assert.deepEqual(r.openWindows, ['year']);
      assert.deepEqual(r.next && [r.next.window, r.next.change, r.next.at.toISOString()], ['other', 'open', '2027-06-01T08:00:00.000Z'], 'the other window\'s transitions are still found');
    });

    const transition = (r: EffectiveScale) => r.next && { at: r.next.at.toISOString(), window: r.next.window, change: r.next.change, minScale: r.next.minScale, maxScale: r.next.maxScale };
    const withLead = [{ ...day, maxScale: 20 }];
    const cases: { it: string; base?: ScaleBounds; windows: ScaleWindow[]; now: string; lead?: string; expect: ReturnType<typeof transition> }[] = [
      { it: 'has none without windows', windows: [], now: '2026-06-10T12:00:00Z', expect: undefined },
      { it: 'is the opening of a closed window', windows: [day], now: '2026-06-10T07:00:00Z',
        expect: { at: '2026-06-10T08:00:00.000Z', window: 'day', change: 'open', minScale: 3, maxScale: undefined } },
      { it: 'is the closing of an open window', windows: [day], now: '2026-06-10T09:00:00Z',
        expect: { at: '2026-06-10T18:00:00.000Z', window: 'day', change: 'close', minScale: 1, maxScale: undefined } },
      { it: 'is the start of the lead time (t - lead) before a prewarmed opening', base: { minScale: 1, maxScale: 10 }, windows: withLead, lead: '30m', now: '2026-06-10T07:00:00Z',
        expect: { at: '2026-06-10T07:30:00.000Z', window: 'day', change: 'prewarm', minScale: 3, maxScale: 10 } },
      { it: 'is the opening (t) once prewarming', base: { minScale: 1, maxScale: 10 }, windows: withLead, lead: '30m', now: '2026-06-10T07:30:00Z',
        expect: { at: '2026-06-10T08:00:00.000Z', window: 'day', change: 'open', minScale: 3, maxScale: 20 } },
      { it: 'is the closing (t + d) once open', base: { minScale: 1, maxScale: 10 }, windows: withLead, lead: '30m', now: '2026-06-10T08:00:00Z',
        expect: { at: '2026-06-10T18:00:00.000Z', window: 'day', change: 'close', minScale: 1, maxScale: 10 } },
      { it: 'is the next weekday opening from a Friday evening', windows: [{ name: 'office', schedule: '0 9 * * 1-5', duration: '8h', minScale: 2 }], now: '2026-06-12T18:00:00Z',
        expect: { at: '2026-06-15T09:00:00.000Z', window: 'office', change: 'open', minScale: 2, maxScale: undefined } },
      { it: 'is the first of next month for a day-of-month window', windows: [{ name: 'billing', schedule: '0 0 1 * *', duration: '24h', minScale: 4 }], now: '2026-06-02T00:00:00Z',
        expect: { at: '2026-07-01T00:00:00.000Z', window: 'billing', change: 'open', minScale: 4, maxScale: undefined } },
      {
        it: 'is the closing of one overlapping window while the other stays open', windows: [day, { name: 'lunch', schedule: '0 12 * * *', duration: '2h', minScale: 6 }], now: '2026-06-10T12:30:00Z',
        expect: { at: '2026-06-10T14:00:00.000Z', window: 'lunch', change: 'close', minScale: 3, maxScale: undefined },
      },
      {
        it: 'reports simultaneous changes once, with the bounds after all of them', windows: [{ ...day, name: 'b', minScale: 2 }, { ...day, name: 'a', minScale: 5 }], now: '2026-06-10T07:00:00Z',
        expect: { at: '2026-06-10T08:00:00.000Z', window: 'a', change: 'open', minScale: 5, maxScale: undefined },
      },
      { it: 'has none for a window that never closes (duration longer than the period)', windows: [{ name: 'busy', schedule: '*/10 * * * *', duration: '15m', minScale: 1 }], now: '2026-06-10T12:00:00Z', expect: undefined },
      {
        it: 'finds where back-to-back openings stop: every 10 minutes on weekdays for 15m closes on Saturday at 00:05', windows: [{ name: 'busy', schedule: '*/10 * * * 1-5', duration: '15m', minScale: 1 }], now: '2026-06-08T00:00:00Z',
        expect: { at: '2026-06-13T00:05:00.000Z', window: 'busy', change: 'close', minScale: 1, maxScale: undefined },
      },
      { it: 'finds the next Feb 29 opening from 2027-03-01 (2028-02-29)', windows: [{ name: 'leap', schedule: '0 0 29 2 *', duration: '24h', minScale: 5 }], now: '2027-03-01T00:00:00Z',
        expect: { at: '2028-02-29T00:00:00.000Z', window: 'leap', change: 'open', minScale: 5, maxScale: undefined } },
      { it: 'finds a Feb 29 opening eight years out (2096 to 2104: 2100 is not a leap year)', windows: [{ name: 'leap', schedule: '0 0 29 2 *', duration: '24h', minScale: 5 }], now: '2096-03-01T00:00:00Z',
        expect: { at: '2104-02-29T00:00:00.000Z', window: 'leap', change: 'open', minScale: 5, maxScale: undefined } },
      {
        it: 'closes into prewarming when the lead is longer than the time between occurrences', base: { minScale: 1 }, windows: [{ ...night, minScale: 3 }], lead: '20h', now: '2026-06-11T05:00:00Z',
        expect: { at: '2026-06-11T06:00:00.000Z', window: 'night', change: 'close', minScale: 3, maxScale: undefined },
      },
    ];
    for (const c of cases) {
      it(c.it, () => {
        assert.deepEqual(transition(scaleAt(c.base ?? { minScale: 1 }, c.windows, c.now, c.lead)), c.expect);
      });
    }

    it('shows a window closing into its next lead time as prewarming', () => {
      const after = scaleAt({ minScale: 1 }, [{ ...night, minScale: 3 }], '2026-06-11T06:00:00Z', '20h');
      assert.deepEqual([after.openWindows, after.prewarmingWindows], [[], ['night']]);
    });

    it('looks up a Feb 29 schedule without stepping minute by minute', () => {
      const started = performance.now();
      for (let year = 2030; year < 2130; year += 3) scaleAt({ minScale: 0 }, [{ name: 'leap', schedule: '0 0 29 2 *', duration: '1h', minScale: 1, timeZone: 'Europe/Berlin' }], `${year}-03-01T00:00:00Z`);
      assert.ok(performance.now() - started < 2000, `took ${Math.round(performance.now() - started)} ms`);
    });
  });

  describe('daylight saving and long-range golden timelines (testdata/*.json; UPDATE_GOLDEN=1 rewrites them)', () => {
    const dir = new URL('./testdata/', import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
      const golden = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as {
        scenario: string; displayTimeZone: string; base: ScaleBounds; leadTime: string; windows: ScaleWindow[]; from: string; steps: number; timeline: string[];
      };
      it(`${file}: ${golden.scenario}`, () => {
        const actual = timeline(golden.base, golden.windows, parseDuration(golden.leadTime), new Date(golden.from), golden.steps, golden.displayTimeZone);
        assertGolden(new URL(file, dir), `${JSON.stringify({ ...golden, timeline: actual }, null, 2)}\n`);
      });
    }
  });

  describe('no hidden transitions', () => {
    // An independent reading of the rules: cron-parser in the window's own zone (its zone handling is
    // exact away from DST hours, which these schedules avoid) and plain arithmetic for the bounds.
    const pool: ScaleWindow[] = [
      { name: 'office', schedule: '0 8 * * 1-5', duration: '10h', minScale: 4, maxScale: 20 },
      { name: 'night', schedule: '0 22 * * *', duration: '8h', minScale: 0, maxScale: 2 },
      { name: 'hours', schedule: '*/30 9-17 * * *', duration: '20m', minScale: 3 },
      { name: 'three', schedule: '15 */3 * * *', duration: '2h', minScale: 5, maxScale: 8 },
      { name: 'fortnight', schedule: '0 12 1,15 * *', duration: '36h', minScale: 6 },
      { name: 'weekend', schedule: '0 9 * * 6,0', duration: '4h', minScale: 1, maxScale: 4 },
    ];
    const zones = ['UTC', 'Europe/Berlin', 'America/New_York'];
    const firesIn = (w: ScaleWindow, from: number, to: number) => {
      const next = CronExpressionParser.parse(w.schedule, { tz: w.timeZone ?? 'UTC', currentDate: new Date(from) }).next().getTime();
      return next <= to;
    };
    const oracle = (base: ScaleBounds, windows: ScaleWindow[], lead: number, t: number) => {
      const open = windows.filter((w) => firesIn(w, t - parseDuration(w.duration), t));
      const prewarming = windows.filter((w) => !open.includes(w) && lead > 0 && firesIn(w, t, t + lead));
      let minScale = Math.max(open.length ? Math.max(...open.map((w) => w.minScale)) : base.minScale, ...prewarming.map((w) => w.minScale));
      const maxes = open.flatMap((w) => (w.maxScale === undefined ? [] : [w.maxScale]));
      const maxScale = maxes.length ? Math.min(...maxes) : base.maxScale;
      if (maxScale !== undefined) minScale = Math.min(minScale, maxScale);
      return { minScale, maxScale, open: open.map((w) => w.name).sort(), prewarming: prewarming.map((w) => w.name).sort() };
    };
    let seed = 20260329;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;

    it('holds the same bounds from now until just before next.at, and changes them at next.at, for seeded random instants', () => {
      for (let run = 0; run < 60; run++) {
        const tz = zones[run % zones.length]!;
        const windows = pool.filter(() => random() < 0.5).map((w) => ({ ...w, timeZone: tz }));
        const base = { minScale: 1 + Math.floor(random() * 3), ...(random() < 0.5 ? { maxScale: 10 } : {}) };
        const lead = random() < 0.5 ? 0 : Math.floor(random() * 90) * MINUTE;
        const now = Date.UTC(2026, 0, 1) + Math.floor(random() * 365 * 24) * HOUR + Math.floor(random() * 60) * MINUTE;
        const r = effectiveScale(base, windows, lead, new Date(now));
        const where = `run ${run}: ${new Date(now).toISOString()} ${tz} lead ${lead / MINUTE}m ${windows.map((w) => w.name).join(',')}`;
        assert.deepEqual(state(r), oracle(base, windows, lead, now), where);
        if (!r.next) {
          assert.equal(windows.length, 0, `${where}: only an app without windows has no next transition here`);
          continue;
        }
        const end = r.next.at.getTime();
        for (const t of [now + (end - now) / 3, now + (2 * (end - now)) / 3, end - 1].map(Math.floor)) {
          assert.deepEqual(state(effectiveScale(base, windows, lead, new Date(t))), state(r), `${where}: at ${new Date(t).toISOString()}, before next.at`);
          assert.deepEqual(oracle(base, windows, lead, t), state(r), `${where}: oracle at ${new Date(t).toISOString()}`);
        }
        const after = effectiveScale(base, windows, lead, r.next.at);
        assert.notDeepEqual(state(after), state(r), `${where}: at next.at ${r.next.at.toISOString()}`);
        assert.deepEqual(state(after), oracle(base, windows, lead, end), `${where}: oracle at next.at`);
        assert.deepEqual({ minScale: after.minScale, maxScale: after.maxScale }, { minScale: r.next.minScale, maxScale: r.next.maxScale }, `${where}: bounds announced for next.at`);
      }
    });
  });


  describe("an app's bounds from its spec", () => {
    const cases: { it: string; spec: Parameters<typeof scaleOf>[0]; now: string; expect: ReturnType<typeof state> & { next?: string } }[] = [
      { it: 'scales from zero, unbounded, when the spec says nothing', spec: {}, now: '2026-06-10T12:00:00Z',
        expect: { minScale: 0, maxScale: undefined, open: [], prewarming: [] } },
      { it: 'takes the base bounds from spec.scaling', spec: { scaling: { minScale: 1, maxScale: 4 } }, now: '2026-06-10T12:00:00Z',
        expect: { minScale: 1, maxScale: 4, open: [], prewarming: [] } },
      { it: 'applies spec.scaling.windows over the base bounds', spec: { scaling: { minScale: 1, windows: [day] } }, now: '2026-06-10T09:00:00Z',
        expect: { minScale: 3, maxScale: undefined, open: ['day'], prewarming: [], next: '2026-06-10T18:00:00.000Z' } },
      { it: "opens a window's bounds spec.prewarm.leadTime early", spec: { scaling: { windows: [day] }, prewarm: { leadTime: '15m' } }, now: '2026-06-10T07:50:00Z',
        expect: { minScale: 3, maxScale: undefined, open: [], prewarming: ['day'], next: '2026-06-10T08:00:00.000Z' } },
      { it: 'announces the prewarm of the next window leadTime before it opens', spec: { scaling: { windows: [day] }, prewarm: { leadTime: '15m' } }, now: '2026-06-10T07:00:00Z',
        expect: { minScale: 0, maxScale: undefined, open: [], prewarming: [], next: '2026-06-10T07:45:00.000Z' } },
    ];
    for (const c of cases) {
      it(c.it, () => {
        const r = scaleOf(c.spec, new Date(c.now));
        const { next, ...bounds } = c.expect;
        assert.deepEqual(state(r), bounds);
        if (next) assert.equal(r.next?.at.toISOString(), next);
      });
    }
  });
});

/** Walks `steps` transitions from `from`, one line each, checking nothing changes in between. */
function timeline(base: ScaleBounds, windows: ScaleWindow[], lead: number, from: Date, steps: number, tz: string): string[] {
  const local = new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'shortOffset' });
  const line = (at: Date, what: string, r: EffectiveScale) =>
    `${at.toISOString()} (${local.format(at).replace(',', '')}) ${what} -> min ${r.minScale} max ${r.maxScale ?? '-'} open [${r.openWindows.join(' ')}] prewarming [${r.prewarmingWindows.join(' ')}]`;
  let r = effectiveScale(base, windows, lead, from);
  const lines = [line(from, 'start', r)];
  for (let i = 0; i < steps && r.next; i++) {
    const { at, window, change } = r.next;
    assert.deepEqual(state(effectiveScale(base, windows, lead, new Date(at.getTime() - 1))), state(r), `unchanged until ${at.toISOString()}`);
    const after = effectiveScale(base, windows, lead, at);
    assert.deepEqual([after.minScale, after.maxScale], [r.next.minScale, r.next.maxScale], `bounds announced for ${at.toISOString()}`);
    lines.push(line(at, `${change} ${window}`, after));
    r = after;
  }
  return lines;
}
