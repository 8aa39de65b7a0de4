import Anthropic from '@anthropic-ai/sdk';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig, type GatewayConfigContext } from '../../src/app/gateway-config.js';
import type { RunLoop } from '../../src/loop/loop-types.js';
import { createUpstreamModels } from '../../src/app/upstream-models.js';
import { createUpstreams, type Upstreams, type UpstreamsOptions } from '../../src/app/upstreams.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { drain, textOf } from '../llm/collect-events.js';
import { serveGateway, type ServedGateway } from '../fixtures/http-edges/serve-gateway.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

/**
 * GET /v1/models through the gateway app with the real `openai` and `@anthropic-ai/sdk` clients;
 * each upstream is a real HTTP server on 127.0.0.1 answering its own GET …/models.
 */

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-upstream-models-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const DEMO_TURNS = path.join(REPO_ROOT, '.ai', 'demo', 'agent-turns.yaml');
const KEY = 'sk-ant-test-dXBzdHJlYW0tbW9kZWxz';

const servers: ReplayLlmServer[] = [];
let upstreams: Upstreams | undefined;
let gateway: ServedGateway | undefined;
afterEach(async () => {
  await gateway?.close();
  await upstreams?.close();
  for (const s of servers.splice(0)) await s.close();
  gateway = undefined;
  upstreams = undefined;
});

async function llmServer(): Promise<ReplayLlmServer> {
  const s = await startReplayLlmServer();
  servers.push(s);
  return s;
}

let counter = 0;
async function open(yaml: string | null, env: GatewayConfigContext['env'], options: Partial<UpstreamsOptions> = {}): Promise<{ log: string[]; url: string }> {
  const file = path.join(root, `gateway-${++counter}.yaml`);
  if (yaml !== null) writeFileSync(file, yaml);
  const log: string[] = [];
  upstreams = createUpstreams(await loadGatewayConfig(file, { env, root }), { demoTurnsFile: DEMO_TURNS, log: (line) => log.push(line), ...options });
  const u = upstreams;
  // Routing first, as the gateway's own runLoop does: an unknown model fails before any stream.
  const runLoop: RunLoop = (request) => {
    u.route(request.model);
    throw new Error('not reached in these tests');
  };
  gateway = await serveGateway({ runLoop, models: () => u.models(), health: () => ({}) });
  return { log, url: gateway.url };
}

const openai = (url: string) => new OpenAI({ apiKey: 'unused', baseURL: `${url}/v1`, maxRetries: 0 });

