import OpenAI from 'openai';
import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import type { GatewayAppDeps } from '../../../../src/http/server/app.js';
import { MAX_CLIENT_TOOLS } from '../../../../src/llm/client-tools.js';
import { serveScriptPerTest } from '../../../fixtures/http-edges/scripted-gateway.js';
import { executeScript } from '../../../fixtures/http-edges/scripted-loop.js';

/**
 * Every Responses body the gateway refuses, sent by the real `openai` client: each is a 4xx
 * error the SDK raises, in the OpenAI shape, naming the field at fault and what to send
 * instead, and the loop never starts.
 */

const serve = serveScriptPerTest();

async function client(extra: Partial<GatewayAppDeps> = {}, headers: Record<string, string> = {}) {
  const { url, loop } = await serve(executeScript, extra);
  return { openai: new OpenAI({ apiKey: 'sk-test', baseURL: `${url}/v1`, maxRetries: 0, defaultHeaders: headers }), loop, url };
}

type ApiError = InstanceType<typeof OpenAI.APIError>;

async function refused(body: unknown, status = 400, extra: Partial<GatewayAppDeps> = {}): Promise<ApiError> {
  const { openai, loop } = await client(extra);
  const error = await openai.responses.create(body as ResponseCreateParamsNonStreaming).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  expect((error as ApiError).status).toBe(status);
  expect(loop.calls).toHaveLength(0);
  return error as ApiError;
}

describe('Responses bodies the gateway refuses', () => {
  it('a missing model', async () => {
    const error = await refused({ input: 'hi' });
    expect(error.param).toBe('model');
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toContain('model is required in a responses body');
  });

  it('input of the wrong type, and no input at all', async () => {
    const wrong = await refused({ model: 'm', input: 42 });
    expect(wrong.param).toBe('input');
    expect(wrong.message).toMatch(/input is invalid: must be a string or an array of input items/);
    const missing = await refused({ model: 'm' });
    expect(missing.message).toContain('input is required');
    const empty = await refused({ model: 'm', input: [] });
    expect(empty.message).toContain('give at least one input item');
  });

  it('a body over the size limit is a 413 that says what to do', async () => {
    const error = await refused({ model: 'm', input: 'x'.repeat(4096) }, 413, { limits: { maxBodyBytes: 1024 } });
    expect(error.code).toBe('payload_too_large');
    expect(error.message).toMatch(/larger than the gateway's limit of 1024 bytes/);
  });

  it('state the gateway does not keep: previous_response_id, conversation, item_reference, background', async () => {
    expect((await refused({ model: 'm', input: 'hi', previous_response_id: 'resp_1' })).message).toMatch(/previous_response_id is given, but the gateway keeps no responses.*send the whole conversation/);
    expect((await refused({ model: 'm', input: 'hi', conversation: 'conv_1' })).param).toBe('conversation');
    const ref = await refused({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] });
    expect(ref.param).toBe('input[0].type');
    expect(ref.message).toContain('send the item itself');
    expect((await refused({ model: 'm', input: 'hi', background: true })).message).toContain('stream instead');
  });

  it('items and parts it cannot read: a bad role, an unknown item, media, a call output without its call id', async () => {
    expect((await refused({ model: 'm', input: [{ role: 'robot', content: 'hi' }] })).param).toBe('input[0].role');
    const unknown = await refused({ model: 'm', input: [{ type: 'computer_call_output', call_id: 'c' }] });
    expect(unknown.message).toMatch(/"computer_call_output", which the gateway does not read; send messages, function_call and function_call_output items/);
    const media = await refused({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] });
    expect(media.param).toBe('input[0].content[0]');
    expect(media.message).toContain('forwards text only');
    const orphan = await refused({ model: 'm', input: [{ type: 'function_call_output', output: 'x' }] });
    expect(orphan.param).toBe('input[0].call_id');
  });

  it('a tool_choice that names no given tool, and a malformed function tool', async () => {
    const choice = await refused({ model: 'm', input: 'hi', tool_choice: { type: 'function', name: 'nope' } });
    expect(choice.param).toBe('tool_choice.name');
    const tool = await refused({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'has spaces' }] });
    expect(tool.param).toBe('tools[0].name');
  });

  it('more tools than the gateway forwards, refused by the limits every edge shares', async () => {
    const tools = Array.from({ length: MAX_CLIENT_TOOLS + 1 }, (_, i) => ({ type: 'function', name: `tool_${i}` }));
    const error = await refused({ model: 'm', input: 'hi', tools });
    expect(error.param).toBe('tools');
    expect(error.message).toContain(`has ${MAX_CLIENT_TOOLS + 1} tools; the gateway forwards at most ${MAX_CLIENT_TOOLS}`);
  });
});

describe('the request guard on /v1/responses', () => {
  it('refuses a browser origin that is not allowed, before the body is read', async () => {
    const { openai, loop } = await client({}, { origin: 'https://evil.example' });
    const error = await openai.responses.create({ model: 'm', input: 'hi' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((error as Error).message).toContain('may not call this gateway');
    expect(loop.calls).toHaveLength(0);
  });

  it('answers another method with a 405 that names POST', async () => {
    const { url } = await client();
    const res = await fetch(`${url}/v1/responses`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});
