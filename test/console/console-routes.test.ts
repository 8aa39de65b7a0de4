import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { LOCAL_CALLER, type ClientAuth } from '../../src/clients/client-auth.js';
import { mountConsole } from '../../src/console/console-routes.js';
import type { ExecutionRow } from '../../src/console/execution-pages.js';
import { createRequestGuard } from '../../src/http/server/request-guard.js';
import type { Caller } from '../../src/policy/caller.js';

/**
 * The console in process, behind the real request guard (issue 41): a deep link survives the
 * login and no `next` leads off the console; /favicon.ico answers anyone; durations read as
 * people read them; a gateway without keys shows no dead "Log out"; the executions list tells
 * chats apart. The admin API is a stand-in that answers each page's reads with fixed rows.
 */

const ADMIN_KEY = 'kiwi_test_admin';
const OPS: Caller = { client: 'ops', roles: ['admin'] };
const OPS_KEY = { id: 'key_0ps00000', hash: 'sha256:ops' };

function authFor(mode: 'open' | 'keys'): ClientAuth {
  return {
    async authenticate(headers) {
      if (mode === 'open') return { ok: true, caller: LOCAL_CALLER };
      return headers.authorization === `Bearer ${ADMIN_KEY}` ? { ok: true, caller: OPS, key: OPS_KEY } : { ok: false, status: 401, message: 'needs a key' };
    },
    changed() {},
    keyById: async (id) => (mode === 'keys' && id === OPS_KEY.id ? { caller: OPS, key: OPS_KEY } : undefined),
    mode: async () => ({ mode, activeKeys: mode === 'open' ? 0 : 1, clients: mode === 'open' ? 0 : 1 }),
  };
}

const at = (ms: number): string => new Date(Date.parse('2026-12-07T10:00:00Z') + ms).toISOString();
const row = (id: string, labels: Record<string, string>, extra: Partial<ExecutionRow> = {}): ExecutionRow => ({ id, status: 'completed', client: 'alice', agent_id: 'gateway', labels, created_at: at(0), updated_at: at(1000), ...extra });

const ROWS: ExecutionRow[] = [
  row('e-chat', { kind: 'chat', client: 'alice', model: 'gpt-4o-mini', message: 'Why is <b>the build</b> red & “flaky”?' }, { updated_at: at(120_198), usage: { models: { 'gpt-4o-mini': { input_tokens: 24, output_tokens: 7, spend_usd: 0.000031 } }, spend_usd: 0.000031 } }),
  row('e-local', { kind: 'chat', client: 'alice', model: 'llama3.1:8b', message: 'second chat' }, { updated_at: at(850), usage: { models: { 'llama3.1:8b': { input_tokens: 300, output_tokens: 40, spend_usd: 'unpriced' } }, spend_usd: 0, unpriced: ['llama3.1:8b'] } }),
  row('e-old', { kind: 'chat', client: 'alice' }, { status: 'running' }),
  row('e-mcp', { kind: 'mcp', client: 'alice', tool: 'execute' }),
  row('e-api', {}, { agent_id: 'support-bot', status: 'pending' }),
];

function consoleApp(mode: 'open' | 'keys'): Hono {
  const auth = authFor(mode);
  const app = new Hono();
  app.use('*', createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth }).middleware);
  mountConsole(app, {
    auth,
    sessionSecret: '',
    async admin(_caller, _method, path) {
      if (path.startsWith('/admin/v1/approvals')) return { status: 200, body: { approvals: [], more: false } };
      if (path.startsWith('/admin/v1/executions')) return { status: 200, body: { executions: ROWS, next_cursor: '' } };
      if (path.startsWith('/admin/v1/counters')) {
        const upstream_health = [{ name: 'demo', state: 'unknown' }, { name: 'local', state: 'down', since: 1, error: 'connection to 127.0.0.1:8080 was refused' }, { name: 'spare', state: 'up', since: 1 }];
        return { status: 200, body: { uptime_s: 7_260, prefetch: {}, resolution: {}, upstreams: ['demo', 'local', 'spare'], upstream_health } };
      }
      return { status: 404, body: { error: `no stand-in for ${path}` } };
    },
  });
  return app;
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const get = (app: Hono, route: string, cookie?: string) => app.request(`http://localhost${route}`, { headers: cookie === undefined ? {} : { cookie } });
const cookieOf = (res: Response): string | undefined => res.headers.get('set-cookie')?.split(';')[0];

async function logIn(app: Hono): Promise<string> {
  const res = await app.request('http://localhost/ui/login', { method: 'POST', headers: FORM, body: `key=${ADMIN_KEY}` });
  return cookieOf(res) as string;
}

/** The page's text without its markup, as a person reads it. */
const text = async (res: Response): Promise<string> => (await res.text()).replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

