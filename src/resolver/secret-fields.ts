/**
 * Parameters that hold a secret (`api_key`, `accessToken`, `password`, `appid`) and what may go
 * there. A wrong value in such a field is worse than none: a user name, a place or an amount
 * sent as a token leaks it to the wrong header and fails the call anyway. Such a field takes
 * only a value written as one: quoted, or a run of letters and digits (or a bare number) that
 * the text names as the secret on its left ("my token is abcd1234", "password: s3cret");
 * otherwise it is asked for.
 */
import type { Mention } from './mention.js';
import { splitName } from './text-words.js';

/** The last word of the name that makes it a secret; `key` only after a word that says whose. */
const SECRET_HEADS = new Set(['token', 'password', 'passwd', 'pwd', 'passcode', 'passphrase', 'secret', 'credential', 'credentials', 'apikey', 'appid']);
const KEY_OWNERS = new Set(['api', 'access', 'secret', 'private', 'app', 'auth', 'client', 'subscription', 'license', 'licence']);
const ID_OWNERS = new Set(['app', 'client']);

/** Whether a parameter named so holds a secret: the head (last word) of its name says so. */
export function holdsSecret(name: string): boolean {
  const words = splitName(name);
  const head = words[words.length - 1];
  const before = words[words.length - 2];
  if (head === undefined) return false;
  if (SECRET_HEADS.has(head)) return true;
  if (head === 'key' && before !== undefined && KEY_OWNERS.has(before)) return true;
  return head === 'id' && before !== undefined && ID_OWNERS.has(before) && words.length === 2;
}

/** The kinds of value a secret can be written as: quoted text, a token of letters and digits, a bare number (a PIN). */
export function secretShaped(m: Mention): boolean {
  if (m.kind === 'quoted' || m.kind === 'id') return true;
  return m.kind === 'number' && m.unit === undefined && m.money !== true && m.percent !== true;
}
