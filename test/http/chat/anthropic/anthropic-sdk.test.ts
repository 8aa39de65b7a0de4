import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../../../src/base/errors.js';
import type { LoopEvent } from '../../../../src/loop/loop-types.js';
import { serveScriptPerTest } from '../../../fixtures/http-edges/scripted-gateway.js';
import { EXECUTE_TEXT, executeScript, resolveScript, type Script } from '../../../fixtures/http-edges/scripted-loop.js';

/**
 * The real `@anthropic-ai/sdk` client against the gateway app served by @hono/node-server. The
 * RunLoop is a script of LoopEvents: the agent loop itself is tested elsewhere; this checks that
 * the edge renders its events as Anthropic Messages a real client accepts, including the extra
 * `event: kiwi` SSE events, which the SDK must pass by.
 */

const serve = serveScriptPerTest({ models: () => ({ models: [{ id: 'claude-local', ownedBy: 'anthropic' }] }) });

async function client(script: Script) {
  const { url, loop } = await serve(script);
  return { anthropic: new Anthropic({ apiKey: 'sk-ant-test', baseURL: url, maxRetries: 0 }), loop };
}

const ask = { model: 'claude-local', max_tokens: 512, messages: [{ role: 'user' as const, content: 'What is in the README?' }] };

const textOf = (content: Anthropic.ContentBlock[]) => content.map((b) => (b.type === 'text' ? b.text : '')).join('');

describe('Anthropic SDK, execute mode', () => {
  it('reads a non-streamed message: rendered text, stop reason, usage, kiwi events', async () => {
    const { anthropic, loop } = await client(executeScript);
    const message = await anthropic.messages.create({ ...ask, system: 'Be brief.' });
    expect(message.id).toBe('kiwi-resp-1');
    expect(message.content).toEqual([{ type: 'text', text: EXECUTE_TEXT }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 42, output_tokens: 17 });
    const kiwi = (message as unknown as { kiwi: { events: LoopEvent[] } }).kiwi;
    expect(kiwi.events.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
    expect(loop.calls[0]?.request).toMatchObject({
      model: 'claude-local',
      maxTokens: 512,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'What is in the README?' },
      ],
    });
  });

  it('streams raw events: the kiwi events arrive between the standard ones, in order', async () => {
    const { anthropic } = await client(executeScript);
    const stream = await anthropic.messages.create({ ...ask, stream: true });
    const types: string[] = [];
    const kiwi: LoopEvent[] = [];
    let text = '';
    for await (const event of stream) {
      const raw = event as unknown as { type: string; event?: LoopEvent };
      types.push(raw.type);
      if (raw.type === 'kiwi' && raw.event !== undefined) kiwi.push(raw.event);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toBe(EXECUTE_TEXT);
    expect(types[0]).toBe('message_start');
    expect(types.slice(-3)).toEqual(['kiwi', 'message_delta', 'message_stop']);
    expect(kiwi.map((e) => e.type)).toEqual(['start', 'intent', 'call', 'result', 'turn', 'finish']);
  });

  it('works with messages.stream(): text events and finalMessage, the kiwi events ignored', async () => {
    const { anthropic } = await client(executeScript);
    const stream = anthropic.messages.stream(ask);
    let deltas = '';
    stream.on('text', (delta) => {
      deltas += delta;
    });
    const final = await stream.finalMessage();
    expect(deltas).toBe(EXECUTE_TEXT);
    expect(textOf(final.content)).toBe(EXECUTE_TEXT);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBe(17);
    expect(final.usage.input_tokens).toBe(42);
    expect(await stream.finalText()).toBe(EXECUTE_TEXT);
  });
});

