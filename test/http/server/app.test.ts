import { describe, expect, it } from 'vitest';
import { createGatewayApp, type GatewayAppDeps } from '../../../src/http/server/app.js';
import { executeScript, scriptedLoop } from '../../fixtures/http-edges/scripted-loop.js';
import { failure } from '../../helpers/expect-failure.js';

/** The app around the chat edges: routes, health, models, request ids, CORS, the MCP mount. The RunLoop is a script (the loop is tested elsewhere). */

function app(extra: Partial<GatewayAppDeps> = {}) {
  return createGatewayApp({
    runLoop: scriptedLoop(executeScript).runLoop,
    models: () => ({
      models: [
        { id: 'gpt-4o-mini', ownedBy: 'openai' },
        { id: 'kiwi-demo', ownedBy: 'kiwi', demo: true },
      ],
    }),
    health: () => ({ upstreams: 2, tools: 14 }),
    ...extra,
  });
}

describe('routes', () => {
  it('GET /healthz is ok with the extra fields', async () => {
    const res = await app().request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', upstreams: 2, tools: 14 });
  });

  it('GET /metrics serves the counters when given, and is not a route otherwise', async () => {
    const res = await app({ metrics: () => ({ prefetch: { hits: 3 } }) }).request('/metrics');
    expect(await res.json()).toEqual({ prefetch: { hits: 3 } });
    expect((await app().request('/metrics')).status).toBe(404);
  });

  it('GET /v1/models is an OpenAI list, or an Anthropic one when the client sends anthropic-version', async () => {
    const openai = await (await app().request('/v1/models')).json();
    expect(openai).toEqual({
      object: 'list',
      data: [
        { id: 'gpt-4o-mini', object: 'model', created: 0, owned_by: 'openai' },
        { id: 'kiwi-demo', object: 'model', created: 0, owned_by: 'kiwi', demo: true },
      ],
    });
    const anthropic = await (await app().request('/v1/models', { headers: { 'anthropic-version': '2023-06-01' } })).json();
    expect(anthropic).toMatchObject({ has_more: false, first_id: 'gpt-4o-mini', last_id: 'kiwi-demo' });
  });

  it('an unknown route is a 404 naming the endpoints that exist', async () => {
    const res = await app().request('/v1/completions', { method: 'POST' });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('not_found_error');
    expect(body.error.message).toBe('There is no POST /v1/completions on this gateway; it serves POST /v1/chat/completions, POST /v1/messages, POST /v1/responses, GET /v1/models, GET /healthz');
  });

  it('a known route with the wrong method is a 405 with Allow', async () => {
    const res = await app().request('/v1/chat/completions');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('GET is not allowed on /v1/chat/completions; use POST');
  });

  it('a failing health() is a 500 that shows no internals', async () => {
    const seen: unknown[] = [];
    const res = await app({
      health: () => {
        throw new Error('db password is hunter2');
      },
      onError: (e) => seen.push(e),
    }).request('/healthz');
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain('hunter2');
    expect(seen).toHaveLength(1);
  });
});

describe('headers', () => {
  const chat = (headers: Record<string, string> = {}) =>
    app().request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }) });

  it('x-request-id is echoed when it is a plain token, and made otherwise', async () => {
    expect((await chat({ 'x-request-id': 'abc-123.x:y' })).headers.get('x-request-id')).toBe('abc-123.x:y');
    const made = (await chat()).headers.get('x-request-id');
    expect(made).toMatch(/^req_[0-9a-f]{32}$/);
    const replaced = (await chat({ 'x-request-id': 'no spaces <script>' })).headers.get('x-request-id');
    expect(replaced).toMatch(/^req_/);
    expect((await app().request('/nowhere')).headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('refuses a browser origin that is not listed, with no CORS headers, and answers no preflight as CORS', async () => {
    const res = await chat({ origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await app().request('/v1/chat/completions', { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('the MCP mount', () => {
  it('routes every method on /mcp to the handler, and lists it', async () => {
    const methods: string[] = [];
    const a = app({
      mcp: async (c) => {
        methods.push(c.req.method);
        return Response.json({ jsonrpc: '2.0', id: 1, result: {} });
      },
    });
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await a.request('/mcp', { method });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    }
    expect(methods).toEqual(['GET', 'POST', 'DELETE']);
    expect(((await (await a.request('/x')).json()) as { error: { message: string } }).error.message).toContain('GET, POST, DELETE /mcp');
  });

  it('is a 404 when no handler is given', async () => {
    expect((await app().request('/mcp', { method: 'POST' })).status).toBe(404);
  });
});

describe('options', () => {
  it('refuses limits that are not positive integers', async () => {
    await failure(Promise.resolve().then(() => app({ limits: { maxBodyBytes: 0 } })), 'INVALID_INPUT');
    await failure(Promise.resolve().then(() => app({ limits: { keepAliveMs: 1.5 } })), 'INVALID_INPUT');
  });
});
