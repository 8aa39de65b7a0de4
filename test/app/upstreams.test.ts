import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadGatewayConfig, type GatewayConfig, type GatewayConfigContext } from '../../src/app/gateway-config.js';
import { createUpstreams, type Upstreams } from '../../src/app/upstreams.js';
import type { ChatRequest } from '../../src/llm/types.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { drain, textOf } from '../llm/collect-events.js';
import { failure } from '../helpers/expect-failure.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { REPO_ROOT } from '../helpers/temp-project.js';

const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'kiwi-upstreams-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const DEMO_TURNS = path.join(REPO_ROOT, '.ai', 'demo', 'agent-turns.yaml');
const KEY = 'sk-test-dXBzdHJlYW1zLXRlc3Qta2V5';

let counter = 0;
async function config(text: string | null, env: GatewayConfigContext['env'] = {}): Promise<GatewayConfig> {
  const file = path.join(root, `gateway-${++counter}.yaml`);
  if (text !== null) writeFileSync(file, text);
  return loadGatewayConfig(file, { env, root });
}

const ask = (model: string, content = 'What is the capital of France?'): ChatRequest => ({ model, messages: [{ role: 'user', content }] });

let upstreams: Upstreams | undefined;
afterEach(async () => {
  await upstreams?.close();
  upstreams = undefined;
});

describe('upstreams: routing', () => {
  const ROUTED = `
upstreams:
  - { name: exact, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["gpt-4o"] }
  - { name: claude, kind: anthropic, base_url: "http://127.0.0.1:2", api_key_env: K, models: ["claude-*"] }
  - { name: rest, kind: openai, base_url: "http://127.0.0.1:3/v1", models: ["gpt-*", "llama3.?:*"] }
`;

  it('sends each model to the first upstream whose models match, and passes the id through', async () => {
    upstreams = createUpstreams(await config(ROUTED, { K: KEY }), { demoTurnsFile: DEMO_TURNS });
    const r = upstreams;
    expect([r.route('gpt-4o').upstream, r.route('gpt-4o-mini').upstream, r.route('claude-sonnet-4').upstream, r.route('llama3.1:8b').upstream]).toEqual(['exact', 'rest', 'claude', 'rest']);
    expect(r.route('claude-sonnet-4')).toMatchObject({ model: 'claude-sonnet-4', provider: { kind: 'anthropic' } });
    expect(r.route('kiwi-demo')).toMatchObject({ upstream: 'demo', model: 'kiwi-demo', provider: { kind: 'demo' } });
    expect(r.route('gpt-4o-mini').provider).toBe(r.route('gpt-3.5').provider);
  });

  it('refuses a model nobody serves with UNKNOWN_MODEL, naming what is served and where to add more', async () => {
    upstreams = createUpstreams(await config(ROUTED, { K: KEY }), { demoTurnsFile: DEMO_TURNS });
    let error: unknown;
    try {
      upstreams.route('mistral-large');
    } catch (e) {
      error = e;
    }
    const e = await failure(Promise.reject(error), 'UNKNOWN_MODEL');
    expect(e.message).toMatch(/^No upstream serves model "mistral-large"\. This gateway serves: kiwi-demo \(demo\); gpt-4o \(exact\); claude-\* \(claude\); gpt-\*, llama3\.\?:\* \(rest\)\./);
    expect(e.message).toMatch(/Ask for one of those, or set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL .* or add an upstream in gateway-\d+\.yaml/);
  });

  it('with nothing configured, only kiwi-demo answers; any other model is UNKNOWN_MODEL saying how to configure an upstream', async () => {
    upstreams = createUpstreams(await config(null), { demoTurnsFile: DEMO_TURNS });
    const c = await upstreams.route('kiwi-demo').provider.complete(ask('kiwi-demo', 'what changed in this repo?'));
    expect(c.text).toBe('(offline demo model) Let me look at the working tree first. [TOOL: git_status {}]');
    const u = upstreams;
    const e = await failure(Promise.resolve().then(() => u.route('gpt-4o')), 'UNKNOWN_MODEL');
    expect(e.message).toMatch(/^No upstream LLM is configured, so only the offline demo model \(kiwi-demo\) answers, not "gpt-4o"\. To use "gpt-4o", set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL \(.*KIWI_UPSTREAM_URL=http:\/\/127\.0\.0\.1:11434\), or add an upstream in gateway-\d+\.yaml/);
  });

  it('lists exact ids with their upstream, skips globs, and lists a shadowed id under the upstream that really serves it', async () => {
    const text = `
upstreams:
  - { name: local, kind: openai, base_url: "http://127.0.0.1:1/v1", models: ["llama3.1:8b", "qwen*"] }
  - { name: later, kind: openai, base_url: "http://127.0.0.1:2/v1", models: ["gpt-4o", "qwen2.5", "llama3.1:8b"] }
`;
    upstreams = createUpstreams(await config(text), { demoTurnsFile: DEMO_TURNS });
    const { models, unavailable } = await upstreams.models();
    expect(models).toEqual([
      { id: 'kiwi-demo', ownedBy: 'demo', demo: true },
      { id: 'llama3.1:8b', ownedBy: 'local' },
      { id: 'gpt-4o', ownedBy: 'later' },
      { id: 'qwen2.5', ownedBy: 'local' },
    ]);
    // Nothing listens on ports 1 and 2: both are named as unavailable.
    expect(unavailable.map((u) => u.name)).toEqual(['local', 'later']);
  });

  it('refuses routes after close()', async () => {
    const u = createUpstreams(await config(null), { demoTurnsFile: DEMO_TURNS });
    await u.close();
    expect(() => u.route('kiwi-demo')).toThrow(/closed/);
  });
});