describe('the console in process', () => {
  it('keeps a deep link through the login: /ui/approvals → the login → /ui/approvals', async () => {
    const app = consoleApp('keys');
    const sent = await get(app, '/ui/approvals');
    expect(sent.status).toBe(303);
    expect(sent.headers.get('location')).toBe('/ui/login?next=%2Fui%2Fapprovals');
    // The overview needs no `next`; a query is kept.
    expect((await get(app, '/ui')).headers.get('location')).toBe('/ui/login');
    expect((await get(app, '/ui/executions?status=running')).headers.get('location')).toBe('/ui/login?next=%2Fui%2Fexecutions%3Fstatus%3Drunning');

    const login = await get(app, sent.headers.get('location') as string);
    expect(await login.text()).toContain('<input type="hidden" name="next" value="/ui/approvals"/>');
    // A wrong key keeps the target for the next try.
    const wrong = await app.request('http://localhost/ui/login', { method: 'POST', headers: FORM, body: 'key=nope&next=%2Fui%2Fapprovals' });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('name="next" value="/ui/approvals"');

    const done = await app.request('http://localhost/ui/login', { method: 'POST', headers: FORM, body: `key=${ADMIN_KEY}&next=%2Fui%2Fapprovals` });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/ui/approvals');
    expect((await get(app, '/ui/approvals', cookieOf(done))).status).toBe(200);
  });

  it('never sends a login off the console, whatever `next` says (no open redirect)', async () => {
    const app = consoleApp('keys');
    for (const next of ['//evil.example', '/\\evil.example', 'https://evil.example/ui', '%2F%2Fevil.example', '/%5Cevil.example', '/ui/%2e%2e/admin/v1/keys', '/ui@evil.example', 'javascript:alert(1)']) {
      const res = await app.request('http://localhost/ui/login', { method: 'POST', headers: FORM, body: `key=${ADMIN_KEY}&next=${encodeURIComponent(next)}` });
      expect(res.headers.get('location'), next).toBe('/ui');
      expect(await (await get(app, `/ui/login?next=${encodeURIComponent(next)}`)).text(), next).not.toContain('name="next"');
    }
  });

  it('in open mode (no keys) goes straight to the deep link, and shows no "Log out" that would log straight back in', async () => {
    const app = consoleApp('open');
    const sent = await get(app, '/ui/executions?status=running');
    const login = await get(app, sent.headers.get('location') as string);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/ui/executions?status=running');
    const page = await get(app, '/ui/executions?status=running', cookieOf(login));
    const html = await page.text();
    expect(html).toContain('no keys: the console is open to this machine');
    expect(html).not.toContain('action="/ui/logout"');
    expect(html).not.toContain('Log out');
    // With keys, the button is there.
    const keyed = consoleApp('keys');
    expect(await (await get(keyed, '/ui/executions', await logIn(keyed))).text()).toContain('<button type="submit">Log out</button>');
  });

  it('answers /favicon.ico to anyone, and every page links its icon inline', async () => {
    const app = consoleApp('keys');
    const icon = await get(app, '/favicon.ico');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg /);
    // Open to anyone, not to any host: the guard's Host check still holds (DNS rebinding).
    expect((await app.request('http://evil.example/favicon.ico')).status).toBe(403);
    // A wrong key is no worse than none here, and the route serves the icon alone.
    expect((await app.request('http://localhost/favicon.ico', { headers: { authorization: 'Bearer wrong' } })).status).toBe(200);
    expect((await app.request('http://localhost/favicon.ico', { method: 'POST', body: 'x' })).status).toBe(404);
    const cookie = await logIn(app);
    for (const route of ['/ui/login', '/ui', '/ui/executions', '/ui/approvals']) {
      expect(await (await get(app, route, route === '/ui/login' ? undefined : cookie)).text(), route).toMatch(/<link rel="icon" type="image\/svg\+xml" href="data:image\/svg\+xml,%3Csvg/);
    }
  });

  it('shows durations as people read them: a p99 of 120198 ms is 2 min 0 s', async () => {
    const app = consoleApp('keys');
    const overview = await text(await get(app, '/ui', await logIn(app)));
    expect(overview).toMatch(/2 min 0 s p99/);
    expect(overview).toMatch(/1\.0 s p50 of the last 3 finished/);
    expect(overview).toMatch(/2 h 1 min up/);
    expect(overview).not.toMatch(/\d{4,} ms/);
  });

  it("shows each upstream's state on the overview: one found down says so, and why on hover", async () => {
    const app = consoleApp('keys');
    const html = await (await get(app, '/ui', await logIn(app))).text();
    expect(html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')).toMatch(/3 upstreams: demo, local \(down\) , spare/);
    expect(html).toContain('<span class="down" title="connection to 127.0.0.1:8080 was refused">local (down)</span>');
  });

  it('tells chats apart in the executions list: the first user words (escaped), the model, tokens and cost', async () => {
    const app = consoleApp('keys');
    const res = await get(app, '/ui/executions', await logIn(app));
    const html = await res.text();
    expect(html).toContain('“Why is &lt;b&gt;the build&lt;/b&gt; red &amp; “flaky”?”');
    expect(html).not.toContain('<b>the build</b>');
    const rows = html.split('<tr>').slice(2).map((r) => r.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
    expect(rows[0]).toMatch(/completed alice “Why is &lt;b&gt;the build&lt;\/b&gt; red &amp; “flaky”\?” gpt-4o-mini 24 in · 7 out \$0\.000031 e-chat/);
    expect(rows[1]).toMatch(/“second chat” llama3\.1:8b 300 in · 40 out unpriced e-local/);
    // A chat recorded before the labels existed, an MCP call, an execution made through /v0.
    expect(rows[2]).toMatch(/running alice chat - - e-old/);
    expect(rows[3]).toMatch(/MCP tool execute/);
    expect(rows[4]).toMatch(/agent support-bot - - e-api/);
  });
});
