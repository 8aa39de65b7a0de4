import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../../../src/base/errors.js';
import type { LoopEvent } from '../../../../src/loop/loop-types.js';
import { serveScriptPerTest } from '../../../fixtures/http-edges/scripted-gateway.js';
import { EXECUTE_TEXT, executeScript, resolveScript, type Script } from '../../../fixtures/http-edges/scripted-loop.js';

/**
 * The real `openai` client against the gateway app served by @hono/node-server. The RunLoop is
 * a script of LoopEvents: the agent loop itself is tested elsewhere; this checks that the edge
 * renders its events as OpenAI Chat Completions a real client accepts.
 */

const serve = serveScriptPerTest({ models: () => ({ models: [{ id: 'gpt-4o-mini', ownedBy: 'openai' }] }) });

async function client(script: Script) {
  const { url, loop } = await serve(script);
  return { openai: new OpenAI({ apiKey: 'sk-test', baseURL: `${url}/v1`, maxRetries: 0 }), loop };
}

const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is in the README?' }] };

describe('OpenAI SDK, execute mode', () => {
  it('reads a non-streamed answer: the text with intents, calls and results rendered, kiwi events, usage', async () => {
    const { openai, loop } = await client(executeScript);
    const completion = await openai.chat.completions.create(ask);
    expect(completion.id).toBe('kiwi-resp-1');
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe(EXECUTE_TEXT);
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toEqual({ prompt_tokens: 42, completion_tokens: 17, total_tokens: 59 });
    const kiwi = (completion as unknown as { kiwi: { events: LoopEvent[] } }).kiwi;
    expect(kiwi.events.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(loop.calls[0]?.options.mode).toBe('execute');
    expect(loop.calls[0]?.request.messages).toEqual([{ role: 'user', content: 'What is in the README?' }]);
  });

  it('streams chunks the SDK iterates: content deltas add up, kiwi fields carry the loop events', async () => {
    const { openai } = await client(executeScript);
    const stream = await openai.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
    let text = '';
    const kiwi: LoopEvent[] = [];
    let finish: string | null | undefined;
    let seenUsage: unknown;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      const extra = (chunk as unknown as { kiwi?: LoopEvent }).kiwi;
      if (extra !== undefined) kiwi.push(extra);
      if (chunk.usage) seenUsage = chunk.usage;
    }
    expect(text).toBe(EXECUTE_TEXT);
    expect(finish).toBe('stop');
    expect(seenUsage).toEqual({ prompt_tokens: 42, completion_tokens: 17, total_tokens: 59 });
    expect(kiwi.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(kiwi.find((e) => e.type === 'result')).toMatchObject({ tool: 'read_file', text: '# Kiwi\nA gateway.' });
  });

  it('works with the chat.completions.stream helper: content events and finalChatCompletion', async () => {
    const { openai } = await client(executeScript);
    const stream = openai.chat.completions.stream(ask);
    let deltas = '';
    stream.on('content.delta', (e) => {
      deltas += e.delta;
    });
    const final = await stream.finalChatCompletion();
    expect(deltas).toBe(EXECUTE_TEXT);
    expect(final.choices[0]?.message.content).toBe(EXECUTE_TEXT);
    expect(final.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('OpenAI SDK, resolve-only mode', () => {
  it('hands the call over as a native tool call in a non-streamed answer, and hides the intent', async () => {
    const { openai, loop } = await client(resolveScript);
    const completion = await openai.chat.completions.create({ ...ask, model: 'gpt-4o-mini+resolve-only' });
    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBe('Checking. ');
    expect(choice?.message.tool_calls).toEqual([{ id: 'call_7', type: 'function', function: { name: 'read_file', arguments: '{"path":"README.md"}' } }]);
    expect(loop.calls[0]?.options.mode).toBe('resolve-only');
    expect(loop.calls[0]?.request.model).toBe('gpt-4o-mini');
  });

  it('streams the tool call: the stream helper assembles it and reports finish_reason tool_calls', async () => {
    const { openai } = await client(resolveScript);
    const stream = openai.chat.completions.stream(ask, { headers: { 'x-kiwi-mode': 'resolve-only' } });
    const done: { name: string; arguments: string }[] = [];
    stream.on('tool_calls.function.arguments.done', (e) => done.push({ name: e.name, arguments: e.arguments }));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({ id: 'call_7', type: 'function', function: { name: 'read_file', arguments: '{"path":"README.md"}' } });
    expect(final.choices[0]?.message.content).toBe('Checking. ');
    expect(done).toEqual([{ name: 'read_file', arguments: '{"path":"README.md"}' }]);
  });

  it('sends a resolve-only history back up as text: tool_calls and tool results the upstream can read', async () => {
    const { openai, loop } = await client(executeScript);
    await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'user', content: 'Read a' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'contents of a' },
      ],
    });
    expect(loop.calls[0]?.request.messages).toEqual([
      { role: 'user', content: 'Read a' },
      { role: 'assistant', content: '(called read_file {"path":"a"})' },
      { role: 'tool', content: '(result of read_file)\ncontents of a' },
    ]);
  });
});

describe('OpenAI SDK, errors', () => {
  it('an unknown model is a 404 NotFoundError with code model_not_found', async () => {
    const { openai } = await client(() => {
      throw new KiwiError('UNKNOWN_MODEL', 'No upstream serves model "nope"; pick one from GET /v1/models');
    });
    const error = await openai.chat.completions.create({ ...ask, model: 'nope' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    expect((error as Error).message).toContain('No upstream serves model "nope"');
  });

  it('an upstream 429 reaches the client as a RateLimitError, the upstream type kept', async () => {
    const { openai } = await client(async function* () {
      yield* [];
      throw new KiwiError('UPSTREAM_HTTP', 'upstream answered 429 rate_limit_exceeded: slow down; retry later', {
        details: { status: 429, provider: 'openai', type: 'requests', code: 'rate_limit_exceeded' },
      });
    });
    const error = await openai.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).type).toBe('requests');
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded');
  });

  it('a loop that fails after the stream started ends it with an error the SDK throws', async () => {
    const { openai } = await client(async function* () {
      yield { type: 'start', id: 'r', model: 'gpt-4o-mini' } satisfies LoopEvent;
      yield { type: 'text', text: 'Half an ans' } satisfies LoopEvent;
      throw new KiwiError('UPSTREAM_HTTP', 'upstream sent an error in the middle of the stream: overloaded; retry later', { details: { status: 529, provider: 'anthropic' } });
    });
    const stream = await openai.chat.completions.create({ ...ask, stream: true });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(text).toBe('Half an ans');
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain('in the middle of the stream');
  });
});

describe('OpenAI SDK, model list', () => {
  it('lists the models, demo ones marked', async () => {
    const { url } = await serve([], {
      models: () => ({
        models: [
          { id: 'gpt-4o-mini', ownedBy: 'openai' },
          { id: 'kiwi-demo', ownedBy: 'kiwi', demo: true },
        ],
      }),
    });
    const openai = new OpenAI({ apiKey: 'sk-test', baseURL: `${url}/v1`, maxRetries: 0 });
    const models = [];
    for await (const m of openai.models.list()) models.push(m);
    expect(models).toEqual([
      { id: 'gpt-4o-mini', object: 'model', created: 0, owned_by: 'openai' },
      { id: 'kiwi-demo', object: 'model', created: 0, owned_by: 'kiwi', demo: true },
    ]);
  });
});
