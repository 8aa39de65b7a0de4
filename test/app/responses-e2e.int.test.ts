import OpenAI from 'openai';
import type { ResponseFunctionToolCall, ResponseInputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Listener } from '../../src/http/server/listen.js';
import { serveDemoGateway, type DemoGateway } from '../helpers/demo-gateway.js';
import { openAiStream } from '../helpers/openai-sse.js';
import type { ReplayLlmServer } from '../helpers/replay-llm-server.js';

/**
 * `POST /v1/responses` through the whole gateway as `kiwi serve` wires it, on a copy of the demo
 * `.ai/` (real resolver, tool proxy and tools), with the real `openai` client's `responses` API.
 * Upstreams: the offline demo model, and a local server replaying OpenAI Chat Completions
 * streams, which shows what the gateway sent upstream for a Responses request.
 */

let llm: ReplayLlmServer;
let server: Listener;
let served: DemoGateway | undefined;
let openai: OpenAI;

beforeAll(async () => {
  served = await serveDemoGateway();
  ({ server, llm } = served);
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const EXACT_TURN = ['Counting: [TOOL: word_co', 'unt {"path": "READ', 'ME.md"}]'];
type Upstream = { messages: { role: string; content: string }[]; input?: unknown; tools?: unknown };
const upstreamBody = (at: number): Upstream => (llm.requests.at(at)?.body ?? { messages: [] }) as Upstream;

describe('the Responses API through the gateway', () => {
  it('answers plain text from the offline demo model, streamed and not', async () => {
    const response = await openai.responses.create({ model: 'kiwi-demo', input: 'hello there' });
    expect(response.status).toBe('completed');
    expect(response.output_text).toContain('(offline demo model)');
    const stream = openai.responses.stream({ model: 'kiwi-demo', input: 'hello there' });
    let deltas = '';
    stream.on('response.output_text.delta', (e) => {
      deltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toContain('(offline demo model)');
    expect(final.output_text).toBe(deltas);
  });

  it('runs an exact-call intent and continues upstream with its result; the upstream got Chat Completions, instructions first', async () => {
    llm.replyOnce(openAiStream(EXACT_TURN), openAiStream(['The README has ', '4 words.']));
    const stream = await openai.responses.create({ model: 'gpt-4o-mini', instructions: 'Answer in one line.', input: 'How many words are in the README?', stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.at(-1)?.type).toBe('response.completed');
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toContain('→ word_count {"path":"README.md"}');
    expect(text).toMatch(/"words": 4/);
    expect(text).toContain('The README has 4 words.');

    const first = upstreamBody(-2);
    expect(first.input).toBeUndefined();
    expect(first.messages[0]?.role).toBe('system');
    expect(first.messages[0]?.content).toContain('Answer in one line.');
    expect(first.messages.at(-1)).toEqual({ role: 'user', content: 'How many words are in the README?' });
    expect(upstreamBody(-1).messages.at(-1)?.content).toMatch(/word_count[\s\S]*"words": 4/);
  });

  it('hands the call out as a function_call item in resolve-only mode, and reads the function_call_output follow-up', async () => {
    llm.replyOnce(openAiStream(EXACT_TURN));
    const before = llm.requests.length;
    const asked = await openai.responses.create({ model: 'gpt-4o-mini+resolve-only', input: 'How many words are in the README?' });
    expect(llm.requests.length).toBe(before + 1);
    const call = asked.output.find((o): o is ResponseFunctionToolCall => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'word_count', status: 'completed' });
    expect(JSON.parse(call?.arguments ?? '')).toEqual({ path: 'README.md' });

    // The client runs the call itself and sends the history back, as the Responses docs show.
    llm.replyOnce(openAiStream(['It has 4 words.']));
    const history: ResponseInputItem[] = [{ role: 'user', content: 'How many words are in the README?' }, ...(asked.output as ResponseInputItem[]), { type: 'function_call_output', call_id: call?.call_id ?? '', output: '{"words": 4}' }];
    const answered = await openai.responses.create({ model: 'gpt-4o-mini+resolve-only', input: history });
    expect(answered.output_text).toBe('It has 4 words.');
    const sent = upstreamBody(-1).messages;
    expect(sent.at(-2)).toEqual({ role: 'assistant', content: 'Counting: \n(called word_count {"path":"README.md"})' });
    expect(sent.at(-1)).toEqual({ role: 'user', content: '(result of word_count)\n{"words": 4}' });
  });

  it('answers a model no upstream serves with a 404 the client raises', async () => {
    const error = await openai.responses.create({ model: 'no-such-model', input: 'hi' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as Error).message).toMatch(/no-such-model/);
  });
});
