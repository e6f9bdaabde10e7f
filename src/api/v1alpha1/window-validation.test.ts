import assert from 'node:assert/strict';
import { validateWindows, type ScaleWindow } from './window-validation.ts';

const night: ScaleWindow = { name: 'night', schedule: '0 22 * * *', duration: '8h', minScale: 0 };

describe('scale window validation', () => {
  const ok: ScaleWindow = { name: 'day', schedule: '0 8 * * 1-5', duration: '10h', timeZone: 'Europe/Berlin', minScale: 2, maxScale: 5 };
  const problems = (w: Partial<ScaleWindow>, others: ScaleWindow[] = []) => validateWindows([...others, { ...ok, ...w }]).map((p) => [p.window, p.field, p.message]);

  it('accepts a valid window', () => {
    assert.deepEqual(validateWindows([ok, { ...night, schedule: '@daily' }]), []);
  });

  for (const schedule of ['@yearly', '0 0 31 12 *', '0 0 28 2 *', '0 0 13 * 5', '0 0 L 2 *']) {
    it(`accepts ${schedule}, which opens every year`, () => assert.deepEqual(problems({ schedule }), []));
  }

  const cases: { it: string; w: Partial<ScaleWindow>; field: string; message: RegExp }[] = [
    { it: 'rejects a cron value out of range, with the parser\'s message and what is allowed', w: { schedule: '0 25 * * *' }, field: 'schedule', message: /got value 25 expected range 0-23.*5-field cron expression "minute hour day-of-month month day-of-week"/ },
    { it: 'rejects a 6-field expression: seconds are not supported', w: { schedule: '0 0 8 * * 1-5' }, field: 'schedule', message: /seconds are not supported/ },
    { it: 'rejects too few fields', w: { schedule: '0 8 * *' }, field: 'schedule', message: /4 fields given; expected a 5-field/ },
    { it: 'rejects an empty schedule', w: { schedule: '' }, field: 'schedule', message: /0 fields given/ },
    { it: 'rejects an unknown macro, listing the allowed ones', w: { schedule: '@reboot' }, field: 'schedule', message: /unknown macro "@reboot".*@yearly @annually @monthly @weekly @daily @hourly @weekdays @weekends/ },
    { it: 'rejects @secondly', w: { schedule: '@secondly' }, field: 'schedule', message: /unknown macro/ },
    { it: 'rejects hashed (H) values, which would differ per process', w: { schedule: 'H 8 * * *' }, field: 'schedule', message: /H \(hashed values\) is not supported/ },
    { it: 'rejects a time zone inside the schedule', w: { schedule: 'CRON_TZ=Europe/Berlin 0 8 * * *' }, field: 'schedule', message: /set the time zone in timeZone/ },
    { it: 'rejects a date that never exists', w: { schedule: '0 0 30 2 *' }, field: 'schedule', message: /Invalid explicit day of month/ },
    { it: 'rejects a schedule that opens only on Feb 29 (not within every year)', w: { schedule: '0 0 29 2 *' }, field: 'schedule', message: /does not open in every year/ },
    { it: 'rejects a weekday a date rarely falls on (the fifth Friday of February)', w: { schedule: '0 0 * 2 5#5' }, field: 'schedule', message: /does not open in every year/ },
    { it: 'rejects an unknown time zone', w: { timeZone: 'Mars/Olympus' }, field: 'timeZone', message: /unknown time zone "Mars\/Olympus"; expected an IANA time zone/ },
    { it: 'rejects a UTC offset instead of a zone', w: { timeZone: '+02:00' }, field: 'timeZone', message: /is not an IANA time zone/ },
    { it: 'rejects a zero duration', w: { duration: '0s' }, field: 'duration', message: /longer than zero/ },
    { it: 'rejects a negative duration', w: { duration: '-5m' }, field: 'duration', message: /no sign/ },
    { it: 'rejects a duration in days', w: { duration: '1d' }, field: 'duration', message: /days are not supported/ },
    { it: 'rejects a duration without a unit', w: { duration: '10' }, field: 'duration', message: /has no unit/ },
    { it: 'rejects minScale > maxScale in a window', w: { minScale: 6, maxScale: 5 }, field: 'minScale', message: /minScale \(6\) must be <= maxScale \(5\)/ },
    { it: 'rejects a negative or fractional minScale', w: { minScale: 1.5 }, field: 'minScale', message: /whole number >= 0/ },
    { it: 'rejects maxScale 0 (Knative reads it as unlimited)', w: { minScale: 0, maxScale: 0 }, field: 'maxScale', message: /whole number >= 1/ },
    { it: 'rejects a window without a name', w: { name: '' }, field: 'name', message: /needs a name/ },
  ];
  for (const c of cases) {
    it(c.it, () => {
      const found = problems(c.w);
      assert.equal(found.length, 1, JSON.stringify(found));
      assert.deepEqual(found[0]!.slice(0, 2), [c.w.name ?? 'day', c.field]);
      assert.match(found[0]![2]!, c.message);
    });
  }

  it('rejects duplicate names, naming the repeated window', () => {
    assert.deepEqual(validateWindows([ok, { ...night, name: 'day' }]).map((p) => [p.window, p.field, p.message]), [['day', 'name', 'duplicate window name "day": names must be unique within the app']]);
  });

  it('reports every problem of a window', () => {
    assert.deepEqual(problems({ schedule: 'nope', timeZone: 'Nowhere/City', duration: '', minScale: -1 }).map(([, field]) => field), ['schedule', 'timeZone', 'duration', 'minScale']);
  });
});
