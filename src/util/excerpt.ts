// What a server or a tenant said, made safe to show in status, Events and logs.

export const EXCERPT_CHARS = 120;

/** Text from a server made safe to show: control characters become spaces, runs of space collapse, at most `max` characters. */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, ' ').replace(/\s+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}
