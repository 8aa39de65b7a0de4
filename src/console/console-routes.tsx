import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Context, Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { raw } from 'hono/html';
import { mayAdminister } from '../clients/access.js';
import { LOCAL_CALLER, type ClientAuth } from '../clients/client-auth.js';
import type { KernelEventsBus } from '../contracts/kernel-events-bus.js';
import type { Caller } from '../policy/caller.js';
import { mountApprovalPages } from './approval-pages.js';
import { mountAuditPage } from './audit-page.js';
import { Layout, Notice, type Viewer } from './console-layout.js';
import { ConsoleError, renderError, type AdminCall, type ConsoleRequest, type ConsoleRouter } from './console-route.js';
import { checkSession, csrfMatches, newSession, SESSION_COOKIE, sessionKeyId, type SessionKey } from './console-session.js';
import { mountExecutionPages } from './execution-pages.js';
import { FAVICON_SVG } from './favicon.js';
import { mountKeyPages } from './key-pages.js';
import { mountLiveEvents } from './live-events.js';
import { loginTarget } from './login-target.js';
import { mountOverviewPage } from './overview-page.js';
import { mountThreadPages } from './thread-pages.js';
import { mountToolPages } from './tool-pages.js';
import { mountUsagePage } from './usage-page.js';

/**
 * The web console at /ui, served by the gateway on its own origin: server-rendered pages over
 * the admin API (called in this process as the logged-in key, so every view is scoped exactly as
 * the API is), one small script for live updates and confirmations, one stylesheet.
 *
 * Its doors: a person logs in with an admin or approver key, which becomes an HttpOnly,
 * SameSite=Strict session cookie that ends (console-session.ts); every change carries the
 * session's CSRF token; a strict Content-Security-Policy allows no inline script or style and no
 * framing; the request guard refuses other origins before any of this runs; hono's JSX escapes
 * all output.
 */

export interface ConsoleDeps {
  auth: Pick<ClientAuth, 'authenticate' | 'keyById' | 'mode'>;
  admin: AdminCall;
  /** Mixed into every session's signature (KIWI_SESSION_SECRET); '' for none. */
  sessionSecret: string;
  /** Aborted when the gateway stops: the live streams end then. */
  until?: AbortSignal;
  /** Word of the kernel's committed events: live pages look when the kernel changed (live-events.ts). */
  events?: KernelEventsBus;
  /** How long a login lasts (default 8 hours). */
  sessionTtlMs?: number;
  now?: () => Date;
}

const DEFAULT_TTL_MS = 8 * 3_600_000;
/** Forms are short: a key, an answer with a reason, an intent. */
const MAX_FORM_BYTES = 16 * 1024;

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Not no-referrer: with it Chromium sends `Origin: null` on the console's own form posts, which the request guard refuses.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

const ASSETS: Record<string, [type: string, body: string]> = {
  'console.js': ['text/javascript; charset=utf-8', readFileSync(new URL('./assets/console.js', import.meta.url), 'utf8')],
  'console.css': ['text/css; charset=utf-8', readFileSync(new URL('./assets/console.css', import.meta.url), 'utf8')],
};