describe('Anthropic SDK, resolve-only mode', () => {
  it('hands the call over as a tool_use block in a non-streamed message', async () => {
    const { anthropic, loop } = await client(resolveScript);
    const message = await anthropic.messages.create({ ...ask, model: 'claude-local+resolve-only' });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Checking. ' },
      { type: 'tool_use', id: 'call_7', name: 'read_file', input: { path: 'README.md' } },
    ]);
    expect(loop.calls[0]?.options.mode).toBe('resolve-only');
    expect(loop.calls[0]?.request.model).toBe('claude-local');
  });

  it('streams the tool_use block: messages.stream() assembles its input', async () => {
    const { anthropic } = await client(resolveScript);
    const stream = anthropic.messages.stream(ask, { headers: { 'x-kiwi-mode': 'resolve-only' } });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'text', text: 'Checking. ' },
      { type: 'tool_use', id: 'call_7', name: 'read_file', input: { path: 'README.md' } },
    ]);
  });

  it('sends a resolve-only history back up as text: tool_use and tool_result blocks the upstream can read', async () => {
    const { anthropic, loop } = await client(executeScript);
    await anthropic.messages.create({
      ...ask,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read a' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Sure.' }, { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'contents of a' }] },
            { type: 'text', text: 'Now summarize.' },
        ],
        },
      ],
    });
    expect(loop.calls[0]?.request.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Read a' },
      { role: 'assistant', content: 'Sure.\n(called read_file {"path":"a"})' },
      { role: 'tool', content: '(result of read_file)\ncontents of a' },
      { role: 'user', content: 'Now summarize.' },
    ]);
  });
});

describe('Anthropic SDK, errors', () => {
  it('an unknown model is a 404 NotFoundError of type not_found_error', async () => {
    const { anthropic } = await client(() => {
      throw new KiwiError('UNKNOWN_MODEL', 'No upstream serves model "nope"; pick one from GET /v1/models');
    });
    const error = await anthropic.messages.create({ ...ask, model: 'nope' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('an upstream 401 passes through as an AuthenticationError; an upstream 503 is a 502', async () => {
    let status = 401;
    const { anthropic } = await client(async function* () {
      yield* [];
      throw new KiwiError('UPSTREAM_HTTP', `upstream answered ${status}; check the API key`, { details: { status, provider: 'anthropic', type: status === 401 ? 'authentication_error' : 'api_error' } });
    });
    const auth = await anthropic.messages.create(ask).catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);
    status = 503;
    const server = await anthropic.messages.create(ask).catch((e: unknown) => e);
    expect(server).toBeInstanceOf(Anthropic.InternalServerError);
    expect((server as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
  });

  it('a loop that fails after the stream started ends it with an error event the SDK throws', async () => {
    const { anthropic } = await client(async function* () {
      yield { type: 'start', id: 'r', model: 'claude-local' } satisfies LoopEvent;
      yield { type: 'text', text: 'Half an ans' } satisfies LoopEvent;
      throw new KiwiError('UPSTREAM_HTTP', 'upstream sent an error in the middle of the stream: overloaded; retry later', { details: { status: 529, provider: 'anthropic' } });
    });
    const stream = anthropic.messages.stream(ask);
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const error = await stream.finalMessage().catch((e: unknown) => e);
    expect(text).toBe('Half an ans');
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect((error as Error).message).toContain('in the middle of the stream');
  });
});

describe('Anthropic SDK, model list', () => {
  it('lists the models in the Anthropic shape, demo ones marked', async () => {
    const { url } = await serve([], {
      models: () => ({
        models: [
          { id: 'claude-local', ownedBy: 'anthropic' },
          { id: 'kiwi-demo', ownedBy: 'kiwi', demo: true },
        ],
      }),
    });
    const anthropic = new Anthropic({ apiKey: 'sk-ant-test', baseURL: url, maxRetries: 0 });
    const models = [];
    for await (const m of anthropic.models.list()) models.push(m);
    expect(models.map((m) => m.id)).toEqual(['claude-local', 'kiwi-demo']);
    expect(models[1]).toMatchObject({ type: 'model', display_name: 'kiwi-demo (demo)', demo: true });
  });
});
