import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/app/run-cli.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { redisAvailable } from '../helpers/redis-server.js';
import { addShipRelease, chatThatWaits } from '../helpers/waiting-chat.js';
import { postgresDatabase, redisForTest } from '../helpers/run-resources.js';

/**
 * Two gateways on one Redis (REDIS_URL) and one Postgres (DATABASE_URL), each on its own copy of
 * one project, as two replicas run: a client's rate limit, its cap on running requests, its
 * repeated calls and its budget are counted across both, where each gateway alone used to keep
 * its own (3 calls through one, a 4th through the other still ran).
 */
describe.skipIf(!redisAvailable() || !postgresAvailable())('replicas share limits and budgets through Redis and Postgres', () => {
  let redis: Awaited<ReturnType<typeof redisForTest>>;
  let postgres: PostgresServer;
  let replicas: DemoGateway[] = [];

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([redisForTest(), postgresDatabase()]);
    const limited = (root: string): void => {
      const policy = path.join(root, '.ai', 'config', 'policy.yaml');
      writeFileSync(policy, readFileSync(policy, 'utf8').replace('per_client: { max: 600, per_ms: 60000 }', 'per_client: { max: 3, per_ms: 3600000 }'));
      // A tool that waits for a person, for the approvals and cancels across replicas.
      addShipRelease(root);
    };
    const config = ['limits: { max_concurrent_requests_per_client: 2 }', 'prices:', '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }', 'budgets:', '  clients:', '    local: { tokens: 1000 }'].join('\n');
    const open = (): Promise<DemoGateway> => serveDemoGateway({ prepare: limited, config, extraEnv: { REDIS_URL: redis.url, KIWI_REDIS_PREFIX: redis.prefix, DATABASE_URL: postgres.url } });
    replicas = await Promise.all([open(), open()]);
  });
  afterAll(async () => {
    await Promise.allSettled(replicas.map((r) => r.close()));
    await Promise.allSettled([redis?.stop(), postgres?.stop()]);
  });

  it('a client limited to 3 calls gets 3, wherever it sends them', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const call = (replica: DemoGateway) => replica.gateway.project.proxy.call({ target: { tool: 'word_count', args: { path: 'README.md' } }, caller: { session: 'limits', client: 'alice', source: 'gateway' } });
    for (const replica of [a, b, a]) expect((await call(replica)).status).toBe('ok');
    const fourth = await call(b);
    expect(fourth).toMatchObject({ status: 'denied', reason: expect.stringContaining('rate limit for client `alice` (3 per 3600000 ms) is used up') });
    // Another client has its own limit.
    expect((await b.gateway.project.proxy.call({ target: { tool: 'word_count', args: { path: 'README.md' } }, caller: { session: 'limits', client: 'bob', source: 'gateway' } })).status).toBe('ok');
  });

  it('a call repeated across replicas is flagged as a loop', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    // A tool without path arguments: a path is compared once resolved, and each copy has its own root.
    const call = (replica: DemoGateway) => replica.gateway.project.proxy.call({ target: { tool: 'git_status', args: {} }, caller: { session: 'loops', client: 'carol', source: 'gateway' } });
    expect((await call(a)).stuck).toBe(false);
    expect((await call(b)).stuck).toBe(false);
    expect((await call(a)).stuck).toBe(true);
  });

  it('a client allowed two running requests cannot run a third through the other replica', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    // An agent's event stream counts as a running request until it ends.
    const streams = [new AbortController(), new AbortController()];
    for (const [i, stream] of streams.entries()) expect((await fetch(`${a.server.url}/v0/agents/stream?agent_id=limits&consumer_id=c${i}`, { signal: stream.signal })).status).toBe(200);
    const refused = await fetch(`${b.server.url}/v1/models`);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { message: expect.stringContaining('Client local already has 2 requests running') } });
    streams[0]?.abort();
    await expect.poll(async () => (await fetch(`${b.server.url}/v1/models`)).status).toBe(200);
    streams[1]?.abort();
  });

  it('an MCP session opened on one replica serves requests sent to the other at once', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(`${a.server.url}/mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) });
    const id = init.headers.get('mcp-session-id') ?? '';
    await init.text();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const inSession = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
    await (await fetch(`${a.server.url}/mcp`, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    // Two at once: this pair of replicas lets a client run two requests.
    const answers = await Promise.all([2, 3].map((n) => fetch(`${b.server.url}/mcp`, { method: 'POST', headers: inSession, body: JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/list' }) })));
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    for (const r of answers) expect(await r.text()).toContain('"name":"execute"');
    // An id this gateway could not have made is not even looked up.
    const forged = await fetch(`${b.server.url}/mcp`, { method: 'POST', headers: { ...inSession, 'mcp-session-id': 'x'.repeat(4000) }, body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/list' }) });
    expect(forged.status).toBe(404);
  });

  // A waiting chat looks for itself only every 5 s when Redis carries every replica's events: one
  // released well before that was told through Redis.
  it('an approval waiting on one replica, granted through the other, releases the chat at once', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const chat = await chatThatWaits(a.server.url, a.llm, 'v1');
    const granted = Date.now();
    const signal = await fetch(`${b.server.url}/v0/executions/${chat.executionId}/signal`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ signal_type: 'step.approve', payload: { step_id: chat.stepId, approved: true } }) });
    expect(signal.status).toBe(200);
    expect(await chat.rest).toMatch(/shipped v1[\s\S]*Done\./);
    expect(Date.now() - granted).toBeLessThan(4000);
  }, 30_000);

  it('a cancel through one replica stops a chat running on the other at once', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const chat = await chatThatWaits(a.server.url, a.llm, 'v2');
    const cancelledAt = Date.now();
    const cancel = await fetch(`${b.server.url}/v0/executions/${chat.executionId}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await chat.rest).toMatch(/was cancelled/);
    expect(Date.now() - cancelledAt).toBeLessThan(4000);
  }, 30_000);

  // Last: it spends client local's budget, which the chats above also drew on.
  it('a token budget holds across replicas: what one charged, the other counts', async () => {
    // Each answer reports 10 input and 5 output tokens: 15 a request, against a budget of 1000.
    for (const r of replicas) r.llm.reply(openAiStream(['ok']));
    const chat = (replica: DemoGateway) => fetch(`${replica.server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) });
    const served = [0, 0];
    let refusal: string | undefined;
    for (let i = 0; i < 200 && refusal === undefined; i++) {
      const replica = replicas[i % 2] as DemoGateway;
      const res = await chat(replica);
      if (res.status === 429) refusal = ((await res.json()) as { error: { message: string } }).error.message;
      else {
        expect(res.status).toBe(200);
        await res.text();
        await replica.gateway.budgets?.settled();
        served[i % 2]! += 1;
      }
    }
    // The cancelled chat above was charged an estimate for its cut stream; the message says how much.
    expect(refusal).toMatch(/^Client "local" is over its token budget: (\d+) tokens (\(\d+ of them estimated\) )?of 1000 tokens/);
    expect(Number(/: (\d+) tokens/.exec(refusal ?? '')?.[1])).toBeGreaterThanOrEqual(1000);
    // Each replica served about half: neither alone charged the 1000 tokens that stopped both.
    for (const n of served) expect(n * 15).toBeLessThan(1000);
  }, 60_000);

  // Last of all: once a key exists, every request needs one.
  it('a key made with `kiwi keys create` on the shared database works on every replica at once', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const out: string[] = [];
    const code = await runCli(['keys', 'create', 'ops', '--project', a.root], { env: { PATH: process.env['PATH'], DATABASE_URL: postgres.url }, cwd: a.root, io: { out: (l) => out.push(l), err: () => undefined } });
    expect(code).toBe(0);
    const key = out[0] ?? '';
    const asOps = { authorization: `Bearer ${key}` };
    for (const replica of [a, b]) {
      // Served as ops, not as the local operator whose chats ran above: it sees none of them.
      const listed = await fetch(`${replica.server.url}/v0/executions`, { headers: asOps });
      expect(listed.status).toBe(200);
      expect(((await listed.json()) as { executions: unknown[] }).executions).toEqual([]);
      expect((await fetch(`${replica.server.url}/v1/models`)).status).toBe(401);
    }
  });

  it("another client's key cannot use a client's MCP session on any replica", async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const keyOf = async (name: string): Promise<string> => {
      const out: string[] = [];
      expect(await runCli(['keys', 'create', name, '--project', a.root], { env: { PATH: process.env['PATH'], DATABASE_URL: postgres.url }, cwd: a.root, io: { out: (l) => out.push(l), err: () => undefined } })).toBe(0);
      return out[0] ?? '';
    };
    const [alice, eve] = [await keyOf('alice-mcp'), await keyOf('eve')];
    const headers = (key: string, id?: string) => ({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}`, ...(id ? { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' } : {}) });
    const init = await fetch(`${a.server.url}/mcp`, { method: 'POST', headers: headers(alice), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'alice', version: '1' } } }) });
    const id = init.headers.get('mcp-session-id') ?? '';
    expect(init.status, await init.text()).toBe(200);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const list = (replica: DemoGateway, key: string) => fetch(`${replica.server.url}/mcp`, { method: 'POST', headers: headers(key, id), body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
    // Eve first, on the replica that never saw the session: nothing is brought up for her.
    for (const replica of [b, a]) {
      const stolen = await list(replica, eve);
      expect(stolen.status).toBe(404);
      expect(await stolen.text()).toContain('Session not found');
    }
    expect((await list(b, alice)).status).toBe(200);
    expect((await list(b, eve)).status).toBe(404);
  });
});
