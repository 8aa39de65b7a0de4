import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listen, type Listener } from '../../src/http/server/listen.js';
import { createMcpRoute, type McpRoute } from '../../src/http/mcp/mcp-route.js';
import { createApprovalWaits, WAITING_META } from '../../src/mcp-server/approval-waits.js';
import { EXECUTION_ID_META } from '../../src/mcp-server/meta-common.js';
import type { MetaRecorder } from '../../src/mcp-server/meta-server.js';
import type { Project } from '../../src/project/open-project.js';
import type { Resolution, Resolver } from '../../src/resolver/types.js';
import { createMetaProject, openHashResolver, openMetaProject, type MetaProject } from '../fixtures/mcp-meta/meta-project.js';

/**
 * /mcp for clients of protocol 2026-07-28, with the real 2.x SDK client: no session, a menu when
 * an intent is ambiguous and an approval wait, both as `input_required` results, and the doors
 * (a forged or another client's requestState, a wrong protocol version, an oversized body).
 */

const MAX_BODY = 64 * 1024;
const MODERN = '2026-07-28';

let meta: MetaProject;
let project: Project;
let hashResolver: Awaited<ReturnType<typeof openHashResolver>>;
let server: Listener | undefined;
let base = '';
const routes: McpRoute[] = [];
let clients: Client[] = [];
/** What the fake recorder's calls wait for: the test lets them finish. */
const approvals = new Map<string, (text: string) => void>();
/** Every response's Mcp-Session-Id header, to show that none is ever given. */
const sessionHeaders: Array<string | null> = [];

/** A resolver that cannot tell an intent's tool until the caller chooses one (the menu's pick). */
function ambiguousFirst(real: Resolver): Resolver {
  return {
    async resolve(intent, options) {
      if (options?.tool !== undefined || !intent.includes('something')) return real.resolve(intent.replace('something', 'the text "picked"'), options);
      const unresolved: Resolution = {
        status: 'unresolved',
        reason: 'two tools fit about as well',
        missing: [],
        confidence: 0.4,
        candidates: [
          { tool: 'echo_text', score: 0.41 },
          { tool: 'read_doc', score: 0.4 },
        ],
        timings: { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 },
        notes: [],
      };
      return unresolved;
    },
  };
}

/** Records nothing; a call whose arguments say `wait` waits until the test answers it, as a call waiting for a person does. */
const waitingRecorder: MetaRecorder = async (request, run) => {
  const args = request.arguments as { parameters?: { text?: string } };
  const text = args.parameters?.text;
  if (text?.startsWith('wait') !== true) return run((call) => project.proxy.call(call), request.signal);
  const executionId = `exec-${text}`;
  const answered = new Promise<string>((resolve) => approvals.set(executionId, resolve));
  request.waiting({ executionId, stepId: `step-${text}`, message: `waiting for approval (test): answer ${text}` });
  const answer = await answered;
  return { content: [{ type: 'text', text: `granted: ${answer}` }], _meta: { [EXECUTION_ID_META]: executionId } };
};

beforeAll(async () => {
  meta = createMetaProject();
  project = await openMetaProject(meta);
  hashResolver = await openHashResolver(project);
  const app = new Hono();
  const mount = (at: string, route: McpRoute): void => {
    routes.push(route);
    app.all(at, (c) => route.handle(c));
  };
  const callerOf = (r: Request) => ({ client: r.headers.get('x-test-client') ?? 'local' });
  mount('/mcp', createMcpRoute({ project, resolver: ambiguousFirst(hashResolver.resolver) }, { maxBodyBytes: MAX_BODY, callerOf }));
  mount('/waits', createMcpRoute({ project, resolver: hashResolver.resolver, record: waitingRecorder, waits: createApprovalWaits({ roundMs: 100 }) }, { callerOf }));
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
  await hashResolver?.close();
  await project?.close();
  meta?.remove();
});

