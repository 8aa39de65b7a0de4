import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import type { ChatProvider } from '../../src/llm/types.js';
import { createModelFallback } from '../../src/resolver/model-fallback.js';
import { createResolver, resolvableTools } from '../../src/resolver/resolver.js';
import type { ResolverModel } from '../../src/resolver/learned-model.js';
import { openToolIndex, type ToolIndex } from '../../src/store/tool-index.js';
import { createHashEmbedder } from '../helpers/hash-embedder.js';
import { makeTool } from '../helpers/make-tool.js';
import { startReplayLlmServer, type Recording, type ReplayLlmServer } from '../helpers/replay-llm-server.js';

/**
 * The resolver's fallback model end to end: the real resolver (hash embedder, LanceDB), the real
 * OpenAI-compatible provider, and a local server replaying what llama.cpp and Ollama answer
 * (test/fixtures/llm-streams, hand-written in their wire format: no model runs here).
 */

const TOOLS = resolvableTools([
  makeTool({
    id: 'send_greeting',
    type: 'api',
    description: 'Send a greeting card to a person',
    parameters: [
      { name: 'person', type: 'string', required: true, description: 'Who receives the card' },
      { name: 'occasion', type: 'string', required: true, description: 'What the card celebrates' },
    ],
  }),
  makeTool({ id: 'get_weather_forecast', type: 'api', description: 'Get the weather forecast for a city', parameters: [{ name: 'city', type: 'string', required: true }] }),
  makeTool({ id: 'list_open_issues', type: 'api', description: 'List the open issues of the bug tracker' }),
]);
const INTENT = 'send a greeting card to Ada Lovelace for her birthday';

let dir: string;
let index: ToolIndex;
let llm: ReplayLlmServer;
let provider: ChatProvider;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'kiwi-fallback-'));
  index = await openToolIndex({ dir, embedder: createHashEmbedder({ dimensions: 128 }) });
  await index.sync([...TOOLS.values()]);
  llm = await startReplayLlmServer();
  provider = createOpenAiProvider({ baseUrl: `${llm.url}/v1` });
});

afterEach(() => llm.forgetQueued());

afterAll(async () => {
  await provider?.close();
  await llm?.close();
  await index?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function resolverWith(options: { timeoutMs?: number; model?: ResolverModel; targetPrecision?: number; threshold?: number } = {}) {
  const fallback = createModelFallback({ provider, model: 'qwen3-0.6b', upstream: 'local', ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}), price: { inputPerMtok: 1, outputPerMtok: 2 } });
  return createResolver({
    tools: TOOLS,
    search: index,
    embedder: createHashEmbedder({ dimensions: 128 }),
    settings: { threshold: options.threshold ?? 0.3, targetPrecision: options.targetPrecision ?? 0 },
    fallback,
    ...(options.model ? { model: options.model } : {}),
  });
}

/** A chat.completion in OpenAI's shape whose one tool call is `name(args)`, or whose text is `content`. */
function answer(message: { name: string; args: unknown } | { content: string }): Recording {
  const msg =
    'content' in message
      ? { role: 'assistant', content: message.content }
      : { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: message.name, arguments: JSON.stringify(message.args) } }] };
  const body = { id: 'chatcmpl-1', object: 'chat.completion', created: 1741703112, model: 'qwen3-0.6b', choices: [{ index: 0, message: msg, finish_reason: 'stop' }], usage: { prompt_tokens: 400, completion_tokens: 20 } };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

