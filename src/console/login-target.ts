/**
 * Where a login goes once it succeeds: the console page a person was sent away from (a link
 * `kiwi chat` printed to /ui/approvals, a bookmark), carried through the login as `next`. Only a
 * path of this console is kept, so the login can never send a browser to another site (an open
 * redirect): not `//host` or `/\host` (which browsers read as another host), not a URL with a
 * scheme, not those spelled with percent escapes or control characters, and not the login itself.
 */

/** Longer than any console link (ids, a few filters). */
const MAX_TARGET_CHARS = 1024;
const BASE = 'http://console.invalid';

/** The path and query to go to after the login, or undefined when `value` is not one of the console's. */
export function loginTarget(value: string | undefined): string | undefined {
  if (value === undefined || value.length > MAX_TARGET_CHARS) return undefined;
  // Console paths need none of these: a backslash, a control character, an escaped slash, backslash or dot.
  if (!/^\/ui(?:[/?]|$)/.test(value) || /[\\\u0000-\u001f\u007f]|%(?:2f|5c|2e)/i.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return undefined;
  }
  const page = url.pathname;
  if (url.origin !== BASE || !(page === '/ui' || page.startsWith('/ui/')) || page === '/ui/login' || page === '/ui/logout') return undefined;
  return `${page}${url.search}`;
}