describe('upstreams: real providers against a local replay server', () => {
  let llm: ReplayLlmServer;
  beforeEach(async () => {
    llm = await startReplayLlmServer();
  });
  afterEach(async () => {
    await upstreams?.close();
    upstreams = undefined;
    await llm.close();
  });

  it('streams from a configured OpenAI-compatible upstream, with the key from api_key_env', async () => {
    llm.reply('openai-plain');
    const text = `upstreams:\n  - { name: replay, kind: openai, base_url: "\${REPLAY_URL}/v1", api_key_env: REPLAY_KEY, models: ["gpt-*"], timeout_ms: 60000 }\n`;
    upstreams = createUpstreams(await config(text, { REPLAY_URL: llm.url, REPLAY_KEY: KEY }), { demoTurnsFile: DEMO_TURNS });
    const route = upstreams.route('gpt-4o-mini');
    const { events, error } = await drain(route.provider.stream(ask(route.model)));
    expect(error).toBeUndefined();
    expect(textOf(events)).toBe('The capital of France is Paris.');
    const request = await llm.request(0);
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.body).toMatchObject({ model: 'gpt-4o-mini', stream: true });
  });

  it('reaches a keyless local server from KIWI_UPSTREAM_URL, and Anthropic from ANTHROPIC_API_KEY + ANTHROPIC_BASE_URL, over one shared client', async () => {
    const http = createHttpClient();
    try {
      llm.replyOnce('openai-llamacpp-plain', 'anthropic-plain');
      const env = { KIWI_UPSTREAM_URL: `${llm.url}/v1`, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: llm.url };
      upstreams = createUpstreams(await config(null, env), { http, demoTurnsFile: DEMO_TURNS });
      const local = upstreams.route('qwen2.5-0.5b-instruct');
      expect(local.upstream).toBe('local');
      expect((await drain(local.provider.stream(ask(local.model)))).error).toBeUndefined();
      expect((await llm.request(0)).headers.authorization).toBeUndefined();

      const claude = upstreams.route('claude-sonnet-4-20250514');
      const { events, error } = await drain(claude.provider.stream(ask(claude.model)));
      expect(error).toBeUndefined();
      expect(textOf(events)).toBe('The capital of France is Paris.');
      const sent = await llm.request(1);
      expect(sent.path).toBe('/v1/messages');
      expect(sent.headers['x-api-key']).toBe(KEY);

      await upstreams.close();
      upstreams = undefined;
      // The injected client belongs to the caller and still works after the upstreams closed.
      llm.reply('openai-plain');
      const after = await http.request({ method: 'POST', url: `${llm.url}/v1/chat/completions`, body: '{}' });
      expect(after.status).toBe(200);
    } finally {
      await http.close();
    }
  });
});