describe('the fallback model', () => {
  it('is not asked when the rules make the call', async () => {
    const before = llm.requests.length;
    const r = await resolverWith().resolve('get the weather forecast for "Paris"');
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'get_weather_forecast', arguments: { city: 'Paris' } } });
    expect(r.fallback).toBeUndefined();
    expect(llm.requests.length).toBe(before);
  });

  it("writes the call the rules could not finish (llama.cpp's tool call), shown the top candidates as functions", async () => {
    const resolver = resolverWith();
    llm.replyOnce('openai-llamacpp-fallback-call');
    const before = llm.requests.length;
    const r = await resolver.resolve(INTENT);
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'send_greeting', arguments: { person: 'Ada Lovelace', occasion: 'birthday' } } });
    expect(r.fallback).toMatchObject({ model: 'qwen3-0.6b', upstream: 'local', outcome: 'called', inputTokens: 436, outputTokens: 31 });
    expect(r.fallback?.usd).toBeCloseTo((436 * 1 + 31 * 2) / 1e6, 12);
    expect(r.fallback?.ms).toBeGreaterThanOrEqual(0);
    expect(r.notes.join('\n')).toMatch(/occasion: in the intent \(fallback model qwen3-0\.6b\)/);

    const sent = (await llm.request(before)).body as { model: string; temperature: number; tools: { function: { name: string; parameters: { required: string[] } } }[]; tool_choice: unknown; messages: { role: string; content: string }[] };
    expect(sent.model).toBe('qwen3-0.6b');
    expect(sent.temperature).toBe(0);
    expect(sent.tool_choice).toBe('auto');
    expect(sent.tools.map((t) => t.function.name)).toContain('send_greeting');
    expect(sent.tools.find((t) => t.function.name === 'send_greeting')?.function.parameters.required).toEqual(['person', 'occasion']);
    expect(sent.messages.at(-1)?.content).toBe(INTENT);
  });

  it('is asked where no candidate fits well enough, and may choose one the rules ranked lower', async () => {
    // Every candidate is below this threshold: the rules cannot tell which fits.
    const resolver = resolverWith({ threshold: 0.99 });
    llm.replyOnce({ recording: answer({ name: 'list_open_issues', args: {} }) });
    const before = llm.requests.length;
    const r = await resolver.resolve('send a greeting card, or list what is still open');
    const shown = ((await llm.request(before)).body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name);
    expect(shown.indexOf('list_open_issues')).toBeGreaterThan(0);
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'list_open_issues', arguments: {} }, fallback: { outcome: 'called' } });
  });

  it('takes the call a small model prints as JSON in its text (Ollama)', async () => {
    const resolver = resolverWith();
    llm.replyOnce('openai-ollama-fallback-content-json');
    const r = await resolver.resolve(INTENT);
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'send_greeting', arguments: { person: 'Ada Lovelace', occasion: 'birthday' } }, fallback: { outcome: 'called', inputTokens: 402 } });
  });

  it('refuses a value the intent does not hold, and asks back as the rules did', async () => {
    const resolver = resolverWith();
    llm.replyOnce({ recording: answer({ name: 'send_greeting', args: { person: 'Ada Lovelace', occasion: 'anniversary' } }) });
    const r = await resolver.resolve(INTENT);
    expect(r).toMatchObject({ status: 'unresolved', stop: 'arguments', missing: ['occasion'], found: { person: 'Ada Lovelace' }, fallback: { outcome: 'refused' } });
    expect(r.notes.join('\n')).toMatch(/called send_greeting; refused: occasion: "anniversary" is not in the intent/);
  });

  it('refuses arguments outside the schema and a function it was not shown', async () => {
    const resolver = resolverWith();
    llm.replyOnce(
      { recording: answer({ name: 'send_greeting', args: { person: 'Ada Lovelace', occasion: 'birthday', cc: 'everyone' } }) },
      { recording: answer({ name: 'delete_everything', args: {} }) },
    );
    const extra = await resolver.resolve(INTENT);
    expect(extra).toMatchObject({ status: 'unresolved', fallback: { outcome: 'refused' } });
    expect(extra.notes.join('\n')).toMatch(/unknown argument `cc`/);
    const unknown = await resolver.resolve(INTENT);
    expect(unknown).toMatchObject({ status: 'unresolved', fallback: { outcome: 'failed' } });
    expect(unknown.notes.join('\n')).toMatch(/it called "delete_everything", which is not one of the 3 candidates it was shown/);
  });

  it('refuses arguments nested 200,000 levels deep, or larger than a call may be, as a failed answer', async () => {
    const resolver = resolverWith();
    // 100,000 levels fit the cap of a call (200,000 characters); 200,000 levels do not.
    const deep = `{"person":"Ada Lovelace","occasion":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const deeper = `{"person":"Ada Lovelace","occasion":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    const big = JSON.stringify({ person: 'Ada Lovelace', occasion: 'x'.repeat(300 * 1024) });
    const nativeCall = (args: string): Recording => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'qwen3-0.6b', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'send_greeting', arguments: args } }] }, finish_reason: 'stop' }] }),
    });
    llm.replyOnce({ recording: nativeCall(deep) }, { recording: answer({ content: `{"name":"send_greeting","arguments":${deeper}}` }) }, { recording: nativeCall(big) }, { recording: nativeCall(deeper) });
    const native = await resolver.resolve(INTENT);
    expect(native).toMatchObject({ status: 'unresolved', fallback: { outcome: 'failed' } });
    expect(native.notes.join('\n')).toMatch(/arguments for send_greeting are not a JSON object of at most 128 levels/);
    const printed = await resolver.resolve(INTENT);
    expect(printed).toMatchObject({ status: 'unresolved', fallback: { outcome: 'declined' } });
    const large = await resolver.resolve(INTENT);
    expect(large).toMatchObject({ status: 'unresolved', fallback: { outcome: 'failed' } });
    expect(large.notes.join('\n')).toMatch(/arguments are \d+ characters, over the 262144/);
    expect(await resolver.resolve(INTENT)).toMatchObject({ status: 'unresolved', fallback: { outcome: 'failed' } });
  });

  it('lets the model decline: no function fits', async () => {
    const resolver = resolverWith();
    llm.replyOnce({ recording: answer({ content: 'None of these functions can send a card.' }) });
    const r = await resolver.resolve(INTENT);
    expect(r).toMatchObject({ status: 'unresolved', stop: 'arguments', fallback: { outcome: 'declined' } });
    expect(r.notes.join('\n')).toMatch(/it called no function: "None of these functions can send a card\."/);
  });

  it('keeps the rules\' answer when the model server fails or stalls, saying why', async () => {
    const resolver = resolverWith({ timeoutMs: 300 });
    llm.replyOnce({ status: 500 }, { recording: 'openai-llamacpp-fallback-call', stallAfterChunks: 0 });
    const failed = await resolver.resolve(INTENT);
    expect(failed).toMatchObject({ status: 'unresolved', stop: 'arguments', fallback: { outcome: 'failed' } });
    expect(failed.notes.join('\n')).toMatch(/fallback model qwen3-0\.6b: .*500/);
    const stalled = await resolver.resolve(INTENT);
    expect(stalled).toMatchObject({ status: 'unresolved', fallback: { outcome: 'failed' } });
    expect(stalled.notes.join('\n')).toMatch(/no answer within 300 ms/);
  });

  it("stops with the intent's own cancellation, not as the model's failure", async () => {
    const resolver = resolverWith({ timeoutMs: 5000 });
    llm.replyOnce({ recording: 'openai-llamacpp-fallback-call', stallAfterChunks: 0 });
    const controller = new AbortController();
    const pending = resolver.resolve(INTENT, { signal: controller.signal });
    await llm.request(llm.requests.length);
    controller.abort();
    await expect(pending).rejects.toThrow();
  });

  it("is asked where no gate reaches the target: the calibrated gate is the rules', a model's call passes the schema and the evidence instead", async () => {
    // A calibration that keeps every confidence below 0.998 (logit(r) - 3), a gate of 0.999 at 0.9 and none at 0.95.
    const model: ResolverModel = { version: 1, embedder: 'hash', calibration: { mean: [0], std: [1], weights: [1], bias: -3 }, gates: [{ precision: 0.9, threshold: 0.999 }, { precision: 0.95, threshold: null }], card: {} };
    for (const targetPrecision of [0.9, 0.95]) {
      llm.replyOnce('openai-llamacpp-fallback-call');
      const r = await resolverWith({ model, targetPrecision }).resolve(INTENT);
      expect(r).toMatchObject({ status: 'resolved', call: { tool: 'send_greeting', arguments: { person: 'Ada Lovelace', occasion: 'birthday' } }, fallback: { outcome: 'called' } });
      // Its confidence is kept for the record, calibrated as a rules-made call's would be.
      expect(r.confidence).toBeLessThan(0.999);
    }
    // The evidence check stands: a value the intent does not hold still refuses the call.
    llm.replyOnce({ recording: answer({ name: 'send_greeting', args: { person: 'Ada Lovelace', occasion: 'anniversary' } }) });
    const guessed = await resolverWith({ model, targetPrecision: 0.95 }).resolve(INTENT);
    expect(guessed).toMatchObject({ status: 'unresolved', fallback: { outcome: 'refused' } });
  });

  it("asks a resolution's own fallback model in place of the resolver's, shown only the candidates the caller may run", async () => {
    const own = createModelFallback({ provider, model: 'gpt-4o-mini', upstream: 'recorded' });
    llm.replyOnce('openai-llamacpp-fallback-call');
    const before = llm.requests.length;
    const r = await resolverWith().resolve(INTENT, { fallback: own, mayCall: (c) => c.tool !== 'get_weather_forecast' });
    expect(r).toMatchObject({ status: 'resolved', call: { tool: 'send_greeting' }, fallback: { model: 'gpt-4o-mini', upstream: 'recorded', outcome: 'called' } });
    const sent = (await llm.request(before)).body as { model: string; tools: { function: { name: string } }[] };
    expect(sent.model).toBe('gpt-4o-mini');
    expect(sent.tools.map((t) => t.function.name).sort()).toEqual(['list_open_issues', 'send_greeting']);

    // Nothing the caller may run: no side request at all.
    const none = await resolverWith().resolve(INTENT, { fallback: own, mayCall: () => false });
    expect(none).toMatchObject({ status: 'unresolved' });
    expect(none.fallback).toBeUndefined();
    expect(none.notes.join('\n')).toMatch(/not asked: the caller may run none of the closest tools/);
    expect(llm.requests.length).toBe(before + 1);
  });
});
