import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { createMcpRoute, type McpRoute } from '../../src/http/mcp/mcp-route.js';
import { originAllowed } from '../../src/http/server/request-guard.js';
import type { Project } from '../../src/project/open-project.js';
import { failure } from '../helpers/expect-failure.js';
import { createMetaProject, openHashResolver, openMetaProject, type MetaProject } from '../fixtures/mcp-meta/meta-project.js';

const MAX_BODY = 64 * 1024;
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } },
};
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

let meta: MetaProject;
let project: Project;
let resolver: Awaited<ReturnType<typeof openHashResolver>>;
let server: Listener | undefined;
let base = '';
/** Routes the test app serves; each test that makes one closes it. */
const routes: McpRoute[] = [];
let main: McpRoute;
let clients: Client[] = [];

function mount(app: Hono, at: string, route: McpRoute): void {
  routes.push(route);
  app.all(at, (c) => route.handle(c));
}

beforeAll(async () => {
  meta = createMetaProject();
  project = await openMetaProject(meta);
  resolver = await openHashResolver(project);
  const deps = { project, resolver: resolver.resolver };
  const app = new Hono();
  main = createMcpRoute(deps, { maxBodyBytes: MAX_BODY });
  mount(app, '/mcp', main);
  mount(app, '/one', createMcpRoute(deps, { maxSessions: 1 }));
  mount(app, '/idle', createMcpRoute(deps, { idleTimeoutMs: 50 }));
  mount(app, '/closing', createMcpRoute(deps));
  mount(app, '/site', createMcpRoute(deps, { allowedOrigins: ['https://app.example.com'] }));
  mount(app, '/mine', createMcpRoute(deps, { maxSessionsPerClient: 1, callerOf: (r) => ({ client: r.headers.get('x-test-client') ?? 'local' }) }));
  mount(app, '/shared', createMcpRoute(deps, { maxSessions: 4, maxSessionsPerClient: 2, callerOf: (r) => ({ client: r.headers.get('x-test-client') ?? 'local' }) }));
  server = await listen(app.fetch, { host: '127.0.0.1', port: 0 });
  base = server.url;
});

afterEach(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  clients = [];
});

afterAll(async () => {
  await Promise.allSettled(routes.map((r) => r.close()));
  await server?.close(0);
  await resolver?.close();
  await project?.close();
  meta?.remove();
});

/**
 * A connected SDK client, once its session is in use: the SDK opens its GET stream after
 * connect() has returned, and until that stream is open the session counts as idle (the first
 * one the cap may close).
 */
async function connect(path = '/mcp'): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  let streamOpen!: () => void;
  const opened = new Promise<void>((resolve) => (streamOpen = resolve));
  const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), {
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      if (init?.method === 'GET') streamOpen();
      return response;
    },
  });
  const client = new Client({ name: 'http-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  await opened;
  return { client, transport };
}

async function initialize(path: string, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { ...HEADERS, ...headers }, body: JSON.stringify(INITIALIZE) });
  await response.text();
  return response;
}

async function rpcError(response: Response): Promise<{ code: number; message: string }> {
  expect(response.headers.get('content-type')).toMatch(/application\/json/);
  const body = (await response.json()) as { error: { code: number; message: string } };
  return body.error;
}

