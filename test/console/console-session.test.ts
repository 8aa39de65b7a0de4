import { describe, expect, it } from 'vitest';
import { checkSession, csrfMatches, newSession, sessionKeyId } from '../../src/console/console-session.js';

const key = { id: 'key_0123abcd', hash: 'sha256:aaaa' };
const now = new Date('2026-11-28T12:00:00Z');
const HOUR = 3_600_000;

describe('console sessions', () => {
  it('checks a cookie it made for the same key, before it ends, and derives the same CSRF token', () => {
    const { cookie, session } = newSession(key, '', now, HOUR);
    expect(sessionKeyId(cookie)).toBe(key.id);
    const checked = checkSession(cookie, key, '', new Date(now.getTime() + HOUR - 1));
    expect(checked).toEqual(session);
    expect(csrfMatches(session.csrf, session.csrf)).toBe(true);
    expect(csrfMatches(session.csrf, `${session.csrf}x`)).toBe(false);
    expect(csrfMatches(session.csrf, undefined)).toBe(false);
  });

  it('refuses it after it ended, for another key or hash (a key made again), with another secret, and when any part is changed', () => {
    const { cookie } = newSession(key, 's1', now, HOUR);
    expect(checkSession(cookie, key, 's1', new Date(now.getTime() + HOUR))).toBeUndefined();
    expect(checkSession(cookie, { ...key, hash: 'sha256:bbbb' }, 's1', now)).toBeUndefined();
    expect(checkSession(cookie, { ...key, id: 'key_ffffffff' }, 's1', now)).toBeUndefined();
    expect(checkSession(cookie, key, 's2', now)).toBeUndefined();
    const parts = cookie.split('.');
    // A later end, or the signature of another session.
    expect(checkSession([parts[0], parts[1], String(now.getTime() + 10 * HOUR), parts[3], parts[4]].join('.'), key, 's1', now)).toBeUndefined();
    const other = newSession(key, 's1', now, HOUR).cookie.split('.');
    expect(checkSession([...parts.slice(0, 4), other[4]].join('.'), key, 's1', now)).toBeUndefined();
  });

  it('reads nothing from what is not a session cookie', () => {
    for (const bad of ['', 'v1', 'v1.key.1.2', 'v2.key_a.1.n.m', 'v1.key a.1.n.m', `v1.${'k'.repeat(65)}.1.n.m`, 'v1.key_a.1.n.m.x']) expect(sessionKeyId(bad), bad).toBeUndefined();
    expect(checkSession('v1.key_0123abcd.99999999999999999999.n.m', key, '', now)).toBeUndefined();
  });
});
