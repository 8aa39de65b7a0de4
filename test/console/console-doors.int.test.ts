import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, KEY_FILE } from '../../src/clients/key-store.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';

/**
 * The console's doors, route by route, without a browser: who gets a page, who is sent to log in,
 * who is refused, and what a change needs. The gateway is `kiwi serve`'s on a copy of the demo
 * `.ai/` with keys (its upstream a local server replaying recorded streams).
 */

let served: DemoGateway;
let url: string;
const keys = { admin: '', approver: '', client: '' };

beforeAll(async () => {
  served = await serveDemoGateway({ prefix: 'kiwi-console-doors-', config: 'prices:\n  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }' });
  url = served.server.url;
  const file = path.join(served.root, KEY_FILE);
  keys.admin = (await createKey(file, 'ops', { roles: ['admin'] })).key;
  keys.approver = (await createKey(file, 'reviewer', { roles: ['approver'] })).key;
  keys.client = (await createKey(file, 'alice')).key;
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const FORM = 'application/x-www-form-urlencoded';

/** The session cookie a login with `key` gets (undefined when refused), and the answer. */
async function login(key: string): Promise<{ status: number; cookie?: string; body: string }> {
  const res = await fetch(`${url}/ui/login`, { method: 'POST', headers: { 'content-type': FORM }, body: `key=${encodeURIComponent(key)}`, redirect: 'manual' });
  const cookie = res.headers.get('set-cookie')?.split(';')[0];
  return { status: res.status, ...(cookie === undefined ? {} : { cookie }), body: await res.text() };
}

async function page(route: string, cookie?: string): Promise<{ status: number; location: string | null; body: string; headers: Headers }> {
  const res = await fetch(`${url}${route}`, { headers: cookie === undefined ? {} : { cookie }, redirect: 'manual' });
  return { status: res.status, location: res.headers.get('location'), body: await res.text(), headers: res.headers };
}

/** The CSRF token of the session, as its pages carry it. */
async function csrfOf(cookie: string): Promise<string> {
  return /name="_csrf" value="([^"]+)"/.exec((await page('/ui', cookie)).body)?.[1] ?? '';
}

const PAGES: [route: string, approver: boolean][] = [
  ['/ui', true],
  ['/ui/approvals', true],
  ['/ui/executions', true],
  ['/ui/keys', false],
  ['/ui/tools', false],
  ['/ui/keys/key_00000000/policy', false],
  ['/ui/audit', false],
  ['/ui/threads', false],
  ['/ui/threads/00000000-0000-4000-8000-000000000000', false],
  ['/ui/usage', false],
];

const CHANGES = ['/ui/approvals/step-1', '/ui/keys', '/ui/keys/key_00000000/revoke', '/ui/playground'];

