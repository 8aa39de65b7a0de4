import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The console's session: a cookie that names the key the person logged in with and when the
 * session ends, signed with a key derived from that key's hash (which never leaves the gateway)
 * and, when set, the deployment's KIWI_SESSION_SECRET. Nothing is kept on the server, so every
 * replica reading the same key store accepts it, a restart keeps it, and revoking the key ends
 * it at the next request. The CSRF token of a session is derived from it the same way.
 */

export const SESSION_COOKIE = 'kiwi_console';

/** The session's key: a client key's id and hash, or the keyless local operator's per-process one. */
export interface SessionKey {
  id: string;
  hash: string;
}

export interface Session {
  keyId: string;
  expires: Date;
  /** The token every change must carry (a form's `_csrf`). */
  csrf: string;
}

const VERSION = 'v1';
const ID = /^[A-Za-z0-9_]{1,64}$/;
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;

function macKey(key: SessionKey, secret: string): Buffer {
  return createHmac('sha256', `kiwi-console:${secret}`).update(key.hash).digest();
}

const sign = (k: Buffer, text: string): string => createHmac('sha256', k).update(text).digest('base64url');

/** A new session for `key`, ending `ttlMs` from `now`: the cookie's value and the session. */
export function newSession(key: SessionKey, secret: string, now: Date, ttlMs: number): { cookie: string; session: Session } {
  const expires = new Date(now.getTime() + ttlMs);
  const nonce = randomBytes(16).toString('base64url');
  const k = macKey(key, secret);
  const body = `${VERSION}.${key.id}.${expires.getTime()}.${nonce}`;
  return { cookie: `${body}.${sign(k, body)}`, session: { keyId: key.id, expires, csrf: sign(k, `csrf.${nonce}`) } };
}

/** The key id a cookie names, before it is checked (undefined for anything that is not a session cookie). */
export function sessionKeyId(cookie: string): string | undefined {
  const parts = cookie.split('.');
  return parts.length === 5 && parts[0] === VERSION && ID.test(parts[1] as string) ? parts[1] : undefined;
}

/** The session, when the cookie was signed for `key` and has not ended. */
export function checkSession(cookie: string, key: SessionKey, secret: string, now: Date): Session | undefined {
  const [version, id, expiresMs, nonce, mac] = cookie.split('.');
  if (version !== VERSION || id !== key.id || expiresMs === undefined || !/^\d{1,15}$/.test(expiresMs) || nonce === undefined || !NONCE.test(nonce) || mac === undefined || !MAC.test(mac)) return undefined;
  const k = macKey(key, secret);
  const expected = Buffer.from(sign(k, `${version}.${id}.${expiresMs}.${nonce}`));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const expires = new Date(Number(expiresMs));
  if (expires.getTime() <= now.getTime()) return undefined;
  return { keyId: id, expires, csrf: sign(k, `csrf.${nonce}`) };
}

/** Whether a form's token is the session's `csrf` (in constant time). */
export function csrfMatches(csrf: string, token: unknown): boolean {
  if (typeof token !== 'string') return false;
  const a = Buffer.from(token);
  const b = Buffer.from(csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}
