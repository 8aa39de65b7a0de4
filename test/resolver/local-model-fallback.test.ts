import { describe, expect, it } from 'vitest';
import type { LocalChatAnswer, LocalChatModel, LocalChatRequest } from '../../src/llm/gguf-chat-model.js';
import { createLocalModelFallback } from '../../src/resolver/local-model-fallback.js';
import { makeTool } from '../helpers/make-tool.js';

/**
 * What the in-process fallback asks its model for and how it reads the answer, with the model's
 * answers scripted (the model itself runs in local-model-fallback.int.test.ts).
 */

const LIGHT = makeTool({
  id: 'home.set_light',
  type: 'api',
  description: 'Switch a light on or off',
  parameters: [
    { name: 'room', type: 'string', required: true },
    { name: 'on', type: 'boolean', required: true },
    { name: 'level', type: 'integer', required: false, enum: [1, 2, 3] },
    { name: 'tags', type: 'array', required: false, items: { type: 'string' } },
  ],
});
const DOOR = makeTool({ id: 'home.lock_door', type: 'api', description: 'Lock a door', parameters: [] });
const SAFE = makeTool({ id: 'home.open_safe', type: 'api', description: 'Open the safe', parameters: [] });

function scripted(...answers: Partial<LocalChatAnswer>[]): LocalChatModel & { asked: LocalChatRequest[] } {
  const asked: LocalChatRequest[] = [];
  return {
    name: 'scripted.gguf',
    file: '/models/scripted.gguf',
    asked,
    async generate(request) {
      asked.push(request);
      return { text: '', stop: 'done', inputTokens: 10, outputTokens: 5, ...answers[asked.length - 1] };
    },
    async close() {},
  };
}

describe('the in-process fallback reads its grammar-held answer', () => {
  it('asks for one of the shown candidates, each with its own parameters (optional ones nullable, strings and lists bounded), or a decline', async () => {
    const model = scripted({ text: '{"function": null, "why": "none fits"}' });
    await createLocalModelFallback({ model, candidates: 2 }).ask({ intent: 'turn on the hall light', tools: [LIGHT, DOOR, SAFE] });
    const request = model.asked[0] as LocalChatRequest;
    expect(request.maxTokens).toBe(512);
    expect(request.user).toContain('Request: turn on the hall light');
    expect(request.user).not.toContain('home.open_safe');
    expect(request.schema).toEqual({
      oneOf: [
        {
          type: 'object',
          properties: {
            function: { const: 'home_set_light' },
            arguments: {
              type: 'object',
              properties: {
                room: { type: 'string', maxLength: 256 },
                on: { type: 'boolean' },
                level: { oneOf: [{ enum: [1, 2, 3] }, { type: 'null' }] },
                tags: { oneOf: [{ type: 'array', items: { type: 'string', maxLength: 256 }, maxItems: 16 }, { type: 'null' }] },
              },
            },
          },
        },
        { type: 'object', properties: { function: { const: 'home_lock_door' }, arguments: { type: 'object', properties: {} } } },
        { type: 'object', properties: { function: { const: null }, why: { type: 'string', maxLength: 200 } } },
      ],
    });
  });

  it('leaves out an optional argument written null, and keeps a required one for validation to refuse', async () => {
    const model = scripted({ text: '{"function": "home_set_light", "arguments": {"room": null, "on": true, "level": null, "tags": null}}\n' });
    const answer = await createLocalModelFallback({ model }).ask({ intent: 'light', tools: [LIGHT] });
    expect(answer).toEqual({ kind: 'call', tool: LIGHT, arguments: { room: null, on: true }, cost: { ms: expect.any(Number), inputTokens: 10, outputTokens: 5 } });
  });

  it('reads a decline with its reason, and fails a cut-off answer or a function it was not shown', async () => {
    const model = scripted(
      { text: '{"function": null, "why": "no tool locks windows"}' },
      { text: '{"function": "home_set_li', stop: 'max-tokens', outputTokens: 512 },
      { text: '{"function": "home_open_safe", "arguments": {}}' },
    );
    const fallback = createLocalModelFallback({ model });
    expect(await fallback.ask({ intent: 'lock the window', tools: [LIGHT] })).toMatchObject({ kind: 'declined', why: 'it called no function: "no tool locks windows"' });
    expect(await fallback.ask({ intent: 'light', tools: [LIGHT] })).toMatchObject({ kind: 'failed', why: 'its answer ran past the 512-token cap', cost: { outputTokens: 512 } });
    expect(await fallback.ask({ intent: 'light', tools: [LIGHT] })).toMatchObject({ kind: 'failed', why: 'it called "home_open_safe", which is not one of the 1 candidates it was shown' });
  });
});
