import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import { postgresAvailable, type PostgresServer } from '../helpers/postgres-server.js';
import { redisAvailable } from '../helpers/redis-server.js';
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
    };
    const config = ['limits: { max_concurrent_requests_per_client: 1 }', 'prices:', '  "gpt-*": { input_per_mtok: 1000, output_per_mtok: 1000 }', 'budgets:', '  clients:', '    local: { tokens: 40 }'].join('\n');
    const open = (): Promise<DemoGateway> => serveDemoGateway({ prepare: limited, config, extraEnv: { REDIS_URL: redis.url, KIWI_REDIS_PREFIX: redis.prefix, DATABASE_URL: postgres.url } });
    replicas = await Promise.all([open(), open()]);
  });
  afterAll(async () => {
    await Promise.allSettled(replicas.map((r) => r.close()));
    await Promise.allSettled([redis?.stop(), postgres?.stop()]);
  });

  it('a client limited to 3 calls gets 3, wherever it sends them', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    const call = (replica: DemoGateway) => replica.gateway.project.proxy.call({ tool: 'word_count', args: { path: 'README.md' }, session: 'limits', client: 'alice', source: 'gateway' });
    for (const replica of [a, b, a]) expect((await call(replica)).status).toBe('ok');
    const fourth = await call(b);
    expect(fourth).toMatchObject({ status: 'denied', reason: expect.stringContaining('rate limit for client `alice` (3 per 3600000 ms) is used up') });
    // Another client has its own limit.
    expect((await b.gateway.project.proxy.call({ tool: 'word_count', args: { path: 'README.md' }, session: 'limits', client: 'bob', source: 'gateway' })).status).toBe('ok');
  });

  it('a call repeated across replicas is flagged as a loop', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    // A tool without path arguments: a path is compared once resolved, and each copy has its own root.
    const call = (replica: DemoGateway) => replica.gateway.project.proxy.call({ tool: 'git_status', args: {}, session: 'loops', client: 'carol', source: 'gateway' });
    expect((await call(a)).stuck).toBe(false);
    expect((await call(b)).stuck).toBe(false);
    expect((await call(a)).stuck).toBe(true);
  });

  it('a client allowed one running request cannot run a second through the other replica', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    // An agent's event stream counts as a running request until it ends.
    const stream = new AbortController();
    const open = await fetch(`${a.server.url}/v0/agents/stream?agent_id=limits&consumer_id=c1`, { signal: stream.signal });
    expect(open.status).toBe(200);
    const refused = await fetch(`${b.server.url}/v1/models`);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { message: expect.stringContaining('Client local already has 1 requests running') } });
    stream.abort();
    await expect.poll(async () => (await fetch(`${b.server.url}/v1/models`)).status).toBe(200);
  });

  it('a token budget holds across replicas: what one charged, the other counts', async () => {
    const [a, b] = replicas as [DemoGateway, DemoGateway];
    // Each answer reports 10 input and 5 output tokens: 15 a request, against a budget of 40.
    for (const r of replicas) r.llm.reply(openAiStream(['ok']));
    const chat = (replica: DemoGateway) => fetch(`${replica.server.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }) });
    for (const replica of [a, b, a]) {
      const res = await chat(replica);
      expect(res.status).toBe(200);
      await res.text();
      await replica.gateway.budgets?.settled();
    }
    const refused = await chat(b);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/^Client "local" is over its token budget: 45 tokens of 40 tokens/);
  });
});