describe('/mcp over Streamable HTTP', () => {
  it("lists a session the project's tools its URL asks for, and refuses a query it cannot read, saying what to write", async () => {
    const { client } = await connect('/mcp?tags=files');
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['execute', 'help', 'load', 'read_doc', 'resolve', 'search']);
    const bad = await fetch(`${base}/mcp?max=1000`, { method: 'POST', headers: HEADERS, body: JSON.stringify(INITIALIZE) });
    expect(bad.status).toBe(400);
    expect((await rpcError(bad)).message).toMatch(/^max must be a whole number from 1 to 500 .*\(the \/mcp URL's query\)$/);
  });

  it('serves the meta-tools to the SDK client: list tools, resolve and run', async () => {
    const { client, transport } = await connect();
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(expect.arrayContaining(['execute', 'help', 'load', 'resolve', 'search']));
    const r = (await client.callTool({ name: 'resolve', arguments: { intent: 'echo the text "over http"' } })) as CallToolResult;
    expect(r.isError, JSON.stringify(r)).toBe(false);
    expect(r.structuredContent).toMatchObject({ status: 'resolved', call: { tool: 'echo_text', arguments: { text: 'over http' } } });
    expect(r.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/\n<<<DATA (\w+)\nover http\nDATA \1>>>$/) });
  });

  it('audits calls of an HTTP session under a session of its own', async () => {
    const { client, transport } = await connect();
    await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'wipe_disk' } });
    await project.audit.flush();
    const { readAuditTail } = await import('../../src/audit/audit-reader.js');
    const records = await readAuditTail({ dir: project.auditDir, limit: 100 });
    expect(records.find((r) => r.tool === 'wipe_disk')).toMatchObject({ session: `mcp-${transport.sessionId}`, source: 'mcp', decision: 'deny' });
  });

  it('keeps sessions apart, and ends one on DELETE', async () => {
    const a = await connect();
    const b = await connect();
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    const before = main.stats().sessions;
    await a.transport.terminateSession();
    expect(main.stats().sessions).toBe(before - 1);
    const after = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': a.transport.sessionId ?? '', 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
    expect(await b.client.listTools()).toMatchObject({ tools: expect.any(Array) });
  });

  it('refuses a browser Origin that is not allowed (403), and accepts local ones and none', async () => {
    const evil = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, origin: 'http://evil.example' }, body: JSON.stringify(INITIALIZE) });
    expect(evil.status).toBe(403);
    expect((await rpcError(evil)).message).toMatch(/Origin "http:\/\/evil.example" may not call this gateway \(DNS-rebinding protection\)/);
    const rebound = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', origin: 'http://127.0.0.1.evil.example:8080' } });
    expect(rebound.status).toBe(403);
    await rebound.text();
    expect((await initialize('/mcp', { origin: 'http://localhost:5173' })).status).toBe(200);
    expect((await initialize('/mcp', { origin: 'http://127.0.0.1:3000' })).status).toBe(200);
    expect((await initialize('/mcp')).status).toBe(200);
    expect((await initialize('/site', { origin: 'https://app.example.com' })).status).toBe(200);
    const local = await fetch(`${base}/site`, { method: 'POST', headers: { ...HEADERS, origin: 'http://localhost:5173' }, body: JSON.stringify(INITIALIZE) });
    expect(local.status).toBe(403);
    await local.text();
    // A page of the gateway's own origin is no other site, listed or not.
    expect((await initialize('/site', { origin: base })).status).toBe(200);
  });

  it('refuses a body over the cap (413), declared or streamed', async () => {
    const big = JSON.stringify({ ...INITIALIZE, params: { ...INITIALIZE.params, padding: 'x'.repeat(MAX_BODY) } });
    const declared = await fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: big });
    expect(declared.status).toBe(413);
    expect((await rpcError(declared)).message).toMatch(/larger than the gateway's limit of 65536 bytes/);
    const bytes = new TextEncoder().encode(big);
    const streamed = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: HEADERS,
      duplex: 'half',
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.slice(i, i + 8192));
          controller.close();
        },
      }),
    } as RequestInit);
    expect(streamed.status).toBe(413);
    await streamed.text();
  });

  it('answers an unknown session with 404, and a request without one with 400', async () => {
    const unknown = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': 'no-such-session' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(unknown.status).toBe(404);
    expect(await rpcError(unknown)).toMatchObject({ code: -32001, message: expect.stringMatching(/Session not found.*initialize request/) });
    const get = await fetch(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'no-such-session' } });
    expect(get.status).toBe(404);
    await get.text();
    const missing = await fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
    expect(missing.status).toBe(400);
    expect((await rpcError(missing)).message).toMatch(/Mcp-Session-Id header is missing/);
  });

  it('answers malformed requests with clear errors', async () => {
    const notJson = await fetch(`${base}/mcp`, { method: 'POST', headers: HEADERS, body: '{"jsonrpc": ' });
    expect(notJson.status).toBe(400);
    expect(await rpcError(notJson)).toMatchObject({ code: -32700, message: expect.stringMatching(/not valid JSON/) });
    const wrongType = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, 'content-type': 'text/plain' }, body: JSON.stringify(INITIALIZE) });
    expect(wrongType.status).toBe(415);
    await wrongType.text();
    const put = await fetch(`${base}/mcp`, { method: 'PUT', headers: HEADERS, body: '{}' });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
    await put.text();
    const sessions = main.stats().sessions;
    const badAccept = await initialize('/mcp', { accept: 'application/json' });
    expect(badAccept.status).toBe(406);
    // A refused initialize leaves no session behind.
    expect(main.stats().sessions).toBe(sessions);
  });

  it('caps the number of sessions (503 past the cap, room again after one ends)', async () => {
    const first = await connect('/one');
    const refused = await fetch(`${base}/one`, { method: 'POST', headers: HEADERS, body: JSON.stringify(INITIALIZE) });
    expect(refused.status).toBe(503);
    expect((await rpcError(refused)).message).toMatch(/1 MCP sessions are open and in use, the most this gateway allows/);
    await first.transport.terminateSession();
    expect((await initialize('/one')).status).toBe(200);
  });

  it('caps the sessions one client holds (429), leaving room for other clients', async () => {
    expect((await initialize('/mine', { 'x-test-client': 'a' })).status).toBe(200);
    const refused = await fetch(`${base}/mine`, { method: 'POST', headers: { ...HEADERS, 'x-test-client': 'a' }, body: JSON.stringify(INITIALIZE) });
    expect(refused.status).toBe(429);
    expect((await rpcError(refused)).message).toMatch(/Client a already holds 1 MCP sessions, the most one client may/);
    expect((await initialize('/mine', { 'x-test-client': 'b' })).status).toBe(200);
  });

  it('never lets clients that left sessions idle lock others out: the longest idle of the biggest holder makes room (issue 22)', async () => {
    const open = async (client: string) => (await initialize('/shared', { 'x-test-client': client })).headers.get('mcp-session-id') ?? '';
    const a1 = await open('a');
    const a2 = await open('a');
    const b1 = await open('b');
    const b2 = await open('b');
    // All four are open and idle: a newcomer still gets in, and a's oldest went to make room.
    expect((await initialize('/shared', { 'x-test-client': 'c' })).status).toBe(200);
    const status = async (client: string, id: string) => {
      const res = await fetch(`${base}/shared`, { method: 'POST', headers: { ...HEADERS, 'x-test-client': client, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
      await res.text();
      return res.status;
    };
    expect(await status('a', a1)).toBe(404);
    expect([await status('a', a2), await status('b', b1), await status('b', b2)]).toEqual([200, 200, 200]);
  });

  it('expires idle sessions', async () => {
    const response = await initialize('/idle');
    const id = response.headers.get('mcp-session-id');
    expect(id).toBeTruthy();
    const route = routes[2] as McpRoute;
    const deadline = Date.now() + 10_000;
    while (route.stats().sessions > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(route.stats().sessions).toBe(0);
    const later = await fetch(`${base}/idle`, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': id ?? '' } });
    expect(later.status).toBe(404);
    await later.text();
  });

  it('close() ends every session and refuses new ones', async () => {
    const { client } = await connect('/closing');
    const route = routes[3] as McpRoute;
    expect(route.stats().sessions).toBe(1);
    await route.close();
    expect(route.stats().sessions).toBe(0);
    const after = await fetch(`${base}/closing`, { method: 'POST', headers: HEADERS, body: JSON.stringify(INITIALIZE) });
    expect(after.status).toBe(503);
    await after.text();
    await expect(client.listTools()).rejects.toThrow();
  });
});

describe('originAllowed', () => {
  it('matches host patterns on any port, exact origins exactly, and never "null"', () => {
    const local = ['http://127.0.0.1:*', 'http://localhost:*'];
    expect(originAllowed('http://localhost', local)).toBe(true);
    expect(originAllowed('http://LOCALHOST:8080', local)).toBe(true);
    expect(originAllowed('https://localhost:8080', local)).toBe(false);
    expect(originAllowed('http://localhost.evil.example', local)).toBe(false);
    expect(originAllowed('null', local)).toBe(false);
    expect(originAllowed('not a url', local)).toBe(false);
    expect(originAllowed('https://app.example.com', ['https://app.example.com/'])).toBe(true);
    expect(originAllowed('https://app.example.com:444', ['https://app.example.com'])).toBe(false);
  });

  it('rejects bad route options with a clear error', async () => {
    const error = await failure(Promise.resolve().then(() => createMcpRoute({ project, resolver: resolver.resolver }, { maxSessions: 0 })), 'INVALID_INPUT');
    expect(error.message).toMatch(/maxSessions must be a positive whole number, got 0/);
  });
});
