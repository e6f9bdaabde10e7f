// Sticky sessions (spec.rollout.stickiness), in one place for both routers: the
// Set-Cookie a response carries to name the version it reached, and the match a
// request's Cookie header makes to stay on it. The cookie names the version
// (its hash, status.versions.*.version), never a tag or revision: the stable and
// candidate tags move from version to version, and the revisions differ by
// router and kind, while a version keeps its hash for its whole life.

import { STICKINESS_DEFAULTS } from '../api/v1alpha1/defaults.ts';
import { parseDuration } from '../api/v1alpha1/duration.ts';
import type { Stickiness } from '../api/v1alpha1/serverlessapp.ts';

export interface SessionCookie {
  name: string;
  /** The Set-Cookie value for a response that reached `version`. */
  setCookie(version: string): string;
  /**
   * An RE2 expression that matches a whole Cookie header (`a=1; name=v; b=2`) carrying this cookie
   * with `version` (undefined: with any value): both routers hand header regexes to Envoy's safe_regex, a full match.
   */
  cookieHeaderRegex(version: string | undefined): string;
}

// RE2 syntax a cookie name or version could hold (the schema allows letters, digits, '_' and '-'; a
// '-' outside a class is literal), escaped all the same, as the header rules' prefixes are.
const escapeRegex = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');

/** The app's session cookie; undefined when stickiness is off. Defaults fill what a spec not yet admitted lacks. */
export function sessionCookie(stickiness: Stickiness | undefined): SessionCookie | undefined {
  if (!stickiness) return undefined;
  const name = stickiness.cookieName ?? STICKINESS_DEFAULTS.cookieName;
  const maxAge = Math.floor(parseDuration(stickiness.maxAge ?? STICKINESS_DEFAULTS.maxAge) / 1000);
  const attributes = [
    `Max-Age=${maxAge}`,
    `Path=${stickiness.path ?? STICKINESS_DEFAULTS.path}`,
    ...(stickiness.secure ? ['Secure'] : []),
    ...(stickiness.httpOnly ?? STICKINESS_DEFAULTS.httpOnly ? ['HttpOnly'] : []),
    `SameSite=${stickiness.sameSite ?? STICKINESS_DEFAULTS.sameSite}`,
  ].join('; ');
  return {
    name,
    setCookie: (version) => `${name}=${version}; ${attributes}`,
    // The cookie first or after "; ", its value whole (followed by ";" or the end).
    // Anchored, though Envoy's safe_regex is a full match: Gateway API leaves a RegularExpression's semantics to
    // the implementation, and one that searches must not take another cookie whose name ends alike.
    cookieHeaderRegex: (version) => `^(.*;[ ]*)?${escapeRegex(name)}=${version === undefined ? '[^;]*' : escapeRegex(version)}(;.*)?$`,
  };
}
