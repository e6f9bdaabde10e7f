import assert from 'node:assert/strict';
import { sessionCookie } from './session-cookie.ts';

/** Envoy's safe_regex is RE2's FullMatch: the whole header value. */
const fullMatch = (re: string, value: string) => new RegExp(`^(?:${re})$`).test(value);

describe('session cookie', () => {
  it('is off without rollout.stickiness', () => {
    assert.equal(sessionCookie(undefined), undefined);
  });

  const setCookies: Array<{ it: string; stickiness: Parameters<typeof sessionCookie>[0]; want: string }> = [
    { it: 'fills the defaults a spec not yet admitted lacks: 1h, path /, HttpOnly, SameSite Lax', stickiness: {}, want: 'sapp-version=0123456789; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax' },
    {
      it: 'writes every attribute a platform sets',
      stickiness: { cookieName: '__Host-shop', maxAge: '24h30s', path: '/', secure: true, httpOnly: false, sameSite: 'None' },
      want: '__Host-shop=0123456789; Max-Age=86430; Path=/; Secure; SameSite=None',
    },
    { it: 'counts Max-Age in whole seconds', stickiness: { maxAge: '1500ms', path: '/app' }, want: 'sapp-version=0123456789; Max-Age=1; Path=/app; HttpOnly; SameSite=Lax' },
  ];
  for (const c of setCookies) it(`Set-Cookie ${c.it}`, () => assert.equal(sessionCookie(c.stickiness)!.setCookie('0123456789'), c.want));

  const headers: Array<[string, boolean]> = [
    ['sapp-version=0123456789', true],
    ['a=1; sapp-version=0123456789', true],
    ['a=1;sapp-version=0123456789; b=2', true],
    ['sapp-version=0123456789; b=2', true],
    ['sapp-version=0123456789a', false], // another version whose hash starts alike
    ['sapp-version=012345678', false],
    ['xsapp-version=0123456789', false], // another cookie whose name ends alike
    ['a=sapp-version=0123456789', false],
    ['sapp-version=abcdef0123', false],
    ['', false],
  ];
  for (const [header, want] of headers) {
    it(`${want ? 'matches' : 'does not match'} the Cookie header ${JSON.stringify(header)}`, () => {
      assert.equal(fullMatch(sessionCookie({})!.cookieHeaderRegex('0123456789'), header), want);
    });
  }

  it('matches the cookie with any value when no version is named, and no other cookie', () => {
    const any = sessionCookie({})!.cookieHeaderRegex(undefined);
    for (const h of ['sapp-version=x', 'a=1; sapp-version=; b=2', 'sapp-version=0123456789']) assert.ok(fullMatch(any, h), h);
    for (const h of ['xsapp-version=x', 'a=1', '']) assert.ok(!fullMatch(any, h), h);
  });

  it('escapes what a cookie name may hold that RE2 reads as syntax', () => {
    const re = sessionCookie({ cookieName: 'a-b_c' })!.cookieHeaderRegex('0123456789');
    assert.ok(fullMatch(re, 'a-b_c=0123456789'));
    assert.ok(!fullMatch(re, 'aXb_c=0123456789'));
  });
});
