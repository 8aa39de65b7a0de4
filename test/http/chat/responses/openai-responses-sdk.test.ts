import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../../../src/base/errors.js';
import type { LoopEvent } from '../../../../src/loop/loop-types.js';
import { serveScriptPerTest } from '../../../fixtures/http-edges/scripted-gateway.js';
import { EXECUTE_TEXT, executeScript, resolveScript, usage, type Script } from '../../../fixtures/http-edges/scripted-loop.js';

/**
 * The real `openai` client's `responses` API against the gateway app. The RunLoop is a script
 * of LoopEvents: this checks that the edge reads Responses bodies into the gateway's request and
 * writes loop events as Responses objects and stream events the SDK (and its stream helper,
 * which refuses events out of order) accepts.
 */

const serve = serveScriptPerTest({ models: () => ({ models: [{ id: 'gpt-4o-mini', ownedBy: 'openai' }] }) });

async function client(script: Script) {
  const { url, loop } = await serve(script);
  return { openai: new OpenAI({ apiKey: 'sk-test', baseURL: `${url}/v1`, maxRetries: 0 }), loop };
}

const ask = { model: 'gpt-4o-mini', input: 'What is in the README?' };
const USAGE = { input_tokens: 42, input_tokens_details: { cached_tokens: 0 }, output_tokens: 17, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 59 };

async function collect(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('Responses API, execute mode', () => {
  it('answers with one message item holding the rendered text, usage, and the kiwi events', async () => {
    const { openai, loop } = await client(executeScript);
    const response = await openai.responses.create({ ...ask, instructions: 'Be brief.' });
    expect(response.id).toBe('kiwi-resp-1');
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe(EXECUTE_TEXT);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: EXECUTE_TEXT, annotations: [] }] });
    expect(response.usage).toEqual(USAGE);
    const kiwi = (response as unknown as { kiwi: { events: LoopEvent[] } }).kiwi;
    expect(kiwi.events.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(loop.calls[0]?.options.mode).toBe('execute');
    expect(loop.calls[0]?.request.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is in the README?' },
    ]);
  });

  it('streams the events in order: created, the item and its part, deltas that add up, done events, completed', async () => {
    const { openai } = await client(executeScript);
    const events = await collect(await openai.responses.create({ ...ask, stream: true }));
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas.join('')).toBe(EXECUTE_TEXT);
    const done = events.find((e) => e.type === 'response.output_text.done');
    expect(done?.type === 'response.output_text.done' ? done.text : undefined).toBe(EXECUTE_TEXT);
    const completed = events.at(-1);
    expect(completed?.type === 'response.completed' ? completed.response.usage : undefined).toEqual(USAGE);
    // The steps that show as text ride on their delta.
    const kiwi = events.flatMap((e) => {
      const extra = (e as unknown as { kiwi?: LoopEvent }).kiwi;
      return extra === undefined ? [] : [extra.type];
    });
    expect(kiwi).toEqual(['intent', 'call', 'result']);
  });

  it('works with the responses.stream helper: text deltas and finalResponse', async () => {
    const { openai } = await client(executeScript);
    const stream = openai.responses.stream(ask);
    let deltas = '';
    stream.on('response.output_text.delta', (e) => {
      deltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(deltas).toBe(EXECUTE_TEXT);
    expect(final.output_text).toBe(EXECUTE_TEXT);
    expect(final.status).toBe('completed');
  });

  it('a stop at the token limit is an incomplete response with its reason', async () => {
    const { openai } = await client([
      { type: 'start', id: 'r', model: 'gpt-4o-mini' },
      { type: 'text', text: 'Cut sh' },
      { type: 'finish', reason: 'length', usage, turns: 1, toolCalls: 0 },
    ]);
    const response = await openai.responses.create({ ...ask, max_output_tokens: 2 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    const events = await collect(await openai.responses.create({ ...ask, stream: true }));
    expect(events.at(-1)?.type).toBe('response.incomplete');
  });
});

describe('Responses API, resolve-only mode', () => {
  it('hands the call over as a function_call item after the text, and hides the intent', async () => {
    const { openai, loop } = await client(resolveScript);
    const response = await openai.responses.create({ ...ask, model: 'gpt-4o-mini+resolve-only' });
    expect(response.output).toEqual([
      expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'Checking. ' })] }),
      expect.objectContaining({ type: 'function_call', call_id: 'call_7', name: 'read_file', arguments: '{"path":"README.md"}', status: 'completed' }),
    ]);
    expect(loop.calls[0]?.options.mode).toBe('resolve-only');
    expect(loop.calls[0]?.request.model).toBe('gpt-4o-mini');
  });

  it('streams the function_call item; the stream helper assembles it', async () => {
    const { openai } = await client(resolveScript);
    const stream = openai.responses.stream(ask, { headers: { 'x-kiwi-mode': 'resolve-only' } });
    const argsDone: { name: string; arguments: string }[] = [];
    stream.on('response.function_call_arguments.done', (e) => argsDone.push({ name: e.name, arguments: e.arguments }));
    const final = await stream.finalResponse();
    expect(argsDone).toEqual([{ name: 'read_file', arguments: '{"path":"README.md"}' }]);
    expect(final.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(final.output[1]).toMatchObject({ call_id: 'call_7', name: 'read_file', arguments: '{"path":"README.md"}' });
    expect(final.output_text).toBe('Checking. ');
  });

  it('reads a follow-up: the function_call and its function_call_output go up as text the upstream can read', async () => {
    const { openai, loop } = await client(executeScript);
    await openai.responses.create({
      model: 'gpt-4o-mini',
      input: [
        { role: 'user', content: 'Read a' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }], id: 'msg_1', status: 'completed' },
        { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'contents of a' },
        { type: 'function_call_output', call_id: 'call_unknown', output: [{ type: 'input_text', text: 'orphan' }] },
      ],
    });
    expect(loop.calls[0]?.request.messages).toEqual([
      { role: 'user', content: 'Read a' },
      { role: 'assistant', content: 'Checking.\n(called read_file {"path":"a"})' },
      { role: 'tool', content: '(result of read_file)\ncontents of a' },
      { role: 'tool', content: 'orphan' },
    ]);
  });
});