async function connect(path: string, options: { elicit?: (message: string) => Record<string, unknown> | undefined; client?: string; manual?: boolean } = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}${path}`), {
    fetch: async (url, init) => {
      const headers = new Headers(init?.headers);
      if (options.client) headers.set('x-test-client', options.client);
      const response = await fetch(url, { ...init, headers });
      sessionHeaders.push(response.headers.get('mcp-session-id'));
      return response;
    },
  });
  const client = new Client(
    { name: 'modern-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: MODERN } },
      capabilities: options.elicit ? { elicitation: { form: {} } } : {},
      ...(options.manual ? { inputRequired: { autoFulfill: false } } : {}),
    },
  );
  const elicit = options.elicit;
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (request) => {
      const content = elicit(request.params.message);
      return content === undefined ? { action: 'decline' } : { action: 'accept', content: content as Record<string, string> };
    });
  }
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** The call again with the state a round gave: the 2.x types leave `requestState` off tools/call's params, though the client sends it. */
const withState = (call: Record<string, unknown>, requestState: string) => ({ ...call, requestState }) as unknown as Parameters<Client['callTool']>[0];

const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** A raw 2026-07-28 request: its `_meta` names the protocol, the client and its capabilities. */
function modernCall(name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: {
      name,
      arguments: args,
      ...extra,
      _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} },
    },
  };
}
const modernHeaders = (name: string) => ({ 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name });

describe('/mcp for protocol 2026-07-28 (the real 2.x SDK client)', () => {
  it("lists the project's tools the URL asks for, each runs by its name, and the list may be kept a minute", async () => {
    const client = await connect('/mcp?tags=echo&max=5');
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['echo_text', 'execute', 'help', 'load', 'resolve', 'search']);
    expect((listed as { ttlMs?: number }).ttlMs).toBe(60_000);
    const r = (await client.callTool({ name: 'echo_text', arguments: { text: 'by its own name' } })) as CallToolResult;
    expect(r.isError, JSON.stringify(r)).toBe(false);
    expect(text(r)).toContain('by its own name');
    const meta = await connect('/mcp?tools=meta');
    expect((await meta.listTools()).tools.map((t) => t.name).sort()).toEqual(['execute', 'help', 'load', 'resolve', 'search']);
  });

  it('serves the meta-tools with no session: the client negotiates 2026-07-28 and no response names a session', async () => {
    sessionHeaders.length = 0;
    const client = await connect('/mcp');
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(expect.arrayContaining(['execute', 'help', 'load', 'resolve', 'search']));
    const r = (await client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'no session' } } })) as CallToolResult;
    expect(r.isError, JSON.stringify(r)).toBe(false);
    expect(text(r)).toContain('no session');
    expect(sessionHeaders.length).toBeGreaterThan(0);
    expect(sessionHeaders.every((h) => h === null)).toBe(true);
    expect(routes[0]?.stats().sessions).toBe(0);
  });

  it('answers server/discover with the revision it serves, and a client that negotiates (mode auto) lands on it', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modernCall('x', {}).params._meta } };
    const res = await post('/mcp', body, { 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ result: { supportedVersions: [MODERN], capabilities: { tools: {} } } });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
    const auto = new Client({ name: 'auto', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await auto.connect(transport);
    clients.push(auto);
    expect(auto.getNegotiatedProtocolVersion()).toBe(MODERN);
  });

  it('asks back with a menu (input_required) when an intent is ambiguous, and runs the tool the client picks', async () => {
    const asked: string[] = [];
    const client = await connect('/mcp', { elicit: (message) => (asked.push(message), { tool: 'echo_text' }) });
    const r = (await client.callTool({ name: 'resolve', arguments: { intent: 'echo something' } })) as CallToolResult;
    expect(asked).toEqual([expect.stringMatching(/could not tell which tool .*two tools fit about as well.*Which one did you mean/)]);
    expect(r.isError, JSON.stringify(r)).toBe(false);
    expect(r.structuredContent).toMatchObject({ status: 'resolved', call: { tool: 'echo_text', arguments: { text: 'picked' } } });
  });

  it('gives the menu as text to a client that cannot be asked, or that declines', async () => {
    const plain = await connect('/mcp');
    const r1 = (await plain.callTool({ name: 'resolve', arguments: { intent: 'echo something' } })) as CallToolResult;
    expect(r1.structuredContent).toMatchObject({ status: 'unresolved', candidates: [{ tool: 'echo_text' }, { tool: 'read_doc' }] });
    const declining = await connect('/mcp', { elicit: () => undefined });
    const r2 = (await declining.callTool({ name: 'resolve', arguments: { intent: 'echo something' } })) as CallToolResult;
    expect(r2.structuredContent).toMatchObject({ status: 'unresolved' });
  });

  it('hands an approval wait back as input_required with a requestState, and answers the call once it ends', async () => {
    const client = await connect('/waits', { manual: true });
    const call = { name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'wait-1' } } };
    const first = (await client.callTool(call, { allowInputRequired: true })) as unknown as { resultType: string; requestState: string; _meta: Record<string, unknown> };
    expect(first).toMatchObject({ resultType: 'input_required', requestState: expect.stringMatching(/^kiwi-wait\./), _meta: { [WAITING_META]: 'waiting for approval (test): answer wait-1', [EXECUTION_ID_META]: 'exec-wait-1' } });
    // Not answered yet: the round waits, then hands the same wait back.
    const second = (await client.callTool(withState(call, first.requestState), { allowInputRequired: true })) as unknown as { resultType: string };
    expect(second.resultType).toBe('input_required');
    approvals.get('exec-wait-1')?.('yes');
    const done = (await client.callTool(withState(call, first.requestState), { allowInputRequired: true })) as CallToolResult;
    expect(text(done)).toBe('granted: yes');
    // Collected: the state opens nothing any more.
    const again = (await client.callTool(withState(call, first.requestState), { allowInputRequired: true })) as CallToolResult;
    expect(again).toMatchObject({ isError: true, structuredContent: { error: { code: 'NOT_FOUND' } } });
  });

  it("the SDK client's own driver follows the wait round by round until the call ends", async () => {
    const client = await connect('/waits');
    const running = client.callTool({ name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'wait-2' } } });
    await expect.poll(() => approvals.has('exec-wait-2')).toBe(true);
    approvals.get('exec-wait-2')?.('granted through the driver');
    expect(text((await running) as CallToolResult)).toBe('granted: granted through the driver');
  });
});

describe('the doors of /mcp for protocol 2026-07-28', () => {
  it("answers a forged requestState, and another client's, like an unknown one", async () => {
    const owner = await connect('/waits', { manual: true, client: 'alice' });
    const call = { name: 'execute', arguments: { item_type: 'tool', action: 'run', item_id: 'echo_text', parameters: { text: 'wait-3' } } };
    const first = (await owner.callTool(call, { allowInputRequired: true })) as unknown as { requestState: string };
    const thief = await connect('/waits', { manual: true, client: 'mallory' });
    const stolen = (await thief.callTool(withState(call, first.requestState), { allowInputRequired: true })) as CallToolResult;
    expect(stolen).toMatchObject({ isError: true, structuredContent: { error: { code: 'NOT_FOUND', message: expect.stringMatching(/no execute call of yours waits/) } } });
    for (const forged of ['kiwi-wait.bm90IGpzb24', `kiwi-wait.${Buffer.from(JSON.stringify({ e: 'exec-wait-3', t: 'execute', m: '', x: 1 })).toString('base64url')}`, 'x'.repeat(5000)]) {
      const r = (await thief.callTool(withState(call, forged), { allowInputRequired: true })) as CallToolResult;
      expect(r).toMatchObject({ isError: true, structuredContent: { error: { code: 'NOT_FOUND' } } });
    }
    // A state for execute is no state for resolve.
    const crossed = (await owner.callTool(withState({ name: 'resolve', arguments: { intent: 'echo hi' } }, first.requestState), { allowInputRequired: true })) as CallToolResult;
    expect(crossed).toMatchObject({ isError: true, structuredContent: { error: { code: 'NOT_FOUND' } } });
    approvals.get('exec-wait-3')?.('late');
    const mine = (await owner.callTool(withState(call, first.requestState), { allowInputRequired: true })) as CallToolResult;
    expect(text(mine)).toBe('granted: late');
  });

  it('refuses a protocol version it does not speak, saying which it does', async () => {
    const body = modernCall('search', { item_type: 'tool', query: 'echo' });
    (body.params._meta as Record<string, unknown>)['io.modelcontextprotocol/protocolVersion'] = '2099-01-01';
    const res = await post('/mcp', body, { ...modernHeaders('search'), 'mcp-protocol-version': '2099-01-01' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: -32022, message: 'Unsupported protocol version: 2099-01-01', data: { supported: [MODERN] } } });
  });

  it('refuses a header that contradicts the request it carries', async () => {
    const res = await post('/mcp', modernCall('search', { item_type: 'tool', query: 'echo' }), { ...modernHeaders('search'), 'mcp-protocol-version': '2025-06-18' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: -32020, message: expect.stringMatching(/headers and body disagree: .*names protocol version 2026-07-28 but the MCP-Protocol-Version header names 2025-06-18/) } });
  });

  it('caps the body before anything reads it, in the new protocol as in the old', async () => {
    const big = modernCall('search', { item_type: 'tool', query: 'x'.repeat(MAX_BODY) });
    const res = await post('/mcp', big, modernHeaders('search'));
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/larger than|limit/i);
  });

  it('answers a request with an unknown session id with 404, whatever protocol its body claims', async () => {
    const res = await post('/mcp', modernCall('search', { item_type: 'tool', query: 'echo' }), { ...modernHeaders('search'), 'mcp-session-id': '00000000-0000-4000-8000-000000000000' });
    expect(res.status).toBe(404);
  });
});
