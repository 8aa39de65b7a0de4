import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuditTail } from '../../src/audit/audit-reader.js';
import type { Gateway } from '../../src/app/open-gateway.js';
import type { Listener } from '../../src/http/server/listen.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import type { ReplayLlmServer } from '../helpers/replay-llm-server.js';

/**
 * The client's own tools through the whole gateway, on a copy of the demo `.ai/`: the real
 * `openai` and `@anthropic-ai/sdk` clients send tools, the replay upstream (OpenAI for `gpt-*`,
 * Anthropic for `claude-*`) records what reached it and answers with native calls, and
 * `[TOOL: …]` intents in the same turn are run by the gateway.
 */

let llm: ReplayLlmServer;
let gateway: Gateway;
let server: Listener;
let served: DemoGateway | undefined;

beforeAll(async () => {
  served = await serveDemoGateway({
    prefix: 'kiwi-native-',
    upstreams: (url) => [
      `{ name: openai-up, kind: openai, base_url: "${url}/v1", models: ["gpt-*"] }`,
      `{ name: anthropic-up, kind: anthropic, base_url: "${url}", api_key_env: TEST_ANTHROPIC_KEY, models: ["claude-*"] }`,
    ],
    extraEnv: { TEST_ANTHROPIC_KEY: 'sk-ant-test' },
  });
  ({ gateway, server, llm } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const WEATHER_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const OPENAI_TOOLS: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA } }];
const ANTHROPIC_TOOLS: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Current weather in a city', input_schema: WEATHER_SCHEMA as Anthropic.Tool.InputSchema }];
const EXACT_INTENT = 'Counting. [TOOL: word_count {"path": "README.md"}] And the weather:';

type Sent = { messages: Record<string, unknown>[]; tools?: unknown; tool_choice?: unknown; parallel_tool_calls?: unknown };
const sent = (i: number): Sent => llm.requests[i]?.body as Sent;
const openai = () => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: server.url, apiKey: 'not-used', maxRetries: 0 });

