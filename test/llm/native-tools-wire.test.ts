import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/llm/anthropic-provider.js';
import { MAX_NATIVE_CALLS } from '../../src/llm/client-tools.js';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import type { ChatMessage, ChatProvider, ChatRequest, ClientTools } from '../../src/llm/types.js';
import { failure } from '../helpers/expect-failure.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { drain, streamFailure } from './collect-events.js';

/** The client's tools and native calls through both adapters, against the replay server. */

const KEY = 'sk-ant-api03-T2hOb1RoaXNJc05vdEFSZWFsS2V5';
const WEATHER = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] };
const TOOLS: ClientTools = {
  tools: [
    { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER, strict: true },
    { name: 'get_time', parameters: { type: 'object', properties: {} } },
  ],
  choice: { type: 'tool', name: 'get_weather' },
  parallel: false,
};

/** A history where one assistant message made a native call and a gateway (resolve-only) call, answered gateway-first. */
const HISTORY: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris, and count the README words.' },
  { role: 'assistant', content: 'Checking.\n(called word_count {"path":"README.md"})', toolCalls: [{ id: 'call_up_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
  { role: 'tool', content: '(result of word_count)\n{"words": 4}' },
  { role: 'tool', content: '{"temp": 21}', toolCallId: 'call_up_1' },
  { role: 'user', content: 'And tomorrow?' },
];

let llm: ReplayLlmServer;
let openai: ChatProvider;
let anthropic: ChatProvider;

beforeEach(async () => {
  llm = await startReplayLlmServer();
  openai = createOpenAiProvider({ baseUrl: `${llm.url}/v1` });
  anthropic = createAnthropicProvider({ baseUrl: llm.url, apiKey: KEY });
});

afterEach(async () => {
  await openai.close();
  await anthropic.close();
  await llm.close();
});

describe('OpenAI adapter', () => {
  it('sends the tools, the choice and parallel_tool_calls; the native answers follow their call, the gateway result after them', async () => {
    llm.reply('openai-plain');
    // A client body's own tool fields (either protocol's shape) never pass through `extra`.
    const extra = { tools: [{ name: 'stale' }], tool_choice: 'none', functions: [], seed: 3 };
    await drain(openai.stream({ model: 'gpt-4o-mini', messages: HISTORY, clientTools: TOOLS, extra }));
    const body = (await llm.request(0)).body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER, strict: true } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
    ]);
    expect(body['tool_choice']).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(body['parallel_tool_calls']).toBe(false);
    expect(body['functions']).toBeUndefined();
    expect(body['seed']).toBe(3);
    expect(body['messages']).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris, and count the README words.' },
      {
        role: 'assistant',
        content: 'Checking.\n(called word_count {"path":"README.md"})',
        tool_calls: [{ id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', content: '{"temp": 21}', tool_call_id: 'call_up_1' },
      { role: 'user', content: '(result of word_count)\n{"words": 4}' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });

  it('sends no tool fields without client tools', async () => {
    llm.reply('openai-plain');
    await drain(openai.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], clientTools: { tools: [] } }));
    expect(Object.keys((await llm.request(0)).body as object).sort()).toEqual(['messages', 'model', 'stream', 'stream_options']);
  });

  it('assembles streamed native calls, arguments cut anywhere, and hands them on whole before finish', async () => {
    llm.reply({ recording: 'openai-native-tool-call', splitBytes: 7 });
    const { events, error } = await drain(openai.stream({ model: 'gpt-4o-mini', messages: HISTORY, clientTools: TOOLS }));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type !== 'start')).toEqual([
      { type: 'tool_call', call: { id: 'call_Wq3mZ8pL2xK7vN4rT1yB6sHd', name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } },
      { type: 'tool_call', call: { id: 'call_Jk5nR9tV3cX1mQ8wE2zA7uLf', name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } },
      { type: 'finish', reason: 'tool_calls', usage: { inputTokens: 82, outputTokens: 41 } },
    ]);
  });

  it('reads the native calls of a non-streamed answer', async () => {
    llm.reply('openai-native-tool-call-complete');
    const c = await openai.complete({ model: 'gpt-4o-mini', messages: HISTORY, clientTools: TOOLS });
    expect(c.text).toBe('');
    expect(c.toolCalls).toEqual([{ id: 'call_Wq3mZ8pL2xK7vN4rT1yB6sHd', name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }]);
    expect(c.finish.reason).toBe('tool_calls');
  });

  it('refuses a stream that opens more native calls than one answer may hold, or one with no name', async () => {
    const chunk = (delta: unknown) => `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
    const many = Array.from({ length: MAX_NATIVE_CALLS + 1 }, (_, i) => chunk({ tool_calls: [{ index: i, id: `call_${i}`, function: { name: 'get_time', arguments: '{}' } }] }));
    llm.replyOnce(
      { recording: { status: 200, headers: { 'content-type': 'text/event-stream' }, body: `${many.join('')}data: [DONE]\n\n` } },
      { recording: { status: 200, headers: { 'content-type': 'text/event-stream' }, body: `${chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] })}data: [DONE]\n\n` } },
    );
    const tooMany = await streamFailure(openai.stream({ model: 'm', messages: HISTORY, clientTools: TOOLS }), 'UPSTREAM_HTTP');
    expect(tooMany.error.message).toContain(`opens more than ${MAX_NATIVE_CALLS} tool calls`);
    const nameless = await streamFailure(openai.stream({ model: 'm', messages: HISTORY, clientTools: TOOLS }), 'UPSTREAM_HTTP');
    expect(nameless.error.message).toContain('sent tool call 0 without a function name');
  });
});

describe('non-streamed answers whose calls do not hold together', () => {
  const json = (body: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('OpenAI: a call with no name, or more calls than one answer may hold, is refused like the streamed ones, never dropped', async () => {
    const answer = (calls: unknown[]) => json({ id: 'c', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: calls }, finish_reason: 'tool_calls' }] });
    const many = Array.from({ length: MAX_NATIVE_CALLS + 1 }, (_, i) => ({ id: `call_${i}`, type: 'function', function: { name: 'get_time', arguments: '{}' } }));
    llm.replyOnce({ recording: answer([{ id: 'call_1', type: 'function', function: { name: '', arguments: '{}' } }]) }, { recording: answer(many) });
    const nameless = await failure(openai.complete({ model: 'm', messages: HISTORY, clientTools: TOOLS }), 'UPSTREAM_HTTP');
    expect(nameless.message).toMatch(/not a chat\.completion \(choices\.0\.message\.tool_calls\.0\.function\.name/);
    const tooMany = await failure(openai.complete({ model: 'm', messages: HISTORY, clientTools: TOOLS }), 'UPSTREAM_HTTP');
    expect(tooMany.message).toContain(`the answer opens more than ${MAX_NATIVE_CALLS} tool calls`);
  });

  it('Anthropic: a tool_use block with no name is refused, never dropped with the others', async () => {
    llm.replyOnce({
      recording: json({
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'c',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: '', input: {} },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 1, output_tokens: 1 },
      }),
    });
    const error = await failure(anthropic.complete({ model: 'c', messages: HISTORY, clientTools: TOOLS }), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/the answer sent tool call 1 without a function name/);
  });
});

describe('Anthropic adapter', () => {
  it('sends tools with input_schema and tool_choice (parallel off on it); tool_result blocks first in the next user message', async () => {
    llm.reply('anthropic-plain');
    await drain(anthropic.stream({ model: 'claude-sonnet-4-20250514', messages: HISTORY, clientTools: TOOLS, extra: { tools: 'stale', parallel_tool_calls: true } }));
    const body = (await llm.request(0)).body as Record<string, unknown>;
    expect(body['tools']).toEqual([
      { name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(body['tool_choice']).toEqual({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true });
    expect(body['parallel_tool_calls']).toBeUndefined();
    expect(body['messages']).toEqual([
      { role: 'user', content: 'Weather in Paris, and count the README words.' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.\n(called word_count {"path":"README.md"})' },
          { type: 'tool_use', id: 'call_up_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_up_1', content: '{"temp": 21}' },
          { type: 'text', text: '(result of word_count)\n{"words": 4}' },
        ],
      },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });

  it('maps the choices: required is any, none stays none; no tool_choice when the client set none', async () => {
    llm.reply('anthropic-plain');
    const tools = TOOLS.tools;
    await drain(anthropic.stream({ model: 'c', messages: HISTORY, clientTools: { tools, choice: { type: 'required' } } }));
    await drain(anthropic.stream({ model: 'c', messages: HISTORY, clientTools: { tools, choice: { type: 'none' }, parallel: false } }));
    await drain(anthropic.stream({ model: 'c', messages: HISTORY, clientTools: { tools } }));
    expect(((await llm.request(0)).body as Record<string, unknown>)['tool_choice']).toEqual({ type: 'any' });
    expect(((await llm.request(1)).body as Record<string, unknown>)['tool_choice']).toEqual({ type: 'none' });
    expect(((await llm.request(2)).body as Record<string, unknown>)['tool_choice']).toBeUndefined();
  });

  it('assembles a streamed tool_use block from its input_json_delta pieces', async () => {
    llm.reply({ recording: 'anthropic-native-tool-use', splitBytes: 11 });
    const { events, error } = await drain(anthropic.stream({ model: 'c', messages: HISTORY, clientTools: TOOLS }));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : '')).join('')).toBe("I'll check the weather in Paris.");
    expect(events.slice(-2)).toEqual([
      { type: 'tool_call', call: { id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"city": "Paris", "unit": "c"}' } },
      { type: 'finish', reason: 'tool_calls', usage: { inputTokens: 412, outputTokens: 58 } },
    ]);
  });

  it('reads the tool_use blocks of a non-streamed message', async () => {
    llm.reply('anthropic-native-tool-use-complete');
    const m = await anthropic.complete({ model: 'c', messages: HISTORY, clientTools: TOOLS });
    expect(m.text).toBe("I'll check the weather in Paris.");
    expect(m.toolCalls).toEqual([{ id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }]);
  });
});

describe('the request check', () => {
  const bad = async (clientTools: unknown): Promise<string> => (await failure(openai.complete({ model: 'm', messages: HISTORY, clientTools } as ChatRequest), 'INVALID_INPUT')).message;

  it('refuses tools that break the shared limits, naming the field', async () => {
    expect(await bad({ tools: [{ name: 'has space', parameters: {} }] })).toMatch(/clientTools\.tools\.0\.name "has space" is not a tool name/);
    expect(await bad({ tools: [{ name: 'a', parameters: [] }] })).toMatch(/clientTools\.tools\.0\.parameters/);
    expect(await bad({ tools: [{ name: 'a', parameters: {} }], choice: { type: 'tool', name: 'b' } })).toMatch(/clientTools\.choice names "b", which is not one of the request's tools/);
    expect(llm.requests).toHaveLength(0);
  });
});