export function mountConsole(app: Hono, deps: ConsoleDeps): void {
  const now = deps.now ?? ((): Date => new Date());
  const ttlMs = deps.sessionTtlMs ?? DEFAULT_TTL_MS;
  // The keyless local operator's sessions (loopback, no keys yet) are signed with a secret of this process.
  const localKey: SessionKey = { id: 'local', hash: randomBytes(32).toString('base64url') };

  app.use('/ui/*', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });
  app.use('/ui', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(name, value);
  });

  app.get('/ui/assets/:name', (c) => {
    const name = c.req.param('name');
    // Own keys only: `__proto__` or `constructor` is no asset.
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (asset === undefined) return c.text('not found', 404);
    return c.body(asset[1], 200, { 'content-type': asset[0] });
  });

  app.get('/favicon.ico', (c) => c.body(FAVICON_SVG, 200, { 'content-type': 'image/svg+xml', 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=86400' }));

  /** Who the session cookie says the person is, when it is valid and its key may use the console. */
  async function sessionOf(c: Context): Promise<{ caller: Caller; viewer: Viewer; key: string } | undefined> {
    const cookie = getCookie(c, SESSION_COOKIE);
    if (cookie === undefined || cookie.length > 512) return undefined;
    const keyId = sessionKeyId(cookie);
    if (keyId === undefined) return undefined;
    let found: { caller: Caller; key: SessionKey } | undefined;
    if (keyId === localKey.id) found = (await deps.auth.mode()).mode === 'open' ? { caller: LOCAL_CALLER, key: localKey } : undefined;
    else found = await deps.auth.keyById(keyId);
    if (found === undefined || !mayUseConsole(found.caller)) return undefined;
    const session = checkSession(cookie, found.key, deps.sessionSecret, now());
    if (session === undefined) return undefined;
    const caller = found.caller;
    return { caller, key: keyId, viewer: { client: caller.client, csrf: session.csrf, may: (area) => mayAdminister(caller, area), ...(keyId === localKey.id ? { keyless: true as const } : {}) } };
  }

  /** A new session for `key`, and on to the page the person came for (`next`, a loginTarget) or the overview. */
  function startSession(c: Context, key: SessionKey, next: string | undefined): Response {
    const { cookie, session } = newSession(key, deps.sessionSecret, now(), ttlMs);
    // Behind a proxy that ends TLS the request is http: its X-Forwarded-Proto can only make the cookie stricter.
    const https = new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
    setCookie(c, SESSION_COOKIE, cookie, { httpOnly: true, sameSite: 'Strict', path: '/ui', expires: session.expires, secure: https });
    return c.redirect(next ?? '/ui', 303);
  }

  const loginPage = (c: Context, next: string | undefined, message?: string, status: 200 | 401 | 403 = 200) =>
    c.html(
      <>
        {raw('<!doctype html>')}
        <Layout title="Log in">
          <h1>Log in</h1>
          {message === undefined ? null : <Notice kind="error">{message}</Notice>}
          <form class="login" method="post" action="/ui/login">
            <label>
              Admin or approver key
              <input type="password" name="key" autocomplete="off" required maxlength={512} />
            </label>
            {next === undefined ? null : <input type="hidden" name="next" value={next} />}
            <button type="submit">Log in</button>
          </form>
          <p class="hint">
            Make one with <code>kiwi keys create NAME --role admin</code> (or <code>--role approver</code> for the approval queue alone).
          </p>
          {/* Stateless sessions (console-session.ts): no list of ended sessions is kept, so what logging out does not do is said here. */}
          <p class="hint">
            Logging out deletes this browser's session cookie; a copy of it taken before keeps working until it expires or its key is revoked. To end every session of a key at once, revoke the key.
          </p>
        </Layout>
      </>,
      status,
    );

  app.get('/ui/login', async (c) => {
    const next = loginTarget(c.req.query('next'));
    // Loopback without keys: one person's machine, whose operator needs no key (as on the API).
    if ((await deps.auth.mode()).mode === 'open') return startSession(c, localKey, next);
    return loginPage(c, next);
  });

  app.post('/ui/login', async (c) => {
    const form = await readForm(c);
    if (form === undefined) return loginPage(c, undefined, 'The form was too large or not a form.', 401);
    const next = loginTarget(form.get('next') ?? undefined);
    const key = form.get('key') ?? '';
    const result = await deps.auth.authenticate({ authorization: `Bearer ${key.trim()}` });
    if (!result.ok) return loginPage(c, next, result.status === 401 ? 'That key is not valid: it was revoked, mistyped, or belongs to another gateway.' : result.message, 401);
    if (!mayUseConsole(result.caller) || result.key === undefined) return loginPage(c, next, `The key of client ${result.caller.client} has no console access: the console is for keys with the admin or approver role.`, 403);
    return startSession(c, result.key, next);
  });

  app.post('/ui/logout', async (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: '/ui' });
    return c.redirect('/ui/login', 303);
  });

  const request = (caller: Caller, viewer: Viewer): ConsoleRequest => ({
    viewer,
    caller,
    async api(method, path, body) {
      const answer = await deps.admin(caller, method, path, body);
      if (answer.status >= 300) throw new ConsoleError(answer.status, typeof answer.body['error'] === 'string' ? answer.body['error'] : `the admin API answered ${answer.status}`);
      return answer.body;
    },
  });

  const router: ConsoleRouter = {
    page(path, area, handler) {
      app.get(path, async (c) => {
        const who = await sessionOf(c);
        if (who === undefined) return c.redirect(loginUrl(c), 303);
        if (!who.viewer.may(area)) return renderError(c, who.viewer, new ConsoleError(403, `This key may not open ${area}.`));
        try {
          return await handler(c, request(who.caller, who.viewer));
        } catch (error) {
          if (error instanceof ConsoleError) return renderError(c, who.viewer, error);
          throw error;
        }
      });
    },
    change(path, area, handler) {
      app.post(path, async (c) => {
        const who = await sessionOf(c);
        if (who === undefined) return c.text('log in first: your session ended or was never started', 401);
        const form = await readForm(c);
        if (form === undefined) return c.text(`the form must be application/x-www-form-urlencoded and at most ${MAX_FORM_BYTES} bytes`, 400);
        if (!csrfMatches(who.viewer.csrf, form.get('_csrf'))) return c.text('this form did not come from this console session (CSRF token missing or wrong); reload the page and try again', 403);
        if (!who.viewer.may(area)) return renderError(c, who.viewer, new ConsoleError(403, `This key may not change ${area}.`));
        try {
          return await handler(c, request(who.caller, who.viewer), form);
        } catch (error) {
          if (error instanceof ConsoleError) return renderError(c, who.viewer, error);
          throw error;
        }
      });
    },
  };

  mountOverviewPage(router);
  mountApprovalPages(router);
  mountExecutionPages(router);
  mountKeyPages(router);
  mountAuditPage(router);
  mountThreadPages(router);
  mountUsagePage(router);
  mountToolPages(router);
  mountLiveEvents(app, { sessionOf, admin: deps.admin, ...(deps.until ? { until: deps.until } : {}), ...(deps.events ? { events: deps.events } : {}) });
}

/** The login, told to come back to this page afterwards (a deep link survives it). */
function loginUrl(c: Context): string {
  const url = new URL(c.req.url);
  const next = loginTarget(`${url.pathname}${url.search}`);
  return next === undefined || next === '/ui' ? '/ui/login' : `/ui/login?next=${encodeURIComponent(next)}`;
}

/** The console is for people who run the gateway: keys that may answer approvals or administer. */
function mayUseConsole(caller: Caller): boolean {
  return mayAdminister(caller, 'approvals');
}

/** An url-encoded form, read within MAX_FORM_BYTES; undefined when it is larger or of another type. */
async function readForm(c: Context): Promise<URLSearchParams | undefined> {
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(c.req.header('content-type') ?? '')) return undefined;
  const declared = Number(c.req.header('content-length') ?? '0');
  if (declared > MAX_FORM_BYTES) return undefined;
  const body = c.req.raw.body;
  if (body === null) return new URLSearchParams();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_FORM_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
