import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AuthHeaders, ClientAuth } from '../../../src/clients/client-auth.js';
import { createRequestGuard, hostAllowed } from '../../../src/http/server/request-guard.js';

/** Two clients by key: "a" and "b". */
const auth: ClientAuth = {
  async authenticate(headers: AuthHeaders) {
    const key = headers.authorization?.replace(/^Bearer /, '') ?? headers.apiKey;
    if (key === 'runner') return { ok: true, caller: { client: 'ops', roles: ['runner'], tools: ['*'] } };
    return key === 'a' || key === 'b' ? { ok: true, caller: { client: key } } : { ok: false, status: 401, message: 'needs a key' };
  },
  changed() {},
  keyById: async () => undefined,
  mode: async () => ({ mode: 'keys', activeKeys: 2, clients: 2 }),
};

function app(maxConcurrentPerClient: number) {
  const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth, maxConcurrentPerClient });
  const gates: (() => void)[] = [];
  const hono = new Hono();
  hono.use('*', guard.middleware);
  // Holds each request's body open until the test releases it, like a long stream.
  hono.post('/v1/chat/completions', (c) => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: {}\n\n'));
        gates.push(() => controller.close());
      },
    });
    return c.body(body, 200, { 'content-type': 'text/event-stream' });
  });
  hono.all('/mcp', (c) => c.json({ ok: true }));
  return { hono, guard, gates };
}

const post = (hono: Hono, key: string, path = '/v1/chat/completions') => hono.request(path, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

describe('request guard', () => {
  it("caps each client's requests in flight (streams count until they end), answers 429 with Retry-After, and leaves other clients alone", async () => {
    const { hono, guard, gates } = app(2);
    const open = [await post(hono, 'a'), await post(hono, 'a')];
    expect(open.map((r) => r.status)).toEqual([200, 200]);
    const third = await post(hono, 'a');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(((await third.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: 'rate_limit_error', message: expect.stringMatching(/Client a already has 2 requests running.*max_concurrent_requests_per_client/) });
    expect((await post(hono, 'b')).status).toBe(200);
    expect(guard.running()).toEqual({ a: 2, b: 1 });
    // A stream that ends frees its slot.
    gates[0]?.();
    await open[0]?.text();
    expect((await post(hono, 'a')).status).toBe(200);
  });

  it('refuses with 503, saying why, when running requests cannot be counted (shared state away)', async () => {
    const slots = { acquire: () => Promise.reject(new Error('Redis (redis://cache:6379) did not answer a concurrency check: connection refused')), held: () => ({}) };
    const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth, slots });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.post('/v1/chat/completions', (c) => c.json({ ran: true }));
    const res = await post(hono, 'a');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('Redis (redis://cache:6379) did not answer a concurrency check: connection refused; requests are refused until it answers again');
  });

  it('ends a response only once its slot is free (shared slots are released over the network)', async () => {
    const order: string[] = [];
    let releases = 0;
    const slots = {
      acquire: async () => ({
        ok: true as const,
        release: async () => {
          releases += 1;
          await new Promise((resolve) => setTimeout(resolve, 20));
          order.push('released');
        },
      }),
      held: () => ({}),
    };
    const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth, slots });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.post('/v1/chat/completions', (c) => c.json({ ran: true }));
    hono.post('/v1/empty', (c) => c.body(null, 204));
    const res = await post(hono, 'a');
    expect(await res.json()).toEqual({ ran: true });
    order.push('body ended');
    const empty = await post(hono, 'a', '/v1/empty');
    order.push('empty answered');
    expect(empty.status).toBe(204);
    expect(order).toEqual(['released', 'body ended', 'released', 'empty answered']);
    expect(releases).toBe(2);
  });

  it('answers refusals on /mcp as JSON-RPC, and 401 with WWW-Authenticate', async () => {
    const { hono } = app(2);
    const res = await hono.request('/mcp', { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: 'needs a key' }, id: null });
  });
});

describe('the kernel API behind the guard', () => {
  it("refuses a request without a key in the kernel's own error shape, and leaves /v0/health and /v0/ready open", async () => {
    const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.all('*', (c) => c.json({ ok: true }));
    const refused = await hono.request('/v0/executions', { method: 'POST' });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'needs a key', code: 'UNAUTHORIZED' });
    expect((await hono.request('/v0/health')).status).toBe(200);
    expect((await hono.request('/v0/ready')).status).toBe(200);
    expect((await hono.request('/v0/executions', { headers: { authorization: 'Bearer a' } })).status).toBe(200);
  });

  it("lets the admin API decide by area who may use it, and refuses there in the kernel's error shape", async () => {
    const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: [], auth });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.all('*', (c) => c.json({ ok: true }));
    const refused = await hono.request('/admin/v1/approvals');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 'needs a key', code: 'UNAUTHORIZED' });
    // A key without the client role (an approver's, a runner's) reaches the admin routes, which check its roles.
    expect((await hono.request('/admin/v1/approvals', { headers: { authorization: 'Bearer runner' } })).status).toBe(200);
  });
});