describe('Responses API, tools', () => {
  it("reads function tools, tool_choice and parallel_tool_calls into the request's client tools, and keeps Responses-only fields off the upstream", async () => {
    const { openai, loop } = await client(executeScript);
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    await openai.responses.create({ ...ask, tools: [{ type: 'function', name: 'get_weather', description: 'Weather now', parameters, strict: true }], tool_choice: { type: 'function', name: 'get_weather' }, parallel_tool_calls: false, top_p: 0.5, store: true, reasoning: { effort: 'low' } });
    expect(loop.calls[0]?.request.clientTools).toEqual({ tools: [{ name: 'get_weather', description: 'Weather now', parameters, strict: true }], choice: { type: 'tool', name: 'get_weather' }, parallel: false });
    // Only Chat Completions fields: the Responses-only ones (store, reasoning) never reach an upstream.
    expect(loop.calls[0]?.request.extra).toEqual({ top_p: 0.5 });
  });

  it('refuses a hosted tool, naming it and what the gateway passes instead', async () => {
    const { openai, loop } = await client(executeScript);
    const error = await openai.responses.create({ ...ask, tools: [{ type: 'web_search' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools[0].type');
    expect((error as Error).message).toMatch(/"web_search"; the gateway passes function tools only/);
    expect(loop.calls).toHaveLength(0);
  });
});

describe('Responses API, errors', () => {
  it('an unknown model is a 404 NotFoundError with code model_not_found', async () => {
    const { openai } = await client(() => {
      throw new KiwiError('UNKNOWN_MODEL', 'No upstream serves model "nope"; pick one from GET /v1/models');
    });
    const error = await openai.responses.create({ ...ask, model: 'nope', stream: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });

  it('a loop that fails after the stream started ends it with error and response.failed, the text so far kept', async () => {
    const { openai } = await client(async function* () {
      yield { type: 'start', id: 'r', model: 'gpt-4o-mini' } satisfies LoopEvent;
      yield { type: 'text', text: 'Half an ans' } satisfies LoopEvent;
      throw new KiwiError('UPSTREAM_HTTP', 'upstream sent an error in the middle of the stream: overloaded; retry later', { details: { status: 529, provider: 'anthropic' } });
    });
    const events = await collect(await openai.responses.create({ ...ask, stream: true }));
    const [error, failed] = events.slice(-2);
    expect(error).toMatchObject({ type: 'error', code: 'server_error', message: expect.stringContaining('in the middle of the stream') });
    expect(failed?.type).toBe('response.failed');
    if (failed?.type !== 'response.failed') return;
    expect(failed.response.status).toBe('failed');
    expect(failed.response.error?.message).toContain('in the middle of the stream');
    expect(failed.response.output[0]).toMatchObject({ type: 'message', status: 'incomplete', content: [{ text: 'Half an ans' }] });
    // The stream helper rejects with the error event, as it does for OpenAI's own.
    const raised = await openai.responses.stream(ask).finalResponse().catch((e: unknown) => e);
    expect(raised).toMatchObject({ type: 'error', message: expect.stringContaining('in the middle of the stream') });
  });
});