describe('the doors of /ui', () => {
  it('sends every page to the login without a session, and refuses every change', async () => {
    // Each remembers where it was going (issue 41): the login comes back to it.
    for (const [route] of PAGES) expect(await page(route), route).toMatchObject({ status: 303, location: route === '/ui' ? '/ui/login' : `/ui/login?next=${encodeURIComponent(route)}` });
    for (const route of CHANGES) expect((await fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': FORM }, body: '_csrf=x' })).status, route).toBe(401);
    expect((await page('/ui/events')).status).toBe(401);
  });

  it('logs in admin and approver keys only, into an HttpOnly SameSite=Strict cookie', async () => {
    const admin = await login(keys.admin);
    expect(admin.status).toBe(303);
    expect(admin.cookie).toMatch(/^kiwi_console=v1\.key_/);
    const client = await login(keys.client);
    expect(client.status).toBe(403);
    expect(client.cookie).toBeUndefined();
    expect(client.body).toMatch(/no console access/);
    expect((await login('kiwi_0_wrong')).status).toBe(401);
    expect((await login('x'.repeat(20_000))).status).toBe(401);
    const set = (await fetch(`${url}/ui/login`, { method: 'POST', headers: { 'content-type': FORM }, body: `key=${encodeURIComponent(keys.approver)}`, redirect: 'manual' })).headers.get('set-cookie') ?? '';
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).toMatch(/Path=\/ui/);
    expect(set).not.toMatch(/Secure/);
    // Behind a proxy that ends TLS, the cookie is sent over https only.
    const proxied = await fetch(`${url}/ui/login`, { method: 'POST', headers: { 'content-type': FORM, 'x-forwarded-proto': 'https' }, body: `key=${encodeURIComponent(keys.approver)}`, redirect: 'manual' });
    expect(proxied.headers.get('set-cookie')).toMatch(/; Secure/);
  });

  it('serves every page to an admin, and to an approver only its areas, with the security headers', async () => {
    const admin = (await login(keys.admin)).cookie as string;
    const approver = (await login(keys.approver)).cookie as string;
    for (const [route, approverMay] of PAGES) {
      // An id no key or thread has is the API's 404, shown as a page.
      const unknown = route.endsWith('/policy') || route.startsWith('/ui/threads/');
      const a = await page(route, admin);
      expect(a.status, route).toBe(unknown ? 404 : 200);
      expect(a.headers.get('content-security-policy'), route).toMatch(/default-src 'none'; script-src 'self'/);
      expect(a.headers.get('x-frame-options')).toBe('DENY');
      expect((await page(route, approver)).status, route).toBe(approverMay ? 200 : 403);
    }
    // No inline script or style anywhere: the CSP would block it, so none may be needed.
    for (const [route] of PAGES.filter(([r]) => !r.endsWith('/policy') && !r.startsWith('/ui/threads/'))) {
      const body = (await page(route, admin)).body;
      expect(body, route).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son[a-z]+=/i);
    }
  });

  it('refuses a forged, tampered, foreign or ended session', async () => {
    const admin = (await login(keys.admin)).cookie as string;
    const [name, value] = admin.split('=') as [string, string];
    const parts = value.split('.');
    const tampered = [
      `${name}=${[parts[0], parts[1], String(Date.now() + 10 ** 10), parts[3], parts[4]].join('.')}`,
      `${name}=${[...parts.slice(0, 4), 'A'.repeat(43)].join('.')}`,
      `${name}=${['v1', 'local', ...parts.slice(2)].join('.')}`,
      `${name}=${'v1.key_x.1.2.3'}`,
      `${name}=${'a'.repeat(600)}`,
    ];
    for (const cookie of tampered) expect(await page('/ui/keys', cookie), cookie.slice(0, 60)).toMatchObject({ status: 303, location: '/ui/login?next=%2Fui%2Fkeys' });
  });

  it('takes a change only with the session token, as a small url-encoded form', async () => {
    const admin = (await login(keys.admin)).cookie as string;
    const csrf = await csrfOf(admin);
    expect(csrf).not.toBe('');
    const post = (route: string, body: string, type = FORM) => fetch(`${url}${route}`, { method: 'POST', headers: { cookie: admin, 'content-type': type }, body, redirect: 'manual' });
    expect((await post('/ui/keys', 'client=mallory&role=admin')).status).toBe(403);
    expect((await post('/ui/keys', `client=mallory&role=admin&_csrf=${csrf}x`)).status).toBe(403);
    expect((await post('/ui/keys', JSON.stringify({ client: 'mallory', _csrf: csrf }), 'application/json')).status).toBe(400);
    expect((await post('/ui/keys', `client=mallory&_csrf=${csrf}&pad=${'x'.repeat(20_000)}`)).status).toBe(400);
    // Another session's token is not this one's.
    const other = await csrfOf((await login(keys.admin)).cookie as string);
    expect((await post('/ui/keys', `client=mallory&_csrf=${other}`)).status).toBe(403);
    const listed = (await (await fetch(`${url}/admin/v1/keys`, { headers: { authorization: `Bearer ${keys.admin}` } })).json()) as { keys: { client: string }[] };
    expect(listed.keys.some((k) => k.client === 'mallory')).toBe(false);
    // With it, the change is made; the API's refusal (a bad name) is shown, not a crash.
    const made = await post('/ui/keys', `client=carol&role=client&_csrf=${csrf}`);
    expect(made.status).toBe(201);
    expect(await made.text()).toMatch(/kiwi_[0-9a-f]+_/);
    const bad = await post('/ui/keys', `client=bad%20name&role=client&_csrf=${csrf}`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/client name .* is not valid/);
    // An approver's token does not open an admin's change.
    const approver = (await login(keys.approver)).cookie as string;
    const approverCsrf = await csrfOf(approver);
    expect((await fetch(`${url}/ui/keys`, { method: 'POST', headers: { cookie: approver, 'content-type': FORM }, body: `client=x&_csrf=${approverCsrf}`, redirect: 'manual' })).status).toBe(403);
  });

  it('refuses other origins and host names before the console runs', async () => {
    const admin = (await login(keys.admin)).cookie as string;
    const csrf = await csrfOf(admin);
    const foreign = await fetch(`${url}/ui/keys`, { method: 'POST', headers: { cookie: admin, 'content-type': FORM, origin: 'https://evil.example' }, body: `client=mallory&_csrf=${csrf}`, redirect: 'manual' });
    expect(foreign.status).toBe(403);
  });

  it("ends a session, and its live stream, when its key is revoked: a stolen cookie dies with the key", async () => {
    const file = path.join(served.root, KEY_FILE);
    const { key, record } = await createKey(file, 'temp-admin', { roles: ['admin'] });
    const cookie = (await login(key)).cookie as string;
    expect((await page('/ui/keys', cookie)).status).toBe(200);
    const controller = new AbortController();
    const stream = await fetch(`${url}/ui/events`, { headers: { cookie }, signal: controller.signal });
    expect(stream.status).toBe(200);
    const revoked = await fetch(`${url}/admin/v1/keys/${record.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${keys.admin}` } });
    expect(revoked.status).toBe(200);
    expect(await page('/ui/keys', cookie)).toMatchObject({ status: 303, location: '/ui/login?next=%2Fui%2Fkeys' });
    // The stream ends by itself at its next look.
    const text = await Promise.race([stream.text(), new Promise<string>((resolve) => setTimeout(() => resolve('still open'), 5000))]);
    controller.abort();
    expect(text).not.toBe('still open');
    expect(text).toContain('event: ready');
  });

  it('lists a recorded chat by its first user words (escaped, cut to 80 characters), model, tokens and cost', async () => {
    served.llm.reply('openai-plain');
    const words = `Why is <b>the build</b> red? ${'Tell me more about it. '.repeat(8)}`;
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${keys.client}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: words }] }) });
    expect(res.status).toBe(200);
    await res.text();
    const id = res.headers.get('x-kiwi-execution-id') as string;
    // The journal writes behind the chat: its end (and what it used) shows once written.
    const admin = (await login(keys.admin)).cookie as string;
    const rowOf = async (): Promise<string> => {
      const html = (await page('/ui/executions', admin)).body;
      const row = html.split('<tr>').find((r) => r.includes(`/ui/executions/${id}`)) ?? '';
      return row.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
    };
    await expect.poll(rowOf, { timeout: 10_000 }).toMatch(/completed/);
    const row = await rowOf();
    expect(row).toContain('alice “Why is &lt;b&gt;the build&lt;/b&gt; red? Tell me more about it. Tell me more about it. Tell…” gpt-4o-mini');
    // openai-plain counts 24 tokens in and 7 out, at $1000 per million each.
    expect(row).toContain('24 in · 7 out $0.0310');
  });

  it('answers /favicon.ico without a key or a session, so no page of it logs a 404 or a 401', async () => {
    const icon = await page('/favicon.ico');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
  });

  it('serves its two assets to anyone, and nothing else under /ui/assets', async () => {
    expect((await page('/ui/assets/console.js')).status).toBe(200);
    expect((await page('/ui/assets/console.css')).headers.get('content-type')).toMatch(/^text\/css/);
    for (const name of ['__proto__', 'constructor', 'toString', '..%2Fconsole-routes.tsx', 'x.js']) expect((await page(`/ui/assets/${name}`)).status, name).toBe(404);
  });

  it('logs out by clearing the cookie, and says on the login page that a copy of it lives on until it expires or its key is revoked', async () => {
    const admin = (await login(keys.admin)).cookie as string;
    const out = await fetch(`${url}/ui/logout`, { method: 'POST', headers: { cookie: admin, 'content-type': FORM }, body: '', redirect: 'manual' });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/kiwi_console=;/);
    // Stateless by design (issue 39, decided and documented): a copy taken before still opens the console.
    expect((await page('/ui/approvals', admin)).status).toBe(200);
    expect((await page('/ui/login')).body).toMatch(/a copy of it taken before keeps working until it expires or its key is revoked/);
  });
});
