// Duration strings of the API, in the Go/Kubernetes style users already write
// ("45s", "15m", "1h30m", "1h0m0s"), held to milliseconds because that is the
// resolution of every clock the operator uses. Every number carries a unit and
// there are no days, signs or fractions, so one string has one meaning and the
// same grammar serves admission (DURATION_PATTERN) and the controller.

export class DurationError extends Error {
  override name = 'DurationError';
}

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;

const ALLOWED = 'a duration is one or more <integer><unit> parts with unit h, m, s or ms, e.g. "500ms", "45s", "15m", "1h30m"';

/**
 * For the CRD's OpenAPI `pattern`: valid in both RE2 (the API server) and JavaScript. Parts of
 * at most 6 digits in at most DURATION_MAX_LENGTH characters stay under 2,000,000h, well within
 * what CEL's duration() (Go's time.Duration, about 2,562,047h) reads, so a bound rule never
 * fails to evaluate.
 */
export const DURATION_PATTERN = '^([0-9]{1,6}(h|ms|m|s))+$';
export const DURATION_MAX_LENGTH = 16;

const PART = /([0-9]+)(h|ms|m|s)/y;

export function parseDuration(s: string): number {
  if (typeof s !== 'string' || s === '') throw new DurationError(`empty duration: ${ALLOWED}`);
  const quoted = JSON.stringify(s);
  if (/^[+-]/.test(s)) throw new DurationError(`invalid duration ${quoted}: no sign allowed; ${ALLOWED}`);
  if (/[0-9]d/.test(s)) throw new DurationError(`invalid duration ${quoted}: days are not supported (write 24h for a day); ${ALLOWED}`);
  if (/[0-9]\.[0-9]|\.[0-9]/.test(s)) throw new DurationError(`invalid duration ${quoted}: fractions are not supported (write 1h30m, not 1.5h); ${ALLOWED}`);
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m) {
      const rest = s.slice(at);
      const unit = /^[0-9]+([^0-9]+)/.exec(rest)?.[1];
      const why = /^[0-9]+$/.test(rest) ? `${JSON.stringify(rest)} has no unit`
        : unit !== undefined && /^[a-zµ]+$/i.test(unit) ? `unknown unit ${JSON.stringify(unit)}` : `unexpected ${JSON.stringify(rest)}`;
      throw new DurationError(`invalid duration ${quoted}: ${why}; ${ALLOWED}`);
    }
    total += Number(m[1]) * UNIT_MS[m[2] as Unit];
  }
  if (!Number.isSafeInteger(total)) throw new DurationError(`invalid duration ${quoted}: too long`);
  return total;
}

/** The shortest string parseDuration reads back as `ms`: "1h30m", "45s", "500ms", "0s". */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new DurationError(`cannot format ${ms} as a duration: need a whole number of milliseconds >= 0`);
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of ['h', 'm', 's', 'ms'] as const) {
    const n = Math.floor(rest / UNIT_MS[unit]);
    rest -= n * UNIT_MS[unit];
    if (n > 0) out += `${n}${unit}`;
  }
  return out;
}