describe('the openai client with its own tools', () => {
  it('sends the tools upstream beside the intent instructions and gets the native call back to run', async () => {
    llm.replyOnce(openAiStream(['Let me check.'], { toolCalls: [{ id: 'call_up_1', name: 'get_weather', arguments: ['{"city":', '"Paris"}'] }] }));
    const before = llm.requests.length;
    const completion = await openai().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: OPENAI_TOOLS,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBe('Let me check.');
    expect(choice?.message.tool_calls).toEqual([{ id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    expect(llm.requests.length).toBe(before + 1);
    const up = sent(before);
    expect(up.tools).toEqual(OPENAI_TOOLS);
    expect(up.tool_choice).toBe('auto');
    expect(up.parallel_tool_calls).toBe(false);
    expect(up.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('[TOOL:') });
    expect(up.messages[0]?.['content']).toContain("The functions given to you as tools are the user's own");
  });

  it('runs the intent of a turn that also calls a native tool, streams both, and ends the turn with tool_calls', async () => {
    llm.replyOnce(openAiStream([EXACT_INTENT], { toolCalls: [{ id: 'call_up_2', name: 'get_weather', arguments: ['{"city": "Paris"}'] }] }));
    const before = llm.requests.length;
    const question = { role: 'user' as const, content: 'Count the README words and tell me the weather in Paris.' };
    const stream = openai().chat.completions.stream({ model: 'gpt-4o-mini', messages: [question], tools: OPENAI_TOOLS });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0]?.message;
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message?.content).toContain('→ word_count {"path":"README.md"}');
    expect(message?.content).toMatch(/"words": 4/);
    expect(message?.tool_calls).toEqual([{ id: 'call_up_2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }]);
    // The native call is pending, so the intent's result was not fed back upstream in this request.
    expect(llm.requests.length).toBe(before + 1);
    await gateway.project.audit.flush();
    const audited = await readAuditTail({ dir: gateway.project.auditDir, limit: 20, session: gateway.project.session });
    expect(audited.some((r) => r.tool === 'word_count' && r.source === 'gateway')).toBe(true);

    // The follow-up carries the client's result: the native call and its answer go up natively,
    // the intent's result inside the assistant text the client kept.
    llm.replyOnce(openAiStream(['It is 21 °C, and the README has 4 words.']));
    const next = await openai().chat.completions.create({
      model: 'gpt-4o-mini',
      tools: OPENAI_TOOLS,
      messages: [
        question,
        { role: 'assistant', content: message?.content ?? null, tool_calls: [{ id: 'call_up_2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_up_2', content: '{"temp_c": 21}' },
      ],
    });
    expect(next.choices[0]?.message.content).toBe('It is 21 °C, and the README has 4 words.');
    expect(next.choices[0]?.finish_reason).toBe('stop');
    const up = sent(before + 1);
    expect(up.tools).toEqual(OPENAI_TOOLS);
    expect(up.messages.slice(1)).toEqual([
      question,
      { role: 'assistant', content: message?.content, tool_calls: [{ id: 'call_up_2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_up_2', content: '{"temp_c": 21}' },
    ]);
  });

  it('in resolve-only mode hands out the resolved intent and the native call together, with distinct ids; both results go back up', async () => {
    llm.replyOnce(openAiStream(['[TOOL: word_count {"path": "README.md"}]'], { toolCalls: [{ id: 'call_up_3', name: 'get_weather', arguments: ['{"city":"Oslo"}'] }] }));
    const before = llm.requests.length;
    const question = { role: 'user' as const, content: 'Words in the README, and the weather in Oslo?' };
    const completion = await openai().chat.completions.create({ model: 'gpt-4o-mini+resolve-only', messages: [question], tools: OPENAI_TOOLS });
    const calls = completion.choices[0]?.message.tool_calls ?? [];
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []))).toEqual([
      ['word_count', '{"path":"README.md"}'],
      ['get_weather', '{"city":"Oslo"}'],
    ]);
    const [kiwiId, nativeId] = calls.map((c) => c.id);
    expect(kiwiId).toMatch(/^call_kiwi_/);
    expect(nativeId).toBe('call_up_3');

    llm.replyOnce(openAiStream(['4 words; 3 °C in Oslo.']));
    await openai().chat.completions.create({
      model: 'gpt-4o-mini+resolve-only',
      tools: OPENAI_TOOLS,
      messages: [
        question,
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: kiwiId ?? '', content: '{"words": 4}' },
        { role: 'tool', tool_call_id: 'call_up_3', content: '{"temp_c": 3}' },
      ],
    });
    expect(sent(before + 1).messages.slice(2)).toEqual([
      { role: 'assistant', content: '(called word_count {"path":"README.md"})', tool_calls: [{ id: 'call_up_3', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_up_3', content: '{"temp_c": 3}' },
      { role: 'user', content: '(result of word_count)\n{"words": 4}' },
    ]);
  });

  it('the offline demo model ignores the client tools and answers in text', async () => {
    const before = llm.requests.length;
    const completion = await openai().chat.completions.create({ model: 'kiwi-demo', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: OPENAI_TOOLS });
    expect(completion.choices[0]?.message.tool_calls).toBeUndefined();
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(llm.requests.length).toBe(before);
  });
});

describe('the anthropic client with its own tools', () => {
  it('sends them upstream as Anthropic tools and gets the tool_use block back, not streamed and streamed', async () => {
    llm.replyOnce('anthropic-native-tool-use', 'anthropic-native-tool-use');
    const before = llm.requests.length;
    const ask = { model: 'claude-sonnet-4-20250514', max_tokens: 512, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools: ANTHROPIC_TOOLS, tool_choice: { type: 'auto' as const } };
    const expected = [
      { type: 'text', text: "I'll check the weather in Paris." },
      { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: { city: 'Paris', unit: 'c' } },
    ];
    const message = await anthropic().messages.create(ask);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual(expected);
    const streamed = await anthropic().messages.stream(ask).finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.content).toEqual(expected);
    const up = sent(before);
    expect(up.tools).toEqual(ANTHROPIC_TOOLS);
    expect(up.tool_choice).toEqual({ type: 'auto' });
    expect(llm.requests[before]?.path).toBe('/v1/messages');

    llm.replyOnce('anthropic-plain');
    const next = await anthropic().messages.create({
      ...ask,
      messages: [
        ...ask.messages,
        { role: 'assistant', content: message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: '21 °C' }] },
      ],
    });
    expect(next.stop_reason).toBe('end_turn');
    expect(sent(before + 2).messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: expected },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: '21 °C' }] },
    ]);
  });
});

describe('the openai client with its own tools on the Responses API', () => {
  it('sends the function tools upstream, hands the native call back as a function_call item, and forwards its output as the tool result', async () => {
    llm.replyOnce(openAiStream(['Let me check.'], { toolCalls: [{ id: 'call_up_r1', name: 'get_weather', arguments: ['{"city":"Paris"}'] }] }));
    const before = llm.requests.length;
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA, strict: false }];
    const response = await openai().responses.create({ model: 'gpt-4o-mini', input: 'Weather in Paris?', tools });
    const call = response.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_up_r1', name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(sent(before).tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: WEATHER_SCHEMA, strict: false } }]);

    llm.replyOnce(openAiStream(['It is sunny in Paris.']));
    const next = await openai().responses.create({
      model: 'gpt-4o-mini',
      tools,
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'call_up_r1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_up_r1', output: '{"sky": "sunny"}' },
      ],
    });
    expect(next.output_text).toContain('It is sunny in Paris.');
    const messages = sent(llm.requests.length - 1).messages;
    expect(messages.at(-2)).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_up_r1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
    expect(messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_up_r1', content: '{"sky": "sunny"}' });
  });
});
