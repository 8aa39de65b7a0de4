import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CLIENT_TOOLS, MAX_CLIENT_TOOLS_BYTES } from '../../../src/llm/client-tools.js';
import { parseAnthropicMessages } from '../../../src/http/chat/anthropic/anthropic-body.js';
import { parseOpenAiChat } from '../../../src/http/chat/openai/openai-body.js';
import { executeScript, scriptedLoop } from '../../fixtures/http-edges/scripted-loop.js';
import { serveGateway, type ServedGateway } from '../../fixtures/http-edges/serve-gateway.js';

/**
 * A client's tool definitions as the chat edges read them: mapped to `clientTools`, and every bad
 * one refused with a 400 in the client's own error shape (the real SDKs raise it), naming the
 * field and what to send instead. The loop is a script: nothing reaches an upstream.
 */

let gateway: ServedGateway;
const loop = scriptedLoop(executeScript);

beforeAll(async () => {
  gateway = await serveGateway({ runLoop: loop.runLoop, models: () => ({ models: [] }), health: () => ({}) });
});

afterAll(async () => {
  await gateway?.close();
});

const fn = (name: string, parameters: unknown = { type: 'object', properties: {} }) => ({ type: 'function', function: { name, parameters } });
const custom = (name: string, input_schema: unknown = { type: 'object', properties: {} }) => ({ name, input_schema });
const many = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));
const big = 'x'.repeat(MAX_CLIENT_TOOLS_BYTES);

async function openAiRefusal(fields: Record<string, unknown>): Promise<{ param: string | null | undefined; message: string }> {
  const openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...fields } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
  const error = await openai.chat.completions.create(body).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  const e = error as InstanceType<typeof OpenAI.BadRequestError>;
  expect(e.type).toBe('invalid_request_error');
  return { param: e.param, message: e.message };
}

async function anthropicRefusal(fields: Record<string, unknown>): Promise<string> {
  const anthropic = new Anthropic({ apiKey: 'sk-ant-test', baseURL: gateway.url, maxRetries: 0 });
  const body = { model: 'claude-local', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...fields } as unknown as Anthropic.MessageCreateParamsNonStreaming;
  const error = await anthropic.messages.create(body).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Anthropic.BadRequestError);
  const answer = (error as InstanceType<typeof Anthropic.BadRequestError>).error as { type: string; error: { type: string; message: string } };
  expect(answer).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  return answer.error.message;
}

describe('OpenAI tools', () => {
  it('maps tools, tool_choice and parallel_tool_calls to clientTools; no tools and no choice is none', () => {
    const parsed = parseOpenAiChat({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true } }, { type: 'function', function: { name: 'now' } }],
      tool_choice: { type: 'function', function: { name: 'now' } },
      parallel_tool_calls: false,
    });
    expect(parsed.request.clientTools).toEqual({
      tools: [
        { name: 'get_weather', description: 'Weather', parameters: { type: 'object' }, strict: true },
        { name: 'now', parameters: { type: 'object', properties: {} } },
      ],
      choice: { type: 'tool', name: 'now' },
      parallel: false,
    });
    expect(parseOpenAiChat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [] }).request.clientTools).toBeUndefined();
    expect(parseOpenAiChat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: null, tool_choice: null }).request.clientTools).toBeUndefined();
  });

  it('refuses tools that are not an array, or not function tools', async () => {
    expect(await openAiRefusal({ tools: { type: 'function' } })).toMatchObject({ param: 'tools', message: expect.stringMatching(/tools is invalid: must be an array of tools, each \{"type": "function"/) });
    expect(await openAiRefusal({ tools: [{ type: 'custom', custom: { name: 'x' } }] })).toMatchObject({ param: 'tools[0].type', message: expect.stringContaining('must be "function"') });
    expect(await openAiRefusal({ tools: [{ type: 'function', function: { description: 'no name' } }] })).toMatchObject({ param: 'tools[0].function.name', message: expect.stringContaining('is required') });
  });

  it(`refuses more than ${MAX_CLIENT_TOOLS} tools, and definitions over ${MAX_CLIENT_TOOLS_BYTES} bytes`, async () => {
    const tooMany = await openAiRefusal({ tools: many(MAX_CLIENT_TOOLS + 1, (i) => fn(`tool_${i}`)) });
    expect(tooMany).toMatchObject({ param: 'tools', message: expect.stringContaining(`has ${MAX_CLIENT_TOOLS + 1} tools; the gateway forwards at most ${MAX_CLIENT_TOOLS}`) });
    const oversized = await openAiRefusal({ tools: many(8, (i) => fn(`tool_${i}`, { type: 'object', description: big.slice(0, MAX_CLIENT_TOOLS_BYTES / 6) })) });
    expect(oversized).toMatchObject({ param: 'tools', message: expect.stringMatching(/bytes as JSON; the gateway forwards at most \d+: shorten descriptions and schemas/) });
  });

  it('refuses bad and repeated names, a schema that is not an object, and a choice of an unknown tool', async () => {
    expect(await openAiRefusal({ tools: [fn('get weather')] })).toMatchObject({ param: 'tools[0].function.name', message: expect.stringContaining('"get weather" is not a tool name upstreams accept: use 1 to 64 letters, digits, "_" or "-"') });
    expect(await openAiRefusal({ tools: [fn('a'.repeat(65))] })).toMatchObject({ param: 'tools[0].function.name' });
    expect(await openAiRefusal({ tools: [fn('a'), fn('a')] })).toMatchObject({ param: 'tools[1].function.name', message: expect.stringContaining('names an earlier tool too') });
    expect(await openAiRefusal({ tools: [fn('a', 'object')] })).toMatchObject({ param: 'tools[0].function.parameters', message: expect.stringContaining('must be a JSON Schema object') });
    expect(await openAiRefusal({ tools: [fn('a')], tool_choice: { type: 'function', function: { name: 'b' } } })).toMatchObject({ param: 'tool_choice', message: expect.stringContaining('names "b", which is not one of the request\'s tools') });
    expect(await openAiRefusal({ tool_choice: 'required' })).toMatchObject({ param: 'tool_choice', message: expect.stringContaining('asks for a tool call, but the request has no tools') });
    expect(await openAiRefusal({ tool_choice: 'sometimes', tools: [fn('a')] })).toMatchObject({ param: 'tool_choice' });
  });

  it('refuses the deprecated functions and function_call instead of dropping them', async () => {
    expect(await openAiRefusal({ functions: [{ name: 'a', parameters: {} }] })).toMatchObject({ param: 'functions', message: expect.stringContaining('send "tools"') });
    expect(await openAiRefusal({ function_call: 'auto' })).toMatchObject({ param: 'function_call', message: expect.stringContaining('send "tool_choice"') });
  });
});