describe('origins', () => {
  it('lets an origin listed for /mcp only call /mcp, and refuses it everywhere else', async () => {
    const guard = createRequestGuard({ allowedHosts: ['localhost'], allowedOrigins: ['https://app.example.com'], mcpOrigins: ['http://localhost:6274'] });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.all('*', (c) => c.json({ ok: true }));
    const from = (origin: string, path: string) => hono.request(path, { method: 'POST', headers: { origin } });
    expect((await from('http://localhost:6274', '/mcp')).status).toBe(200);
    const elsewhere = await from('http://localhost:6274', '/v1/chat/completions');
    expect(elsewhere.status).toBe(403);
    expect(((await elsewhere.json()) as { error: { message: string } }).error.message).toMatch(/allowed origins: https:\/\/app\.example\.com\./);
    expect((await from('https://app.example.com', '/mcp')).status).toBe(200);
    expect((await from('https://app.example.com', '/v1/chat/completions')).status).toBe(200);
    expect((await from('https://evil.example', '/mcp')).status).toBe(403);
  });

  it("serves a page of the gateway's own origin (the Host it was asked by), and only that one", async () => {
    const guard = createRequestGuard({ allowedHosts: ['localhost', 'gw.example.com'], allowedOrigins: [] });
    const hono = new Hono();
    hono.use('*', guard.middleware);
    hono.all('*', (c) => c.json({ ok: true }));
    const ask = (host: string, origin: string) => hono.request('http://x/v1/models', { headers: { host, origin } });
    expect((await ask('localhost:8787', 'http://localhost:8787')).status).toBe(200);
    expect((await ask('gw.example.com', 'https://gw.example.com')).status).toBe(200);
    expect((await ask('LOCALHOST:8787', 'http://localhost:8787')).status).toBe(200);
    // Either scheme at the very host and port asked (issue 39): behind a proxy that ends TLS the page is https.
    expect((await ask('localhost:8787', 'https://localhost:8787')).status).toBe(200);
    expect((await ask('localhost:8787', 'https://localhost:8443')).status).toBe(403);
    // Another port, another name, a rebinding page (its Host is the attacker's), an opaque or odd origin: refused.
    expect((await ask('localhost:8787', 'http://localhost:9999')).status).toBe(403);
    expect((await ask('localhost:8787', 'http://gw.example.com:8787')).status).toBe(403);
    expect((await ask('evil.example:8787', 'http://evil.example:8787')).status).toBe(403);
    expect((await ask('localhost:8787', 'null')).status).toBe(403);
    expect((await ask('localhost:8787', 'file://localhost:8787')).status).toBe(403);
    expect((await ask('localhost:8787', 'http://localhost:8787@evil.example')).status).toBe(403);
  });
});

describe('hostAllowed', () => {
  it('matches names on any port, name:port on that port only, IPv6 in brackets, and * for any', () => {
    expect(hostAllowed('localhost:8787', ['localhost'])).toBe(true);
    expect(hostAllowed('LOCALHOST', ['localhost'])).toBe(true);
    expect(hostAllowed('[::1]:8787', ['[::1]'])).toBe(true);
    expect(hostAllowed('gw.internal:8787', ['gw.internal:8787'])).toBe(true);
    expect(hostAllowed('gw.internal:9999', ['gw.internal:8787'])).toBe(false);
    expect(hostAllowed('localhost.evil.example', ['localhost'])).toBe(false);
    expect(hostAllowed('evil.example', ['localhost', '127.0.0.1'])).toBe(false);
    expect(hostAllowed('', ['localhost'])).toBe(false);
    expect(hostAllowed('anything:1', ['*'])).toBe(true);
  });

  it('serves chats and MCP to client keys only: a runner key is refused with the role it lacks (issue 22)', async () => {
    const { hono } = app(2);
    const chat = await post(hono, 'runner');
    expect(chat.status).toBe(403);
    expect(((await chat.json()) as { error: { message: string } }).error.message).toMatch(/client ops has the roles runner, and chats, MCP and tool calls need the client role/);
    const mcp = await post(hono, 'runner', '/mcp');
    expect(mcp.status).toBe(403);
    expect(await mcp.json()).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringMatching(/need the client role/) } });
    expect((await post(hono, 'a', '/mcp')).status).toBe(200);
  });
});