describe('GET /v1/models: every upstream’s own list', () => {
  it('merges the lists of an OpenAI-compatible server (root URL), Anthropic and a configured upstream, listing each id where it routes', async () => {
    const [ollama, claude, gpt] = [await llmServer(), await llmServer(), await llmServer()];
    ollama.models(['llama3.1:8b', 'qwen2.5:0.5b']);
    claude.models(['claude-sonnet-4-5', 'claude-haiku-4-5']);
    // text-embedding-3-small is not gpt-*: a request for it would go to "local" (*), which does not have it; not listed.
    gpt.models(['gpt-4o', 'gpt-4o-mini', 'text-embedding-3-small']);
    const yaml = `upstreams:\n  - { name: gpt, kind: openai, base_url: "${gpt.url}/v1", models: ["gpt-4o", "gpt-*"] }\n`;
    const { url, log } = await open(yaml, { KIWI_UPSTREAM_URL: ollama.url, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: claude.url });

    const listed = [];
    for await (const m of openai(url).models.list()) listed.push([m.id, m.owned_by]);
    expect(listed).toEqual([
      ['kiwi-demo', 'demo'],
      ['gpt-4o', 'gpt'],
      ['gpt-4o-mini', 'gpt'],
      ['claude-sonnet-4-5', 'anthropic'],
      ['claude-haiku-4-5', 'anthropic'],
      ['llama3.1:8b', 'local'],
      ['qwen2.5:0.5b', 'local'],
    ]);
    expect(log).toEqual([]);
    expect(ollama.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
    const asked = claude.requests[0];
    expect(asked?.path).toBe('/v1/models?limit=1000');
    expect(asked?.headers).toMatchObject({ 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });

    // The Anthropic client gets Anthropic's shape from the same merged list.
    const anthropic = new Anthropic({ apiKey: 'unused', baseURL: url, maxRetries: 0 });
    const ids = [];
    for await (const m of anthropic.models.list()) ids.push(m.id);
    expect(ids).toContain('claude-haiku-4-5');
    expect(ids).toContain('llama3.1:8b');
  });

  it('asks each upstream once within the cache time, however many clients list', async () => {
    const local = await llmServer();
    local.models(['llama3.1:8b']);
    const { url } = await open(null, { KIWI_UPSTREAM_URL: `${local.url}/v1` });
    const lists = await Promise.all([1, 2, 3].map(async () => (await openai(url).models.list()).data.map((m) => m.id)));
    lists.push((await openai(url).models.list()).data.map((m) => m.id));
    expect(lists).toEqual(Array.from({ length: 4 }, () => ['kiwi-demo', 'llama3.1:8b']));
    expect(local.requests).toHaveLength(1);
  });

  it('still lists the configured models when an upstream fails, is not JSON, is too big or never answers, and logs why', async () => {
    const [failing, garbled, huge, stalled] = [await llmServer(), await llmServer(), await llmServer(), await llmServer()];
    failing.models({ status: 500, body: '{"error":{"message":"boom"}}' });
    garbled.models({ status: 200, body: '<html>not json</html>' });
    huge.models(Array.from({ length: 200 }, (_, i) => `model-${i}`));
    stalled.models('stall');
    const yaml = ['upstreams:', ...[failing, garbled, huge, stalled].map((s, i) => `  - { name: u${i}, kind: openai, base_url: "${s.url}/v1", models: ["m${i}"] }`), ''].join('\n');
    const { url, log } = await open(yaml, {}, { modelLists: { timeoutMs: 300, maxResponseBytes: 2048 } });
    const ids = (await openai(url).models.list()).data.map((m) => m.id);
    expect(ids).toEqual(['kiwi-demo', 'm0', 'm1', 'm2', 'm3']);
    expect(log).toHaveLength(4);
    expect(log[0]).toMatch(/^upstream "u0" \(http:\/\/127\.0\.0\.1:\d+\/v1\/models\) did not give its model list \(HTTP 500\); GET \/v1\/models lists its configured models only and names it as unavailable/);
    expect(log[1]).toMatch(/upstream "u1" .*\(the answer is not JSON\)/);
    expect(log[2]).toMatch(/upstream "u2" .*\(the list is larger than 2048 bytes\)/);
    expect(log[3]).toMatch(/upstream "u3" .*\(no complete answer within 300 ms\)/);
  });

  it('asks again after the cache time, and sooner after a failure', async () => {
    const local = await llmServer();
    local.models({ status: 503, body: '{}' });
    let now = 0;
    const http = createHttpClient();
    try {
      const file = path.join(root, 'absent.yaml');
      const config = await loadGatewayConfig(file, { env: { KIWI_UPSTREAM_URL: local.url }, root });
      const lists = createUpstreamModels({ http, now: () => now }, { ttlMs: 60_000, failureTtlMs: 5_000 });
      const u = config.upstreams[1];
      if (u === undefined) throw new Error('no upstream');
      expect(await lists.list(u)).toEqual({ ids: [], down: 'HTTP 503' });
      local.models(['llama3.1:8b']);
      now = 4_999;
      expect(await lists.list(u)).toEqual({ ids: [], down: 'HTTP 503' });
      now = 5_000;
      expect(await lists.list(u)).toEqual({ ids: ['llama3.1:8b'] });
      local.models(['qwen2.5:0.5b']);
      now = 64_999;
      expect(await lists.list(u)).toEqual({ ids: ['llama3.1:8b'] });
      now = 65_000;
      expect(await lists.list(u)).toEqual({ ids: ['qwen2.5:0.5b'] });
      expect(local.requests).toHaveLength(3);
      expect(() => createUpstreamModels({ http }, { ttlMs: 0 })).toThrow(/ttlMs must be a positive integer, got 0/);
    } finally {
      await http.close();
    }
  });
});

describe('an upstream that is down', () => {
  it('is named in /v1/models (a field and a header the real SDKs read past) while the others are listed, and by the start check', async () => {
    const [up, failing, locked, stopped] = [await llmServer(), await llmServer(), await llmServer(), await llmServer()];
    up.models(['llama3.1:8b']);
    failing.models({ status: 500, body: '{"error":{"message":"boom"}}' });
    locked.models({ status: 401, body: '{"error":{"message":"invalid api key"}}' });
    // A server that was there and stopped: its port refuses connections.
    await stopped.close();
    const yaml = [
      'upstreams:',
      `  - { name: up, kind: openai, base_url: "${up.url}/v1", models: ["llama*"] }`,
      `  - { name: failing, kind: openai, base_url: "${failing.url}/v1", models: ["gpt-4o"] }`,
      `  - { name: locked, kind: openai, base_url: "${locked.url}/v1", api_key_env: LOCKED_KEY, models: ["claude-x"] }`,
      `  - { name: stopped, kind: openai, base_url: "${stopped.url}/v1", models: ["qwen-x"] }`,
      '',
    ].join('\n');
    const { url, log } = await open(yaml, { LOCKED_KEY: 'sk-wrong-dXBzdHJlYW0tZG93bg' });
    const u = upstreams as Upstreams;

    // The start check: every upstream with a server is asked, the demo model is not; each down one is told as it is known.
    const told: string[] = [];
    const down = await u.check((d) => told.push(d.name));
    expect(down.map((d) => d.name)).toEqual(['failing', 'locked', 'stopped']);
    expect([...told].sort()).toEqual(['failing', 'locked', 'stopped']);
    expect(down[0]).toEqual({ name: 'failing', url: `${failing.url}/v1`, error: 'HTTP 500' });
    expect(down[1]?.error).toBe('HTTP 401: the API key was refused; check the key in LOCKED_KEY');
    expect(down[2]?.error).toMatch(/connection to 127\.0\.0\.1:\d+ was refused; check the URL and that the server is running/);
    expect(JSON.stringify(down)).not.toContain('sk-wrong');
    expect(log).toHaveLength(3);

    // The real openai client lists what there is, unbothered by the extra field.
    const client = openai(url);
    const { data: page, response } = await client.models.list().withResponse();
    expect(page.data.map((m) => [m.id, m.owned_by])).toEqual([
      ['kiwi-demo', 'demo'],
      ['llama3.1:8b', 'up'],
      ['gpt-4o', 'failing'],
      ['claude-x', 'locked'],
      ['qwen-x', 'stopped'],
    ]);
    expect(response.headers.get('x-kiwi-unavailable-upstreams')).toBe('failing, locked, stopped');
    const listed = [];
    for await (const m of client.models.list()) listed.push(m.id);
    expect(listed).toHaveLength(5);
    const body = (await (await fetch(`${url}/v1/models`)).json()) as { unavailable_upstreams: unknown };
    expect(body.unavailable_upstreams).toEqual(down);

    // The Anthropic client too, with the same field in Anthropic's shape.
    const anthropic = new Anthropic({ apiKey: 'unused', baseURL: url, maxRetries: 0 });
    const ids = [];
    for await (const m of anthropic.models.list()) ids.push(m.id);
    expect(ids).toEqual(['kiwi-demo', 'llama3.1:8b', 'gpt-4o', 'claude-x', 'qwen-x']);
    const asAnthropic = (await (await fetch(`${url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } })).json()) as { unavailable_upstreams: unknown };
    expect(asAnthropic.unavailable_upstreams).toEqual(down);
  });

  it('adds neither field nor header when every upstream answers, and the demo model alone has nothing to check', async () => {
    const local = await llmServer();
    local.models(['llama3.1:8b']);
    const { url } = await open(null, { KIWI_UPSTREAM_URL: local.url });
    expect(await (upstreams as Upstreams).check()).toEqual([]);
    const res = await fetch(`${url}/v1/models`);
    expect(res.headers.get('x-kiwi-unavailable-upstreams')).toBeNull();
    expect(Object.keys((await res.json()) as object)).toEqual(['object', 'data']);
    await upstreams?.close();
    await gateway?.close();
    await open(null, {});
    expect(await (upstreams as Upstreams).check()).toEqual([]);
  });
});

describe('model lists shared by replicas', () => {
  it('asks an upstream once for replicas that share a cache; a failure is not shared', async () => {
    const local = await llmServer();
    const http = createHttpClient();
    const cached = new Map<string, string>();
    const shared = { get: async (k: string) => cached.get(k), set: async (k: string, v: string) => void cached.set(k, v) };
    try {
      const config = await loadGatewayConfig(path.join(root, 'absent.yaml'), { env: { KIWI_UPSTREAM_URL: local.url }, root });
      const u = config.upstreams[1];
      if (u === undefined) throw new Error('no upstream');
      local.models({ status: 503, body: 'down' });
      const [one, two] = [createUpstreamModels({ http, shared }), createUpstreamModels({ http, shared })];
      expect(await one.list(u)).toEqual({ ids: [], down: 'HTTP 503' });
      expect(await two.list(u)).toEqual({ ids: [], down: 'HTTP 503' });
      expect(local.requests).toHaveLength(2);
      local.models(['llama3.1:8b']);
      const [three, four] = [createUpstreamModels({ http, shared }), createUpstreamModels({ http, shared })];
      expect(await three.list(u)).toEqual({ ids: ['llama3.1:8b'] });
      expect(await four.list(u)).toEqual({ ids: ['llama3.1:8b'] });
      expect(local.requests).toHaveLength(3);
      // Keyed by where the list is read, never by a key.
      expect([...cached.keys()]).toEqual([`models:${local.url}/v1/models`]);
      // What is not a list of model ids is read afresh.
      cached.set(`models:${local.url}/v1/models`, '{"not":"a list"}');
      expect(await createUpstreamModels({ http, shared }).list(u)).toEqual({ ids: ['llama3.1:8b'] });
      expect(local.requests).toHaveLength(4);
    } finally {
      await http.close();
    }
  });
});

describe('the URL rule for KIWI_UPSTREAM_URL', () => {
  it('posts to /v1/chat/completions with Ollama’s root URL and with …/v1', async () => {
    for (const suffix of ['', '/', '/v1']) {
      const local = await llmServer();
      local.reply('openai-ollama-plain');
      const file = path.join(root, 'absent.yaml');
      const u = createUpstreams(await loadGatewayConfig(file, { env: { KIWI_UPSTREAM_URL: `${local.url}${suffix}` }, root }), { demoTurnsFile: DEMO_TURNS });
      try {
        const { events, error } = await drain(u.route('llama3.1:8b').provider.stream({ model: 'llama3.1:8b', messages: [{ role: 'user', content: 'hi' }] }));
        expect(error).toBeUndefined();
        expect(textOf(events)).toBe('Paris is the capital of France.');
        expect((await local.request(0)).path).toBe('/v1/chat/completions');
      } finally {
        await u.close();
      }
    }
  });
});

describe('with no upstream configured', () => {
  it('serves kiwi-demo only: another model gets a 404 in the client’s shape saying how to configure an upstream', async () => {
    const { url } = await open(null, {});
    expect((await openai(url).models.list()).data.map((m) => m.id)).toEqual(['kiwi-demo']);
    const error = await openai(url).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    expect((error as Error).message).toMatch(/No upstream LLM is configured, so only the offline demo model \(kiwi-demo\) answers, not "gpt-4o"\. To use "gpt-4o", set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL .* or add an upstream in gateway-\d+\.yaml/);
    const anthropic = new Anthropic({ apiKey: 'unused', baseURL: url, maxRetries: 0 });
    const refused = await anthropic.messages.create({ model: 'claude-test-1', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
    expect((refused as Error).message).toMatch(/only the offline demo model \(kiwi-demo\) answers, not \\"claude-test-1\\"/);
  });
});