describe('Anthropic tools', () => {
  it('maps tools and tool_choice (any is required, disable_parallel_tool_use is parallel: false)', () => {
    const parsed = parseAnthropicMessages({
      model: 'm',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } }, { type: 'custom', name: 'now', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
    });
    expect(parsed.request.clientTools).toEqual({
      tools: [
        { name: 'get_weather', description: 'Weather', parameters: { type: 'object' } },
        { name: 'now', parameters: { type: 'object' } },
      ],
      choice: { type: 'required' },
      parallel: false,
    });
  });

  it('refuses bad definitions in the Anthropic error shape, naming the field', async () => {
    expect(await anthropicRefusal({ tools: 'get_weather' })).toMatch(/tools is invalid: must be an array of tools, each \{"name"/);
    expect(await anthropicRefusal({ tools: many(MAX_CLIENT_TOOLS + 1, (i) => custom(`t${i}`)) })).toContain(`tools has ${MAX_CLIENT_TOOLS + 1} tools`);
    expect(await anthropicRefusal({ tools: [custom('a', { type: 'object', description: big })] })).toMatch(/tools is \d+ bytes as JSON/);
    expect(await anthropicRefusal({ tools: [custom('bad.name')] })).toContain('tools[0].name "bad.name" is not a tool name');
    expect(await anthropicRefusal({ tools: [{ name: 'a' }] })).toContain('tools[0].input_schema is required');
    expect(await anthropicRefusal({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] })).toContain('tools[0].type is "web_search_20250305"; the gateway forwards custom tools only');
    expect(await anthropicRefusal({ tools: [custom('a')], tool_choice: { type: 'tool' } })).toContain('tool_choice.name is required');
    expect(await anthropicRefusal({ tools: [custom('a')], tool_choice: { type: 'tool', name: 'b' } })).toContain('tool_choice.name names "b"');
    expect(await anthropicRefusal({ tools: [custom('a')], tool_choice: { type: 'maybe' } })).toMatch(/tool_choice\.type is invalid: must be "auto", "any", "tool" or "none"/);
  });
});

describe('the client history', () => {
  it('keeps calls native only when the request has tools and the id is not one of the gateway calls', () => {
    const messages = [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_kiwi_1', type: 'function', function: { name: 'word_count', arguments: '{"path":"README.md"}' } },
          { id: 'call_up', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_kiwi_1', content: '4' },
      { role: 'tool', tool_call_id: 'call_up', content: '21' },
    ];
    const withTools = parseOpenAiChat({ model: 'm', messages, tools: [fn('get_weather')] }).request.messages;
    expect(withTools.slice(1)).toEqual([
      { role: 'assistant', content: '(called word_count {"path":"README.md"})', toolCalls: [{ id: 'call_up', name: 'get_weather', arguments: '{}' }] },
      { role: 'tool', content: '(result of word_count)\n4' },
      { role: 'tool', content: '21', toolCallId: 'call_up' },
    ]);
    const without = parseOpenAiChat({ model: 'm', messages }).request.messages;
    expect(without.every((m) => m.toolCalls === undefined && m.toolCallId === undefined)).toBe(true);
  });

  it('reads Anthropic tool_use and tool_result blocks of the client tools as native, is_error kept', () => {
    const { request } = parseAnthropicMessages({
      model: 'm',
      max_tokens: 64,
      tools: [custom('get_weather')],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'no such city', is_error: true }] },
      ],
    });
    expect(request.messages.slice(1)).toEqual([
      { role: 'assistant', content: 'Checking.', toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
      { role: 'tool', content: 'no such city', toolCallId: 'toolu_1', isError: true },
    ]);
  });
});
